"""Positional encoding: where each token stands, added to its embedding."""

import streamlit as st

from gptviz.app.positional import view as sections
from gptviz.app.shared.picker import picked_or_stop
from gptviz.app.shared.widgets import view_tabs

st.title("Positional encoding")
st.markdown(
    "Attention by itself treats its input as a set: shuffle the tokens and each one sees the "
    "same keys. So a GPT adds to each token's embedding a vector $p_i$ that depends only on "
    "its position $i$: $x_i = E[t_i] + p_i$. The seeds use the sinusoidal table below; many "
    "models (GPT-2 among them) learn $P$ instead.")

picked = picked_or_stop()

view_tabs(sections.VIEWS, dict(picked=picked))
