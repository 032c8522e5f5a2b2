"""The Attention page's views across heads and layers: attention summed over the heads of
each layer, and attention rollout (Abnar & Zuidema 2020) through the layers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st
import torch

from gptviz.analysis import attention as am
from gptviz.analysis import flow as F
from gptviz.analysis.core import to_numpy
from gptviz.app.attention import circuit_figures as cf
from gptviz.app.attention import circuit_formulas as cm
from gptviz.app.shared.figure_cache import cached_figure
from gptviz.app.shared.heatmaps import shown_label
from gptviz.app.shared.inputs import Prompt
from gptviz.app.shared.picker import Picked
from gptviz.app.shared.widgets import plot
from gptviz.model.hooks import ActivationCache


def _patterns(picked: Picked, cache: ActivationCache) -> torch.Tensor:
    return torch.from_numpy(np.array(am.all_patterns(cache, picked.checkpoint.config.n_layer)))


def matrix_table(m: np.ndarray, labels: list[str]) -> pd.DataFrame:
    """A (T, T) matrix with 'i: token' row and column names, for CSV."""
    names = [f"{i}: {t}" for i, t in enumerate(labels)]
    return pd.DataFrame(m, index=pd.Index(names, name="query \\ key"), columns=names)


def matrix_csv(m: np.ndarray, labels: list[str], filename: str, label: str) -> None:
    """A download button for a (T, T) matrix whose CSV is written only when clicked (a
    128 × 128 table costs ~50 ms to write and more to show: the heatmap's hover has it)."""
    st.download_button(label, lambda: matrix_table(m, labels).to_csv().encode("utf-8"),
                       file_name=filename, mime="text/csv", icon=":material/download:",
                       key=f"csv-{filename}", on_click="ignore")


def summed_view(picked: Picked, prompt: Prompt, cache: ActivationCache, layer: int) -> None:
    """S = Σ_h A^h for every layer, with one entry of the chosen layer written out."""
    c = picked.checkpoint.config
    patterns = _patterns(picked, cache)  # (L, H, T, T)
    summed = to_numpy(F.summed_attention(patterns))  # (L, T, T)
    st.markdown(
        "A layer's heads work side by side, and their outputs are added into the same "
        "residual stream. Adding their patterns shows where the layer as a whole reads: "
        f"each row of the sum adds {c.n_head} rows that each sum to 1, so it sums to "
        f"H = {c.n_head} (divide by H for the heads' mean).")
    i = len(prompt.ids) - 1
    j = int(np.argmax(summed[layer, i]))
    st.latex(cm.summed_formula(layer, c.n_head, i, j, patterns[layer, :, i, j].tolist()))
    st.caption(f"The entry written out is the last query (position {i}) and the key it reads "
               f"most in layer {layer} (position {j}), head by head from head 0. Choose the "
               "layer with Layer above.")
    fig = cached_figure(picked, "summed", (prompt.ids,), lambda: cf.layer_panels(
        summed, prompt.labels, float(c.n_head), f"Σ over the {c.n_head} heads of each layer "
        f"(colour scale 0 … {c.n_head})", [f"layer {ly}" for ly in range(c.n_layer)]))
    plot(fig)
    matrix_csv(summed[layer], prompt.labels, f"summed-L{layer}.csv",
               f"Download layer {layer}'s sum as CSV")


def rollout_view(picked: Picked, prompt: Prompt, cache: ActivationCache) -> None:
    """Rollout after every layer, and what reaches the last position at the end."""
    c = picked.checkpoint.config
    rolled = F.rollout(_patterns(picked, cache))  # (L, T, T), float64
    error = float((rolled.sum(-1) - 1).abs().max())
    r = to_numpy(rolled)
    st.markdown(
        "Attention **rollout** (Abnar & Zuidema, 2020, *Quantifying Attention Flow in "
        "Transformers*) follows attention through the layers. Each block adds its attention "
        "output to the residual stream, which also carries every token forward unchanged, so "
        "the paper mixes each layer's pattern, averaged over its heads, with the identity: "
        f"Ã = {1 - F.RESIDUAL}·A + {F.RESIDUAL}·I, rows renormalised to sum to 1 (they "
        "already do, since each row of A sums to 1; the paper renormalises for other "
        "weightings). The rollout after a layer is the product of these matrices, from the "
        "first layer to that one.")
    st.latex(cm.rollout_formula(c.n_layer, F.RESIDUAL, error))
    fig = cached_figure(picked, "rollout", (prompt.ids,), lambda: cf.layer_panels(
        r, prompt.labels, 1.0, "rollout R after each layer (colour scale 0 … 1)",
        [f"after layer {ly}" for ly in range(c.n_layer)]))
    plot(fig)
    last = r[-1, -1]  # (T,): what reaches the last position after the last layer
    top = np.argsort(-last, kind="stable")[:10]
    shown = [shown_label(prompt.labels[k], f"{k}: ") for k in top]  # "0: The", "1: ·Steen"
    bars = cached_figure(picked, "rollout-last", (prompt.ids,), lambda: cf.ov_bars(
        shown, last[top], [], [], f"Row {len(last) - 1} of the final R: the input tokens "
        "that reach the last position most", names=("share", ""),
        x_title=f"R<sub>{len(last) - 1},j</sub>"))
    plot(bars)
    st.caption(
        "Rollout is a heuristic: it follows the patterns only, ignores what the values, W_O "
        "and the FFNs do with what is read, and assumes the residual stream weighs as much as "
        "the attention. Row i of R says how much of each input token reaches position i on "
        "those assumptions; the diagonal stays large because of the 0.5·I.")
    matrix_csv(r[-1], prompt.labels, "rollout.csv", "Download the final rollout as CSV")
