// The keyboard of presenter mode, installed once per browser tab (see presenter.py).
//   ← / →  the lesson's Previous / Next, or the page's previous / next view (tab)
//   N      Generation's "Next token"      R  the lesson's "Reveal the answer"
//   ?      the list of shortcuts on screen (Esc closes it)
// No key fires while the reader types in a box, picks in a list or moves a slider. An
// arrow pressed on a radio button moves the lesson, never the chosen answer.
function typing(t) {
  if (!t) return false;
  if (t.isContentEditable || t.tagName === "TEXTAREA" || t.tagName === "SELECT") return true;
  const role = t.getAttribute && t.getAttribute("role");
  if (role === "slider" || role === "combobox" || role === "spinbutton") return true;
  return t.tagName === "INPUT" && !["radio", "checkbox", "button"].includes(t.type);
}

function button(key) {
  const host = document.querySelector(`.st-key-${key}`);
  if (!host) return null;
  const direct = host.querySelector("button");
  if (direct) return direct;
  for (const el of host.querySelectorAll("*")) {
    const inner = el.shadowRoot && el.shadowRoot.querySelector("button");
    if (inner) return inner;
  }
  return null;
}

function press(b) {
  if (b && !b.disabled) b.click();
  return !!b;
}

function nextTab(delta) {
  const list = document.querySelector('[data-testid="stMain"] [data-testid="stTabs"] [role="tablist"]');
  if (!list) return false;
  const tabs = [...list.querySelectorAll('[role="tab"]')];
  const at = tabs.findIndex((t) => t.getAttribute("aria-selected") === "true");
  const to = tabs[at + delta];
  if (to) to.click();
  return true;
}

function overlay(show) {
  let box = document.getElementById("gv-keys-help");
  if (!show) {
    if (box) box.remove();
    return;
  }
  if (box) return;
  box = document.createElement("div");
  box.id = "gv-keys-help";
  box.setAttribute("role", "dialog");
  const s = window.gvKeys.texts;
  box.innerHTML = `<div class="gv-keys-card"><b></b><table></table><small></small></div>`;
  box.querySelector("b").textContent = s.title;
  box.querySelector("small").textContent = s.close;
  const table = box.querySelector("table");
  for (const [k, what] of s.rows) {
    const row = table.insertRow();
    const kbd = document.createElement("kbd");
    kbd.textContent = k;
    row.insertCell().appendChild(kbd);
    row.insertCell().textContent = what;
  }
  box.addEventListener("click", () => overlay(false));
  document.body.appendChild(box);
}

function onKey(event) {
  if (event.ctrlKey || event.metaKey || event.altKey) return;
  const t = event.composedPath()[0] || event.target;
  if (typing(t)) return;
  const k = window.gvKeys;
  const lesson = button(k.next) || button(k.prev);
  let done = false;
  if (event.key === "ArrowRight" || event.key === "ArrowLeft") {
    const d = event.key === "ArrowRight" ? 1 : -1;
    if (lesson) done = press(button(d > 0 ? k.next : k.prev)) || true;
    else if (k.presenter) done = nextTab(d);
    else if (t && t.type === "radio") done = false;
  } else if (event.key === "r" || event.key === "R") {
    done = press(button(k.reveal));
  } else if ((event.key === "n" || event.key === "N") && k.presenter) {
    done = press(button(k.step));
  } else if (event.key === "?") {
    overlay(!document.getElementById("gv-keys-help"));
    done = true;
  } else if (event.key === "Escape") {
    overlay(false);
  }
  if (done) {
    event.preventDefault();
    event.stopImmediatePropagation();
  }
}


export default function (component) {
  window.gvKeys = component.data;
  if (window.gvKeysInstalled) return;
  window.gvKeysInstalled = true;
  window.addEventListener("keydown", onKey, true);
}
