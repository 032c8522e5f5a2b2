"""Figures built once per (model, view, inputs) and shared: a plotly figure is only read by
``st.plotly_chart``, never changed. Those of the bundled models serve every session; a
session's own models' are kept in a store of that session, released when it disconnects.
Both stores are bounded by the bytes of the figures' traces.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st

from gptviz import i18n
from gptviz.app.serving.lru import ByteLRU
from gptviz.app.serving.sessions import when_idle
from gptviz.app.shared.cache import in_session
from gptviz.app.shared.picker import Picked

FIGURE_BYTES = 48 * 2**20  # figures kept for every session, by the bytes of their traces
SESSION_FIGURE_BYTES = 12 * 2**20  # figures of one session's own models


@st.cache_resource(show_spinner=False)
def _figures() -> ByteLRU:
    """Shared figures, bounded in bytes, not in number: a figure of GPT-2 small's 144 heads
    at 128 tokens holds tens of MB, a small model's a few kB); emptied when the class has
    left (``serving.sessions``)."""
    return ByteLRU(FIGURE_BYTES)


when_idle(_figures.clear)  # dropped, and made anew when next asked for


@st.cache_resource(show_spinner=False, scope="session")
def _session_figure_store() -> ByteLRU:
    return ByteLRU(SESSION_FIGURE_BYTES)


_UNATTACHED_FIGURES = ByteLRU(SESSION_FIGURE_BYTES)


def _session_figures() -> ByteLRU:
    """This session's figures of its own models: released when it disconnects."""
    return _session_figure_store() if in_session() else _UNATTACHED_FIGURES


def cached_figure(picked: Picked, name: str, args: tuple, build: Callable[[], Any]) -> Any:
    """``build()`` once per (model, name, args, the reader's language): for figures that
    cost more to build than to send (a plotly figure is only read by ``st.plotly_chart``,
    never changed, so one object can be shared). ``args`` must hold everything else the
    figure depends on; its titles and numbers are written in the language it is built in.

    >>> from gptviz.checkpoints.folder import Checkpoint
    >>> picked, build = Picked("tiny", Checkpoint(model, tokenizer), bundled=True), dict
    >>> cached_figure(picked, "grid", (1, 0), build) is cached_figure(picked, "grid", (1, 0), build)
    True
    """
    store = _figures() if picked.bundled else _session_figures()
    return store.get_or_compute((name, picked.cache_key, i18n.current(), args), build)
