"""Positional encoding: where each token stands, added to its embedding."""

import streamlit as st

from gptviz.app.positional import view as sections
from gptviz.app.shared.inputs import encode, position_input, prompt_input
from gptviz.app.shared.picker import picked_or_stop

st.title("Positional encoding")
st.markdown(
    "Attention by itself treats its input as a set: shuffle the tokens and each one sees the "
    "same keys. So a GPT adds to each token's embedding a vector $p_i$ that depends only on "
    "its position $i$: $x_i = E[t_i] + p_i$. The seeds use the sinusoidal table below; many "
    "models (GPT-2 among them) learn $P$ instead.")

picked = picked_or_stop()

tabs = st.tabs(["Sinusoidal formula", "This model's positions", "X + PE for the prompt"],
               key="view", bind="query-params", on_change="rerun")
with tabs[0]:
    if tabs[0].open:
        sections.sinusoidal(picked)
with tabs[1]:
    if tabs[1].open:
        sections.learned(picked)
with tabs[2]:
    if tabs[2].open:
        prompt = encode(picked.checkpoint, prompt_input(picked.checkpoint))
        if prompt is not None:
            pos = position_input(prompt, "Token to follow in the formula")
            sections.sum_with_tokens(picked, prompt, pos)
