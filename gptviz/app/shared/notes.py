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


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and its noun, singular or plural as ``n`` asks, with thousands grouped.

    >>> counted(1, "token"), counted(948, "token"), counted(2, "piece"), counted(3, "model")
    ('1 token', '948 tokens', '2 pieces', '3 models')
    >>> counted(1_024, "entry", "entries"), counted(0, "run")
    ('1,024 entries', '0 runs')
    """
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"
