// click_button.py's button. The total lives on the element, so a redraw keeps clicks
// Python has not seen yet; it never starts below data.seen (e.g. after a page switch
// re-created the element).
export default function (component) {
  const { parentElement, setStateValue, data } = component;
  const button = parentElement.querySelector("button");
  button.querySelector(".gv-label").textContent = data.label;
  button.title = data.help || "";
  button.disabled = !!data.disabled;
  if (button.gvClicks === undefined || button.gvClicks < data.seen) button.gvClicks = data.seen;
  button.onclick = () => {
    button.gvClicks += 1;
    setStateValue("clicks", button.gvClicks);
  };
}
