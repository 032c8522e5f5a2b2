"""Drawing the same chart twice in one run: our components, and stock mode's plotly charts.

Without a key, Streamlit names an element after its arguments, so the same chart drawn
twice in one run would be refused as a duplicate (``st.markdown`` never was). Here the
second and later copies get keys of their own. It catches Streamlit's duplicate-element
errors, from ``streamlit.errors`` (without them, a duplicate is refused as before).
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

import plotly.graph_objects as go
import streamlit as st

from gptviz import i18n

try:
    from streamlit.errors import StreamlitDuplicateElementId, StreamlitDuplicateElementKey
except ImportError:  # another Streamlit: nothing is caught, a duplicate chart is an error
    StreamlitDuplicateElementId = StreamlitDuplicateElementKey = ()


def unique(place: Callable[[str | None], Any], key: str | None,
           digest: Callable[[], str]) -> None:
    """``place(key)``; an unkeyed element already on the page is placed again with the key
    ``gv-<digest()>-<n>``, the first ``n`` from 2 that is free."""
    if key is not None:
        place(key)
        return
    try:
        place(None)
    except StreamlitDuplicateElementId:
        name = digest()
        for n in itertools.count(2):
            try:
                place(f"gv-{name}-{n}")
                return
            except StreamlitDuplicateElementKey:
                continue


def _sha(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()[:12]


def mount(component: Callable[..., Any], data: dict, key: str | None = None,
          container=st) -> None:
    """``component(key=key, data=data)`` in ``container``, keyed anew when unkeyed and
    already on the page (``unique``)."""

    def place(k: str | None) -> None:
        if container is st:
            component(key=k, data=data)
        else:
            with container:
                component(key=k, data=data)

    unique(place, key, lambda: _sha(json.dumps(data, sort_keys=True)))


_SEPARATING = threading.RLock()  # one session at a time sets a figure's separators and sends it


def separators() -> str:
    """Plotly's ``layout.separators`` for the reader's language: decimal sign, then the
    thousands sign (",." in Spanish).

    >>> separators()
    '.,'
    """
    dec, group = i18n.separators()
    return dec + group


@contextlib.contextmanager
def numbers_by_language(fig: go.Figure) -> Iterator[go.Figure]:
    """``fig`` with the reader's ``separators`` while the block sends it. A figure may be
    shared through a cache by sessions in two languages: each sets its own under a lock, so
    none sends another's."""
    with _SEPARATING:
        if fig.layout.separators != (wanted := separators()):
            fig.layout.separators = wanted
        yield fig


def plotly_chart(fig: go.Figure, key: str | None = None, container=st, **kwargs: Any) -> None:
    """``st.plotly_chart(fig, width="stretch")`` in ``container`` with the reader's number
    ``separators``, keyed anew when unkeyed and already on the page (``unique``); ``kwargs``
    go to ``st.plotly_chart``."""

    def place(k: str | None) -> None:
        with numbers_by_language(fig):
            container.plotly_chart(fig, width="stretch", key=k, **kwargs)

    unique(place, key, lambda: _sha(fig.to_json()))
