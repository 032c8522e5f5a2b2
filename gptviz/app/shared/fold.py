"""The part of a view below the fold, drawn once the reader scrolls to it.

A page's script sends everything it draws at once, and Streamlit's browser client lays it
all out before the page settles, seen or not. Parts of the first views lie a screen or more
below the top: the Learning microscope's sections 2–4 (three charts, four formulas, a
slider, five metrics), Attention's chosen head drawn large with its row worked out,
Positional encoding's curves (with their multiselect) and its i − j identity, the
Embeddings' E[ids] as numbers, and Training's zip of a model with its text before and
after training. On Learning they cost a fresh load 0.15–0.25× of a bare page (A/B runs,
BENCHMARKS.md, stop 35).

``below(name, what, draw)`` is where such a part starts. Until that point comes into view
(scrolling, a tall window, or the marker's button), a marker stands in its place: one line
saying what comes, and the button. When the reader gets there, the marker asks for a rerun
of this part alone (a fragment) and ``draw()`` draws it. From then on, for the whole
session, every run of a view with that fold draws everything at once (Positional
encoding's two table views share one).

The marker is a ``st.components.v2`` component (the machinery the page's charts already
load): an ``IntersectionObserver`` on Streamlit's scrolling main area. In a script run
without a browser (AppTest) nothing scrolls: ``tests.helpers.app_test`` marks every fold as
reached (``FOLDS``, ``reached_key``), and the fold's own tests leave them closed.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import streamlit as st

NAME = "gptviz.fold"
# How near (px below the visible area) the marker comes before the rest is drawn. On the
# Learning page at a 1,000 px tall window the marker is 150 px below: a larger margin would
# draw the rest at every load there.
MARGIN_PX = 0
QUIET_MS = 200  # the page unchanged this long with the marker in view: draw the rest
WAIT_MS = 1000  # ... or the marker in view this long, however the page changes
FOLDS = ("attention", "embeddings", "learning", "positional", "training")  # every fold's name
_HTML = ('<div class="gv-fold"><p class="gv-fold-what"></p>'
         '<button type="button" class="gv-fold-now">Draw it now</button></div>')
_CSS = """
.gv-fold{min-height:60vh;padding-top:.25rem;font-family:var(--st-font);
color:var(--st-text-color)}
.gv-fold-what{margin:0 0 .5rem;font-size:.875rem;opacity:.6}
.gv-fold-now{font:inherit;font-size:.875rem;color:inherit;cursor:pointer;padding:.25rem .75rem;
border-radius:var(--st-base-radius,.5rem);border:1px solid var(--st-border-color,#d5dae5);
background:transparent}
.gv-fold-now:hover{border-color:var(--st-primary-color);color:var(--st-primary-color)}
.gv-fold.gv-fold-busy .gv-fold-now{visibility:hidden}
"""
# Streamlit's main area scrolls (``stMain``), not the document: it is the observer's root,
# so that the margin reaches below what is visible. While a page loads, the elements above
# the marker are drawn in steps (their code arrives late) and the marker can stand in view
# for a moment: it asks only once it is still in view after the page has not changed for
# QUIET_MS, or after WAIT_MS in view whatever changes (a Training run redraws its panel
# twice a second). One request per marker.
_JS = """
export default function(component) {
  const { parentElement, setStateValue, data } = component;
  const box = parentElement.querySelector(".gv-fold");
  box.querySelector(".gv-fold-what").textContent = data.what;
  if (box.gvStop) box.gvStop();
  if (box.gvSent) return;  // drawn again while its rerun is on the way
  const root = box.closest('[data-testid="stMain"]');
  let timer = null, since = null;
  const inView = () => {
    const r = box.getBoundingClientRect();
    const bottom = (root ? root.getBoundingClientRect().bottom : window.innerHeight);
    return r.top < bottom + data.margin && r.bottom > 0;
  };
  const send = () => {
    if (box.gvSent) return;
    box.gvSent = true;
    box.gvStop();
    box.classList.add("gv-fold-busy");
    setStateValue("reached", true);
  };
  const later = () => {  // in view: ask once the page has been still for QUIET_MS
    clearTimeout(timer);
    since = since || performance.now();
    const wait = Math.max(0, Math.min(QUIET_MS, since + WAIT_MS - performance.now()));
    timer = setTimeout(() => { timer = null; if (inView()) send(); }, wait);
  };
  const away = () => { clearTimeout(timer); timer = null; since = null; };
  const seen = new IntersectionObserver(
    entries => entries.some(e => e.isIntersecting) ? later() : away(),
    {root, rootMargin: `0px 0px ${data.margin}px 0px`});
  const changes = new MutationObserver(() => { if (timer !== null) later(); });
  seen.observe(box);
  changes.observe(root || document.body, {childList: true, subtree: true});
  box.gvStop = () => { seen.disconnect(); changes.disconnect(); clearTimeout(timer); };
  box.querySelector(".gv-fold-now").onclick = send;
  return () => box.gvStop();
}
""".replace("QUIET_MS", str(QUIET_MS)).replace("WAIT_MS", str(WAIT_MS))


@functools.cache
def _component() -> Callable[..., Any]:
    return st.components.v2.component(NAME, html=_HTML, css=_CSS, js=_JS,
                                      isolate_styles=False)


def reached_key(name: str) -> str:
    """The session-state key that says the reader has reached fold ``name``."""
    return f"gv-fold-{name}@reached"


def reached(name: str) -> bool:
    """Whether the reader has reached fold ``name`` in this session (the marker's state
    from the browser says so the first time, the session from then on)."""
    state, box = st.session_state, f"gv-fold-{name}"
    drawn = state.get(box)  # the marker's state from the browser, if it has been drawn
    if state.get(reached_key(name)) or (hasattr(drawn, "get") and drawn.get("reached")):
        state[reached_key(name)] = True
    return bool(state.get(reached_key(name)))


def below(name: str, what: str, draw: Callable[[], None]) -> None:
    """Here the part of a view below fold ``name`` starts: ``draw()`` draws it once the
    reader has reached this point; until then a marker saying ``what`` follows stands here.

    It runs as a fragment: reaching the marker reruns this part alone, so what the page
    above it drew stays as it was (a message about the link, say, shown once).

    >>> below("doctest", "the rest", lambda: print("drawn"))  # no reader has reached it
    """
    _below(name, what, draw)


@st.fragment
def _below(name: str, what: str, draw: Callable[[], None]) -> None:
    if reached(name):
        draw()
        return
    _component()(key=f"gv-fold-{name}", data={"what": what, "margin": MARGIN_PX},
                 default={"reached": False}, on_reached_change=lambda: None)
