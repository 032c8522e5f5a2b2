"""A button that counts its clicks in the browser, so fast clicks are never merged.

``st.button`` sends a one-shot trigger; when clicks arrive faster than the script
starts, Streamlit's fast reruns replace one pending run by the next and earlier
triggers are lost (6 quick clicks gave 2–5 tokens in our browser test). This
button keeps a running total in the page and sends it as its state: however many
reruns are merged, the last one carries the total, and the page acts on
``total - seen`` clicks.

It is a ``st.components.v2`` component: a native ``<button>`` (focusable, keyboard
friendly) styled like Streamlit's primary button; nothing is loaded from the network.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import streamlit as st

_HTML = ('<button type="button" class="gv-count"><svg viewBox="0 0 24 24" aria-hidden="true">'
         '<path d="M6 18l8.5-6L6 6v12zM16 6v12h2V6h-2z"/></svg>'  # Material "skip_next"
         '<span class="gv-label"></span></button>')
_CSS = """
.gv-count{font:inherit;font-size:1rem;line-height:1.6;display:inline-flex;align-items:center;
gap:.45rem;padding:.25rem .75rem;min-height:2.5rem;border-radius:.5rem;cursor:pointer;
border:1px solid var(--st-primary-color);background:var(--st-primary-color);color:#fff}
.gv-count svg{width:1.15rem;height:1.15rem;fill:currentColor}
.gv-count:hover{filter:brightness(.92)}
.gv-count:focus-visible{outline:2px solid var(--st-primary-color);outline-offset:2px}
.gv-count:disabled{opacity:.45;cursor:not-allowed;filter:none}
"""
# The total lives on the element, so a redraw keeps clicks Python has not seen yet;
# it never starts below ``seen`` (e.g. after a page switch re-created the element).
_JS = """
export default function(component) {
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
"""


@functools.cache
def _component() -> Callable[..., Any]:
    return st.components.v2.component("gptviz.click_counter", html=_HTML, css=_CSS, js=_JS)


def click_total(label: str, key: str, seen: int, disabled: bool = False, help: str = "") -> int:
    """Draw the button; return how many times it was clicked in this session.

    ``seen`` is the total the caller has already acted on, so the clicks since the last
    run are ``click_total(label, key, seen) - seen``. In AppTest, a click is
    ``at.session_state[key] = {"clicks": seen + 1}``.

    >>> click_total("Next token", "gen_next", seen=0)   # no running app: never clicked
    0
    """
    result = _component()(key=key, default={"clicks": 0}, on_clicks_change=lambda: None,
                          data={"label": label, "seen": int(seen), "disabled": disabled,
                                "help": help})
    try:
        return int(result["clicks"] or 0)
    except (KeyError, TypeError, ValueError):
        return 0
