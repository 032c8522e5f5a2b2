"""Drawing the same chart twice in one run: our components, and stock mode's plotly charts.

Without a key, Streamlit names an element after its arguments, so the same chart drawn
twice in one run would be refused as a duplicate (``st.markdown`` never was). Here the
second and later copies get keys of their own. It catches Streamlit's duplicate-element
errors, from ``streamlit.errors`` (without them, a duplicate is refused as before).
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Callable
from typing import Any

import plotly.graph_objects as go
import streamlit as st

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


def plotly_chart(fig: go.Figure, key: str | None = None, container=st) -> None:
    """``st.plotly_chart(fig, width="stretch")`` in ``container``, keyed anew when unkeyed
    and already on the page (``unique``)."""
    unique(lambda k: container.plotly_chart(fig, width="stretch", key=k), key,
           lambda: _sha(fig.to_json()))
