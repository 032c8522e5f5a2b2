"""One choice among many labelled options, as the browser's own ``<select>``.

It replaces ``st.selectbox``, whose 14 JavaScript files a page fetched when its first box
showed, late: with ``download``, Attention loaded 0.11–0.17× of a bare page sooner
(benchmarks/LOG.md, stop 34). The box is a component (``choice.js``, ``choice.css``). Python holds
the choice: a pick is sent as ``{"index", "stamp", "n"}``, used once; a new ``made_on``
(prompt) brings back the default. ``select`` binds a box to ``st.session_state[key]``. In stock
mode (``choice`` off) both are ``st.selectbox`` with the same rules. In AppTest a pick is
``at.session_state[key] = {"pick": {...}}`` (``tests.helpers.choice_box``).
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable, Hashable, Sequence
from typing import Any, TypeVar

import streamlit as st

from gptviz.app.speedups import stock
from gptviz.app.speedups.component import component

T = TypeVar("T")
NAME = "gptviz.choice"
KEY_MS = 400  # quiet after the last arrow key or typed character before a pick is sent
HTML = ('<label class="gv-choice"><span class="gv-choice-label"></span>'
        '<span class="gv-choice-box"><select></select><svg viewBox="0 0 24 24" '
        'aria-hidden="true"><path d="M7.4 8.6 12 13.2l4.6-4.6L18 10l-6 6-6-6z"/></svg>'
        '</span></label>')  # the chevron: Material "expand_more"


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
            "disabled": disabled, "keyMs": KEY_MS}
    element = component(NAME, html=HTML, js="choice.js", css="choice.css")
    with contextlib.nullcontext() if container is st else container:
        element(key=box, data=data, default={"pick": None}, on_pick_change=lambda: None)


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
    if stock.off("choice"):
        return _stock_choose(label, list(options), default, key, here, container)
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
    if stock.off("choice"):
        if state.get(key) not in options:
            state[key] = options[0]
        return container.selectbox(label, list(options), key=key, format_func=format_func,
                                   disabled=disabled, persist_state="session")
    index = _fresh_pick(box, here, len(options))
    if index is not None and not disabled:
        state[key] = options[index]
    if state.get(key) not in options:
        state[key] = options[0]
    _draw(box, label, [format_func(o) for o in options], list(options).index(state[key]),
          here, container, disabled)
    return state[key]


def _stock_choose(label: str, options: list[str], default: int, key: str, here: str,
                  container) -> int:
    """``choose`` as ``st.selectbox`` (of indices) keyed ``key``: the box's own value while
    the options stand for the same thing, else the choice kept from an earlier run on it,
    else ``default``, set before the box is drawn."""
    state, kept_key, n = st.session_state, f"{key}@kept", len(options)
    kept, shown = state.get(kept_key), state.get(key)
    same = isinstance(kept, tuple) and kept[0] == here
    if not (same and isinstance(shown, int) and 0 <= shown < n):
        state[key] = chosen(None, kept, here, n, default)
    index = container.selectbox(label, list(range(n)), format_func=options.__getitem__,
                                key=key)
    state[kept_key] = (here, index)
    return index
