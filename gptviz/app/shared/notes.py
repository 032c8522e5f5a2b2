"""Sentences several pages say in the same words."""

from __future__ import annotations

import streamlit as st

INDEX_NOTE = (
    "Positions and token ids count from 0, as in the code: the first token of the prompt is "
    "at position 0. The seeds write a prompt as $t_1 \\dots t_N$, so their $t_k$ is our "
    "position $k-1$, and their last token $t_N$ is our position $N-1$.")


def index_note() -> None:
    """Say once, on a page that shows positions or ids, that they count from 0."""
    st.caption(INDEX_NOTE)
