"""Mounting our ``st.components.v2`` elements (``heatcanvas``, ``svgbox``).

Without a key, Streamlit names an element after its arguments, so the same chart drawn
twice in one run would be refused as a duplicate (``st.markdown`` never was). Here the
second and later copies get keys of their own.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Callable
from typing import Any

import streamlit as st
from streamlit.errors import StreamlitDuplicateElementId, StreamlitDuplicateElementKey


def mount(component: Callable[..., Any], data: dict, key: str | None = None,
          container=st) -> None:
    """``component(key=key, data=data)`` in ``container``; an unkeyed element whose data
    is already on the page gets the key ``gv-<digest of data>-<n>``."""

    def place(k: str | None) -> None:
        if container is st:
            component(key=k, data=data)
        else:
            with container:
                component(key=k, data=data)

    if key is not None:
        place(key)
        return
    try:
        place(None)
    except StreamlitDuplicateElementId:
        digest = hashlib.sha1(json.dumps(data, sort_keys=True).encode()).hexdigest()[:12]
        for n in itertools.count(2):
            try:
                place(f"gv-{digest}-{n}")
                return
            except StreamlitDuplicateElementKey:
                continue
