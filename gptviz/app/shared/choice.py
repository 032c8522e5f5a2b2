"""One choice among many labelled options, as the browser's own ``<select>``.

The pages ask for a token position in many places ("Query token", "Token to follow", …).
``st.selectbox`` drew them first; on a page load its code is 14 JavaScript files, fetched
and run when the first box shows, and its box is a deep tree of React components that
Streamlit draws again whenever the page updates. On the Attention page with a 128-token
prompt the box arrives after the head grid, so its files were fetched after everything else
had arrived: without the box the page settled 0.05–0.08 s sooner (A/B runs of 8–12 loads,
BENCHMARKS.md, stop 34).
This box is a ``st.components.v2`` component (the machinery the page's heatmaps already
load): a native ``<select>`` with its label, keyboard friendly (arrows, type-ahead by
"12: …"), styled from the theme's variables; nothing is loaded from the network.

Python holds the choice. The box shows the index it is given and, when the reader picks
another, sends ``{"index": i, "stamp": s, "n": …}``: ``s`` names what the options stood for
(the prompt), ``n`` makes each pick a new one. Python uses a pick once, in the run it
starts, and from then on keeps the choice itself, as ``inputs.fresh_choice`` does for a
select box: a new prompt brings back the default; so does a choice no longer among the
options, which then stays at the default when they grow again; a choice outlives a run that
did not draw its box (another view was open) while the prompt stays the same.
``select`` is the same box bound to a value in ``st.session_state`` (the Training page's
corpus, which its presets set): a pick sets the value, and the box shows whatever the value
is. It replaced that page's last select box: without its code the page settled ~0.15x of
a bare page sooner (BENCHMARKS.md, stop 35).
In AppTest a pick is ``at.session_state[key] = {"pick": {"index": i, "stamp": s, "n": k}}``
(``tests.helpers.choice_box`` does it).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
from collections.abc import Callable, Hashable, Sequence
from typing import Any, TypeVar

import streamlit as st

T = TypeVar("T")
NAME = "gptviz.choice"
KEY_MS = 400  # quiet after the last arrow key or typed character before a pick is sent
_HTML = ('<label class="gv-choice"><span class="gv-choice-label"></span>'
         '<span class="gv-choice-box"><select></select><svg viewBox="0 0 24 24" '
         'aria-hidden="true"><path d="M7.4 8.6 12 13.2l4.6-4.6L18 10l-6 6-6-6z"/></svg>'
         '</span></label>')  # the chevron: Material "expand_more"
_CSS = """
.gv-choice{display:flex;flex-direction:column;font-family:var(--st-font);
color:var(--st-text-color)}
.gv-choice-label{font-size:.875rem;line-height:1.6;min-height:1.5rem;margin-bottom:.25rem;
display:flex;align-items:center}
.gv-choice-box{position:relative;display:block}
.gv-choice select{appearance:none;-webkit-appearance:none;width:100%;height:2.5rem;
font:inherit;font-size:1rem;line-height:1.6;color:inherit;cursor:pointer;
padding:0 2.25rem 0 .75rem;border-radius:var(--st-base-radius,.5rem);
border:1px solid var(--st-secondary-background-color);
background:var(--st-secondary-background-color);text-overflow:ellipsis}
.gv-choice select:disabled{cursor:not-allowed;opacity:.45}
.gv-choice:has(select:disabled) svg,.gv-choice:has(select:disabled) .gv-choice-label{opacity:.4}
.gv-choice select:enabled:hover{border-color:var(--st-primary-color)}
.gv-choice select:focus-visible{outline:none;border-color:var(--st-primary-color)}
.gv-choice svg{position:absolute;right:.6rem;top:50%;width:1.25rem;height:1.25rem;
transform:translateY(-50%);fill:currentColor;pointer-events:none;opacity:.7}
"""
# The options are rebuilt only when they change; the shown option is Python's, except while a
# pick made with the keyboard waits to be sent (a closed select fires "change" at every arrow
# key and typed character: each would rerun the page, and a rerun's answer arriving meanwhile
# would move the box back). A pointer's pick is sent at once, a keyboard's after KEY_MS of
# quiet, on Enter or when the box loses focus. Each pick carries its own number, so that
# Python uses it once (``choose``).
_JS = """
export default function(component) {
  const { parentElement, setStateValue, data } = component;
  const select = parentElement.querySelector("select");
  parentElement.querySelector(".gv-choice-label").textContent = data.label;
  const options = data.options.join("\\u0000");
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
    select.gvTimer = setTimeout(send, KEY_MS);
  };
}
""".replace("KEY_MS", str(KEY_MS))


@functools.cache
def _component() -> Callable[..., Any]:
    return st.components.v2.component(NAME, html=_HTML, css=_CSS, js=_JS,
                                      isolate_styles=False)


def stamp(made_on: Hashable) -> str:
    """A short name for what a choice is made among (``made_on``: a prompt's ids).

    >>> stamp((1, 2)) == stamp((1, 2)) != stamp((1, 2, 3))
    True
    """
    return hashlib.sha1(repr(made_on).encode()).hexdigest()[:16]


def chosen(pick: Any, kept: Any, here: str, n: int, default: int) -> int:
    """The index to show: the reader's ``pick`` if it was made on what the options stand
    for now (stamp ``here``) and is one of the ``n``, else the choice ``kept`` from an
    earlier run on them (if one of the ``n``), else ``default``.

    >>> chosen({"index": 2, "stamp": "a"}, None, "a", 5, 4)
    2
    >>> chosen({"index": 2, "stamp": "b"}, None, "a", 5, 4)  # picked on another prompt
    4
    >>> chosen(None, ("a", 1), "a", 5, 4), chosen({"index": 9, "stamp": "a"}, None, "a", 5, 4)
    (1, 4)
    """
    for stamped in (pick, kept):
        if isinstance(stamped, dict):
            stamped = (stamped.get("stamp"), stamped.get("index"))
        if isinstance(stamped, tuple | list) and len(stamped) == 2 and stamped[0] == here \
                and isinstance(stamped[1], int) and 0 <= stamped[1] < n:
            return stamped[1]
    return default


def _fresh_pick(box: str, here: str, n: int) -> int | None:
    """The index the reader has just picked in the box ``box``, if the pick was made on what
    the options stand for now (stamp ``here``) and is one of the ``n``; None when there is
    no pick, or it was used in an earlier run (each is used once)."""
    state = st.session_state
    drawn = state.get(box)  # the box's state from the browser, if it has been drawn
    pick = drawn.get("pick") if hasattr(drawn, "get") else None
    if pick is None or pick == state.get(f"{box}@used"):
        return None
    state[f"{box}@used"] = pick
    return chosen(pick, None, here, n, None)


def _draw(box: str, label: str, shown: list[str], index: int, here: str, container,
          disabled: bool = False) -> None:
    data = {"label": label, "options": shown, "index": index, "stamp": here,
            "disabled": disabled}
    with contextlib.nullcontext() if container is st else container:
        _component()(key=box, data=data, default={"pick": None}, on_pick_change=lambda: None)


def choose(label: str, options: Sequence[str], default: int, key: str, made_on: Hashable,
           container=st) -> int:
    """Draw the box ``key`` in ``container``; return the index of the option chosen.

    ``made_on`` names what the options stand for (a prompt's ids): a new one brings back
    ``default``; so does a choice no longer among the options (fewer of them). In a script
    run without a browser the box is never touched:

    >>> choose("Token", ["0: a", "1: b"], 1, "doctest-choice", made_on=(5, 6))
    1
    """
    here, kept_key = stamp(made_on), f"{key}@kept"
    index = _fresh_pick(key, here, len(options))
    if index is None:
        index = chosen(None, st.session_state.get(kept_key), here, len(options), default)
    st.session_state[kept_key] = (here, index)
    _draw(key, label, list(options), index, here, container)
    return index


def select(label: str, options: Sequence[T], key: str, format_func: Callable[[T], str] = str,
           disabled: bool = False, container=st) -> T:
    """A box whose value is ``st.session_state[key]``, one of ``options`` (the first when it
    is none of them): a reader's pick sets it, and so may any code, e.g. a preset's
    callback. The box itself is the component ``key + "@box"``. The value is kept while
    other pages are open. A disabled box shows the value and takes no pick.

    >>> select("Corpus", ["a", "b"], "doctest-select", format_func=str.upper)
    'a'
    """
    state, box, here = st.session_state, f"{key}@box", stamp(tuple(options))
    index = _fresh_pick(box, here, len(options))
    if index is not None and not disabled:
        state[key] = options[index]
    if state.get(key) not in options:
        state[key] = options[0]
    _draw(box, label, [format_func(o) for o in options], list(options).index(state[key]),
          here, container, disabled)
    return state[key]
