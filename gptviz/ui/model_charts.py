"""How the model pages put a figure on screen: full width, token ticks thinned."""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from gptviz.viz.heatmaps import thin_ticks


def chart(fig: go.Figure, key: str | None = None, container=st) -> None:
    """``st.plotly_chart`` at full width, with at most 32 token labels per axis.

    Do not pass a figure shared through a cache: this changes the figure's ticks.
    """
    container.plotly_chart(thin_ticks(fig), width="stretch", key=key)
