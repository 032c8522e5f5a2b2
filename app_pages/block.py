"""Transformer block: LayerNorm → attention → residual → LayerNorm → FFN → residual."""

import streamlit as st

from gptviz.app.block import view as sections
from gptviz.app.shared.inputs import layer_and_head, prompt_or_stop
from gptviz.app.shared.picker import picked_or_stop

st.title("Transformer block")
st.markdown(
    "A GPT is a stack of identical blocks. Each reads the residual stream $X$ (one row of "
    "$d$ numbers per token), normalises it, lets the tokens exchange information by attention, "
    "adds the result back, then transforms every token on its own with a small feed-forward "
    "network and adds that back too. Shapes never change: $N\\times d$ in, $N\\times d$ out.")

picked = picked_or_stop()
config = picked.checkpoint.config

prompt = prompt_or_stop(picked.checkpoint)
layer, head = layer_and_head(config.n_layer, config.n_head)
cache = sections.run(picked, prompt)

tabs = st.tabs(["The block, step by step", "LayerNorm", "GELU vs ReLU", "Parameters",
                "Residual stream and logit lens"], key="view", bind="query-params",
               on_change="rerun")
with tabs[0]:
    if tabs[0].open:
        sections.flow(picked, prompt, cache, layer, head)
with tabs[1]:
    if tabs[1].open:
        sections.layernorm(picked, prompt, cache, layer)
with tabs[2]:
    if tabs[2].open:
        sections.activation_functions(picked, cache, layer)
with tabs[3]:
    if tabs[3].open:
        sections.parameters(picked)
with tabs[4]:
    if tabs[4].open:
        sections.residual_and_lens(picked, prompt, cache)
