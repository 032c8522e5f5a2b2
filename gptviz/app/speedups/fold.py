"""The part of a view below the fold, drawn once the reader scrolls to it.

Streamlit lays out everything a script sends before the page settles, seen or not. On
Learning, the microscope's sections 2–4, a screen below the top, cost a fresh load
0.24–0.29× of a bare page (benchmarks/LOG.md, stop 35). ``below(name, what, draw)`` puts a
marker there instead (``fold.js``, ``fold.css``: one line saying what comes, and a button);
when it comes into view it reruns this part alone (a fragment) and ``draw()`` draws it, and
from then on, for the session, that fold's views are drawn whole. In stock mode (``fold``
off) everything is drawn at once. AppTest does not scroll: ``tests.helpers.app_test`` marks
every fold (``FOLDS``) as reached.
"""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from gptviz.app.speedups import stock
from gptviz.app.speedups.component import component
from gptviz.i18n import _

NAME = "gptviz.fold"
# How near (px below the visible area) the marker comes before the rest is drawn. On the
# Learning page at a 1,000 px tall window the marker is 150 px below: a larger margin would
# draw the rest at every load there.
MARGIN_PX = 0
QUIET_MS = 200  # the page unchanged this long with the marker in view: draw the rest
WAIT_MS = 1000  # ... or the marker in view this long, however the page changes
FOLDS = ("attention", "embeddings", "learning", "positional", "training")  # every fold's name
HTML = ('<div class="gv-fold"><p class="gv-fold-what"></p>'
        '<button type="button" class="gv-fold-now">Draw it now</button></div>')


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
    if stock.off("fold"):
        draw()
        return
    _below(name, what, draw)


@st.fragment
def _below(name: str, what: str, draw: Callable[[], None]) -> None:
    if reached(name):
        draw()
        return
    element = component(NAME, html=HTML, js="fold.js", css="fold.css")
    element(key=f"gv-fold-{name}", data={"what": what, "now": _("Draw it now"),
                                         "margin": MARGIN_PX,
                                         "quietMs": QUIET_MS, "waitMs": WAIT_MS},
            default={"reached": False}, on_reached_change=lambda: None)
