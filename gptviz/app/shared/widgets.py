"""Small Streamlit pieces every page uses: capped text, messages, CSV downloads, charts and
the tabs that hold a page's views."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from gptviz.app.shared.heatmaps import thin_ticks

TEXT_LIMIT = 20_000  # characters a page analyses; longer input is cut, with a message
LINK_LIMIT = 1_000  # characters of a text box kept in the page's link (?prompt=…)
SHOWN_DIMS = 12  # columns of a (tokens x dimensions) table on screen; its CSV has them all


def cap_text(text: str, limit: int = TEXT_LIMIT) -> str:
    """Return at most ``limit`` characters, saying so when the text was cut."""
    if len(text) > limit:
        st.warning(
            f"The text has {len(text):,} characters; only the first {limit:,} are used here. "
            "Paste a shorter passage to see all of it.", icon=":material/content_cut:")
        return text[:limit]
    return text


def linked_text_area(label: str, key: str, default: str, **kwargs: Any) -> str:
    """A text box whose text is kept in the page's link (``?key=…``) while it is short.

    The link opens the page on that text, so a teacher can share it. Longer texts stay out
    of the link (a 200,000-character prompt would make a 600 KB URL, which proxies and
    chat apps cut): the box keeps them, and a caption says the link does not.
    """
    if key not in st.session_state:
        st.session_state[key] = st.query_params.get(key, default)
    text = st.text_area(label, key=key, persist_state="session", **kwargs) or ""
    if len(text) <= LINK_LIMIT:
        if st.query_params.get(key) != text:
            st.query_params[key] = text
    else:
        st.query_params.pop(key, None)
        st.caption(f"This text ({len(text):,} characters) is too long for the page's link, "
                   f"which keeps up to {LINK_LIMIT:,}: to share it, send the text itself.")
    return text


def problem(message: str) -> None:
    """A bad-input message: what is wrong and what to do (never a traceback)."""
    st.error(message, icon=":material/error:")


def csv_download(df: pd.DataFrame, filename: str, label: str = "Download CSV") -> None:
    st.download_button(label, df.to_csv(index=False).encode("utf-8"), file_name=filename,
                       mime="text/csv", icon=":material/download:", key=f"csv-{filename}")


def chart(fig: go.Figure, key: str | None = None, container=st) -> None:
    """``st.plotly_chart`` at full width, with at most 32 token labels per axis.

    Do not pass a figure shared through a cache: this changes the figure's ticks.
    """
    container.plotly_chart(thin_ticks(fig), width="stretch", key=key)


def view_tabs(views: Mapping[str, Callable[..., None]], inputs: Mapping[str, Any],
              lazy: bool = True) -> None:
    """One tab per view of a page; each view is called with the inputs its parameters name.

    Lazy tabs run only the open view (its label is ``?view=`` in the URL, so a link opens
    it); the others cost nothing. ``views`` is the page's ``VIEWS`` mapping, which the tests
    import too, e.g. ``{"All heads": overview, ...}`` with ``overview(picked, prompt, ...)``.
    """
    if lazy:
        tabs = st.tabs(list(views), key="view", bind="query-params", on_change="rerun")
    else:
        tabs = st.tabs(list(views))
    for tab, draw in zip(tabs, views.values(), strict=True):
        with tab:
            if not lazy or tab.open:
                draw(**{name: inputs[name] for name in inspect.signature(draw).parameters})
