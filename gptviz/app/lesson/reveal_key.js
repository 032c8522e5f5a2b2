// presenter.py's listener: R (or r) presses the Reveal button (data.button, a CSS
// selector), unless the student is typing in a box. Installed once per browser tab; it
// does nothing on pages without the button.
export default function (component) {
  if (window.gvRevealKey) return;
  window.gvRevealKey = true;
  const selector = component.data.button;
  window.addEventListener("keydown", (event) => {
    if (event.key !== "r" && event.key !== "R") return;
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const t = event.composedPath()[0] || {};
    const typing = t.isContentEditable || t.tagName === "TEXTAREA" || (t.tagName === "INPUT"
        && !["radio", "checkbox", "button", "range"].includes(t.type));
    if (typing) return;
    const button = document.querySelector(selector);
    if (!button) return;
    event.preventDefault();
    event.stopImmediatePropagation();
    if (!button.disabled) button.click();
  }, true);
}
