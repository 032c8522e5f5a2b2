"""The sections of the Transformer block page; each takes plain values and draws."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from gptviz import i18n
from gptviz.analysis import core as analysis
from gptviz.analysis.stages import block_stages
from gptviz.app.block import figures as vb
from gptviz.app.block import formulas as mb
from gptviz.app.block.figures import block_flow, stage_table
from gptviz.app.block.names import component_name, shown_columns, stage_name, stat_name
from gptviz.app.block.prediction import attribution_view, commitment_view
from gptviz.app.shared.cache import activations, cached_result, vocab_labels
from gptviz.app.shared.figure_cache import cached_figure
from gptviz.app.shared.inputs import Prompt, position_input
from gptviz.app.shared.picker import Picked
from gptviz.app.shared.tex import tex_escape
from gptviz.app.shared.widgets import chart, csv_download, data_grid, on_demand, plain_table, plot
from gptviz.i18n import N_, _, ngettext, number
from gptviz.model.config import ACTIVATION_TEX, ACTIVATION_TEXT
from gptviz.model.hooks import ActivationCache
from gptviz.model.names import act_name, block_page_names

LENS_TOP = 5  # guesses per row of the logit lens
COUNT = st.column_config.NumberColumn(format="localized")  # 124,412,160


def page_activations(picked: Picked, prompt: Prompt) -> ActivationCache:
    names = block_page_names(picked.checkpoint.config.n_layer)
    return activations(picked, prompt.ids, names)[0]


def flow(picked: Picked, prompt: Prompt, cache: ActivationCache, layer: int, head: int) -> None:
    """The block as a flow of its live tensors, with the shapes."""
    c = picked.checkpoint.config
    st.latex(mb.block_equations(len(prompt.ids), c.d_model, c.d_ff, c.n_head, c.activation,
                                c.bias))
    stages = block_stages(cache, layer, head, c.activation, c.bias)
    fig = cached_figure(picked, "block-flow", (prompt.ids, layer, head, i18n.current()),
                        lambda: block_flow(stages, prompt.labels))
    plot(fig)
    st.caption(_("Each thumbnail is a live tensor of this prompt (tokens down); ⊕ marks the "
                 "residual additions, the only way information passes a block untouched. "
                 "One letter per quantity: A enters the activation, H leaves it.") + " "
               + (_("The biases b_O, b₁, b₂ are part of the tensors drawn.") if c.bias else
                  _("This model has no biases, so no + b appears.")))
    df = pd.DataFrame(stage_table(stages))
    plain_table(shown_columns(df))
    csv_download(df, f"block-{layer}-stages.csv")


def layernorm(picked: Picked, prompt: Prompt, cache: ActivationCache, layer: int) -> None:
    """LayerNorm's mean 0 / variance 1 on the real rows, with ε explained."""
    which = st.segmented_control("LayerNorm", ["ln1", "ln2"], default="ln1", required=True,
                                 key="which_ln", bind="query-params",
                                 format_func=lambda k: {
                                     "ln1": _("LN₁ (before attention)"),
                                     "ln2": _("LN₂ (before the FFN)")}.get(k, k))
    x = analysis.layernorm_input(cache, layer, which)  # (T, d)
    out = cache[act_name("normalized", layer, which)][0]  # (T, d)
    eps = getattr(picked.checkpoint.model.blocks[layer], which).eps
    stats = analysis.layernorm_stats(x, out, eps)
    bias = picked.checkpoint.config.bias
    shift = " + b" if bias else ""
    st.latex(r"\mathrm{LN}(x) = \lambda \odot \frac{x - \mu}{\sqrt{\sigma^2 + \varepsilon}}"
             + shift + r",\qquad \mu = \tfrac1d \textstyle\sum_k x_k,\quad "
             r"\sigma^2 = \tfrac1d \textstyle\sum_k (x_k - \mu)^2")
    chart(vb.layernorm_rows(stats, prompt.labels))
    pos = position_input(prompt, _("Row to work out"), key="ln_position")
    st.latex(mb.layernorm_row(prompt.labels[pos], analysis.to_numpy(x[pos]),
                              analysis.to_numpy(out[pos]), eps, bias))
    st.caption((_("ε = {eps} keeps the division finite when a row is constant. It also makes "
                  "the standardised variance σ²/(σ²+ε), a hair under 1 (and visibly under 1 "
                  "for rows with tiny σ²). The trained scale λ and shift b then move each "
                  "dimension again, so the LN output ('after') is not mean 0 / variance 1 any "
                  "more.") if bias else
                _("ε = {eps} keeps the division finite when a row is constant. It also makes "
                  "the standardised variance σ²/(σ²+ε), a hair under 1 (and visibly under 1 "
                  "for rows with tiny σ²). The trained scale λ then moves (this model has no "
                  "shift b) each dimension again, so the LN output ('after') is not mean 0 / "
                  "variance 1 any more.")).format(eps=f"{eps:g}"))
    df = pd.DataFrame({"position": range(len(prompt.ids)), "token": prompt.labels,
                       **{k: v for k, v in stats.items()}})
    # rounded as shown, + 0.0 turning −0.0 into 0: a mean of −3e-9 read "-0.000000"
    shown = df.assign(**{k: np.round(np.asarray(v, np.float64), 6) + 0.0 for k, v in stats.items()})
    data_grid(shown.rename(columns=lambda k: stat_name(k) if k in stats else
                           _(COLUMNS.get(k, k))), hide_index=True, width="stretch",
              height=220, column_config={
                  stat_name(k): st.column_config.NumberColumn(format="%.6f") for k in stats})
    csv_download(df, f"layernorm-{layer}-{which}.csv")  # the exact values


def activation_functions(picked: Picked, cache: ActivationCache, layer: int) -> None:
    """GELU vs ReLU as curves, at one x, and on this layer's real FFN inputs."""
    plotted = analysis.activation_curves()
    plot(vb.activation_curves_figure(plotted))
    x = st.slider("x", -4.0, 4.0, -0.5, 0.1, key="act_x", bind="query-params")
    curves = analysis.activation_curves(x, x, 1)
    st.latex(mb.activation_point(x, *(float(curves[k][0]) for k in ("GELU", "GELU (tanh)",
                                                                     "ReLU"))))
    a = analysis.to_numpy(cache[act_name("pre", layer)][0])  # (T, d_ff)
    c = picked.checkpoint.config
    act = c.activation
    st.latex(rf"A = \mathrm{{LN}}_2(Y)\,W_1{' + b_1' if c.bias else ''},\qquad "
             rf"H = {ACTIVATION_TEX[act]}(A)\qquad \text{{"
             + tex_escape(_("(layer {layer}, entry by entry)").format(layer=layer)) + "}")
    cols = st.columns(3)
    cols[0].metric(_("entries of A in this layer"), number(a.size, 0, grouping=True))
    cols[1].metric(_("share with A < 0"), f"{number(100 * float((a < 0).mean()), 1)} %")
    cols[2].metric(_("this model uses"), ACTIVATION_TEXT[act])
    gap = float(np.abs(plotted["GELU"] - plotted["GELU (tanh)"]).max())
    uses = {"gelu": _("This model uses the exact form, x Φ(x) with Φ written with erf."),
            "gelu_tanh": _("This model uses the tanh form, GPT-2's (Hugging Face's "
                           "gelu_new): 0.5x(1 + tanh(√(2/π)(x + 0.044715x³)))."),
            "relu": _("This model uses ReLU.")}.get(
                act, _("This model uses {activation}.").format(activation=act))
    st.caption(_("ReLU sends every negative input to exactly 0 (and its gradient too); GELU = "
                 "x Φ(x) lets small negative values through, weighted by how likely a "
                 "standard normal is to lie below them.") + " " + uses + " "
               + _("The seeds use the tanh approximation (dotted): on the plotted range "
                   "[−4, 4], max |exact − tanh| = {gap}.").format(gap=f"{gap:.1e}"))


def parameters(picked: Picked) -> None:
    """Parameter counts per component: this model, and the seeds' GPT_CONFIG_124M."""
    c, model = picked.checkpoint.config, picked.checkpoint.model
    counts = analysis.parameter_table(c)
    plot(vb.parameter_bars({k if k == "total" else component_name(k): v
                            for k, v in counts.items()},
                           _("{model}: parameters per component").format(model=picked.name)))
    mine = pd.DataFrame({"component": list(counts), "parameters": list(counts.values())})
    data_grid(shown_columns(mine.assign(component=mine["component"].map(component_name))),
              hide_index=True, width="stretch", height="content",
              column_config={_("parameters"): COUNT})
    csv_download(mine, f"parameters-{picked.name}.csv")
    same = counts["total"] == model.num_params()
    n = model.num_params()
    st.caption((ngettext("Counted from the shapes; the live model has {n} parameter (the same).",
                         "Counted from the shapes; the live model has {n} parameters (the "
                         "same).", n) if same else
                ngettext("Counted from the shapes; the live model has {n} parameter "
                         "(different!).", "Counted from the shapes; the live model has {n} "
                         "parameters (different!).", n)).format(
                             n=number(n, 0, grouping=True)) + " "
               + (_("E and W_U are one tied matrix, counted once.") if c.tie_embeddings else
                  _("W_U is a matrix of its own (embeddings not tied).")))
    st.markdown(_("#### The seeds' `GPT_CONFIG_124M` (GPT-2 small)"))
    tied, untied = analysis.seeds_124m_counts(True), analysis.seeds_124m_counts(False)
    df = pd.DataFrame({"component": list(tied), "tied (W_U = Eᵀ)": list(tied.values()),
                       "untied": [untied[k] for k in tied]})
    data_grid(shown_columns(df.assign(component=df["component"].map(component_name))),
              hide_index=True, width="stretch", height="content",
              column_config={_("tied (W_U = Eᵀ)"): COUNT, _("untied"): COUNT})
    csv_download(df, "parameters-gpt-config-124m.csv")
    extra = 12 * 3 * 768
    st.caption(_("Shown: the seeds' configuration, with qkv_bias = False and every other bias "
                 "kept: {tied} tied, {untied} untied (the difference is "
                 "W_U, {vocab} × 768). This project's model core has one bias switch for every "
                 "layer; its GPT_CONFIG_124M (bias = True) also counts the Q, K, V biases, "
                 "12 × 3 × 768 = {extra} more: {all} tied.").format(
                     tied=number(tied["total"], 0, grouping=True),
                     untied=number(untied["total"], 0, grouping=True),
                     vocab=number(50_257, 0, grouping=True), extra=number(extra, 0, grouping=True),
                     all=number(tied["total"] + extra, 0, grouping=True)))


def residual_and_lens(picked: Picked, prompt: Prompt, cache: ActivationCache) -> None:
    """‖x_t‖ along the residual stream, and the logit lens after every block."""
    c, model = picked.checkpoint.config, picked.checkpoint.model
    stages, norms = analysis.residual_norms(cache, c.n_layer)  # (S,), (S, T)
    plot(vb.residual_norms_figure(norms, [stage_name(s) for s in stages], prompt.labels))
    df = pd.DataFrame(norms.T, columns=stages)
    df.insert(0, "token", prompt.labels)
    with on_demand(_("Norms as a table"), key="norms_table") as shown:
        if shown:
            data_grid(df.rename(columns={"token": _("token")}), width="stretch", height=220)
            csv_download(df, "residual-norms.csv")
    st.markdown(_("#### Logit lens"))
    pos = position_input(prompt, _("Read the guesses at token"), key="lens_position")
    rows, ids, probs = cached_result(picked, "logit-lens", (prompt.ids, pos), lambda: (
        analysis.logit_lens(model, cache, LENS_TOP, pos, include_input=True)))
    shown_rows = [stage_name(r) for r in rows]  # "after block 0" in the reader's language
    vocab = vocab_labels(picked)
    guesses = [[vocab[i] for i in row] for row in ids]
    st.latex(mb.logit_lens_formula(pos, prompt.labels[pos],
                           [(r, g[0], float(p[0])) for r, g, p in zip(shown_rows, guesses,
                                                                      probs, strict=True)]))
    plot(vb.logit_lens_figure(shown_rows, guesses, probs))
    lens = pd.DataFrame({"read after": np.repeat(rows, probs.shape[1]),
                         "rank": np.tile(np.arange(1, probs.shape[1] + 1), len(rows)),
                         "token": [g for row in guesses for g in row],
                         "probability": probs.reshape(-1)})
    data_grid(shown_columns(lens.assign(**{"read after": np.repeat(shown_rows,
                                                                   probs.shape[1])})),
              hide_index=True, width="stretch", height=220)
    csv_download(lens, "logit-lens.csv")
    st.caption(_("Each row applies the model's own final LayerNorm and unembedding to the "
                 "residual stream as it is after that block, as if the model stopped there. "
                 "The last row is the model's real prediction.")
               + (" " + _("With tied embeddings the 'embeddings' row often guesses the token "
                          "itself: $E_v \\cdot E_v$ is large.") if c.tie_embeddings else ""))


COLUMNS = {"position": N_("position"), "token": N_("token")}
VIEWS = {N_("The block, step by step"): flow, N_("LayerNorm"): layernorm,
         N_("GELU vs ReLU"): activation_functions, N_("Parameters"): parameters,
         N_("Residual stream and logit lens"): residual_and_lens,
         N_("Direct logit attribution"): attribution_view,
         N_("Commitment layer"): commitment_view}
