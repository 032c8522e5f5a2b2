// choice.py's box. The options are rebuilt only when they change; the shown option is
// Python's, except while a pick made with the keyboard waits to be sent (a closed select
// fires "change" at every arrow key and typed character: each would rerun the page, and a
// rerun's answer arriving meanwhile would move the box back). A pointer's pick is sent at
// once, a keyboard's after data.keyMs of quiet, on Enter or when the box loses focus. Each
// pick carries its own number, so that Python uses it once.
export default function (component) {
  const { parentElement, setStateValue, data } = component;
  const select = parentElement.querySelector("select");
  parentElement.querySelector(".gv-choice-label").textContent = data.label;
  const options = data.options.join("\u0000");
  if (select.gvOptions !== options) {
    select.gvOptions = options;
    select.replaceChildren(...data.options.map((text, i) => new Option(text, String(i))));
  }
  select.disabled = !!data.disabled;
  if (!select.gvTimer) select.value = String(data.index);
  const send = () => {
    clearTimeout(select.gvTimer);
    select.gvTimer = null;
    if (select.value === String(data.index)) return;  // back where it was: nothing to send
    setStateValue("pick", {index: Number(select.value), stamp: data.stamp,
                           n: (select.gvPicks = (select.gvPicks || 0) + 1) + ":" + Date.now()});
  };
  select.onkeydown = e => { select.gvKeys = true; if (e.key === "Enter") send(); };
  select.onpointerdown = () => { select.gvKeys = false; };
  select.onblur = () => { if (select.gvTimer) send(); };
  select.onchange = () => {
    if (!select.gvKeys) return send();
    clearTimeout(select.gvTimer);
    select.gvTimer = setTimeout(send, data.keyMs);
  };
}
