"""The sections of the Learning page; each takes plain values and draws.

The computations run on a private twin of the model (``gptviz.analysis.learning``), so the model
other sessions see never changes; their results are cached per (model, window, position).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np
import pandas as pd
import streamlit as st

from gptviz.analysis import learning
from gptviz.analysis.gradient_check import (
    CHECK_ENTRIES,
    copied_entries,
    default_check_groups,
    gradient_check,
)
from gptviz.analysis.learning import Group, Microscope, Window
from gptviz.app.learning import figures as fg
from gptviz.app.learning import formulas as tex
from gptviz.app.learning.controls import BIG_MODEL, median_position
from gptviz.app.learning.replay import replay_view
from gptviz.app.learning.step import ETAS, fmt, step_section
from gptviz.app.serving.memory import blocks_mapped_apart
from gptviz.app.shared.cache import vocab_labels, wide_result
from gptviz.app.shared.picker import Picked
from gptviz.app.shared.tex import percent
from gptviz.app.shared.widgets import chart, csv_download, data_grid, on_demand
from gptviz.app.speedups import fold
from gptviz.i18n import N_, _, number
from gptviz.model import GPT

DZ_TOLERANCE = 1e-5  # |(P − e_y) − autograd| above this would be a bug, not rounding
CHECK_TOLERANCE = 1e-5  # relative error of the finite-difference check that passes
EPSILONS = (1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10)


R = TypeVar("R")

def cached(picked: Picked, what: str, args: tuple, compute: Callable[[], Any]) -> Any:
    """``compute()`` once per (model, what, args): for everyone when the model is bundled or
    named by the server, for this session alone when it was trained or uploaded here; kept
    with the other whole-model results (bounded in bytes), under a spinner the first time."""
    return wide_result(picked, f"learning-{what}", args, compute,
                       _("Back-propagating through one prediction (once for this input)…"))


def typical_position(picked: Picked, window: Window) -> int:
    """The window's prediction of median loss (one forward pass, cached)."""
    model = picked.checkpoint.model
    losses = cached(picked, "losses", (window.x, window.y),
                    lambda: learning.window_losses(model, window))
    return median_position(losses)


def _mapped_apart(compute: Callable[..., R], *args: object) -> R:
    """``compute(*args)`` with its large temporaries mapped apart (``memory``), so freed ones
    leave no holes in the heaps: GPT-2 small's gradient check +210 MB at its peak instead
    of +400, its microscope +160 MB instead of up to +300 in a walk."""
    with blocks_mapped_apart():
        return compute(*args)


def page_microscope(picked: Picked, window: Window, position: int) -> Microscope:
    """The loss, gradients and SGD steps (every η of the slider) of this prediction."""
    model = picked.checkpoint.model
    return cached(picked, "microscope", (window.x, window.y, position),
                  lambda: _mapped_apart(learning.microscope, model, window, position, ETAS[1:]))


def microscope(picked: Picked, window: Window, position: int) -> None:
    """Loss, ∂L/∂z = P − e_y checked against autograd, gradient norms, one SGD step."""
    m = page_microscope(picked, window, position)
    vocab = vocab_labels(picked)
    loss_section(picked, m, vocab)

    def rest() -> None:
        logit_section(m, vocab)
        backprop_section(picked, m)
        step_section(picked, m, vocab)
    fold.below("learning", _("Next: the gradient at the logits, back-propagation to every "
                             "parameter, and one step of gradient descent (drawn as you "
                             "scroll here)."), rest)


def loss_section(picked: Picked, m: Microscope, vocab: list[str]) -> None:
    st.markdown(_("#### 1. The loss of one prediction"))
    st.latex(tex.loss_latex(m.position, vocab[m.target], m.p_target, m.loss))
    rank = int((m.probs > m.p_target).sum()) + 1
    cols = st.columns(4)
    cols[0].metric("P(y)", percent(m.p_target, 3))
    cols[1].metric("L = −ln P(y)", number(m.loss, 4))
    cols[2].metric(_("rank of y among {n}").format(n=number(len(m.probs), 0, grouping=True)),
                   number(rank, 0, grouping=True))
    cols[3].metric(_("a uniform guess: ln |V|"), number(math.log(len(m.probs)), 4))
    dropout = picked.checkpoint.config.dropout
    st.caption(_("L is 0 when the model gives y probability 1 and grows without bound as P(y) "
                 "→ 0. Training minimises the mean of this loss over all N positions of many "
                 "windows; here one position is followed through one step.")
               + (" " + _("Dropout (p = {p} while training) is off here, as in evaluation, "
                          "so every number is reproducible.").format(p=fmt(dropout, "g"))
                  if dropout else ""))


def logit_section(m: Microscope, vocab: list[str]) -> None:
    st.markdown(_("#### 2. The gradient at the logits: $\\partial L/\\partial z = P - e_y$"))
    st.latex(tex.softmax_gradient_latex())
    order = np.argsort(-m.probs, kind="stable")
    other = next(int(i) for i in order if i != m.target)
    st.latex(tex.logit_gradient_latex(vocab[m.target], m.p_target, vocab[other],
                                      float(m.probs[other]), float(m.dz[m.target])))
    ids = fg.shown_ids(m.probs, m.target)
    chart(fg.logit_gradient_figure(ids, [vocab[i] for i in ids], m.formula, m.target))
    df = pd.DataFrame({
        "token": [vocab[i] for i in ids], "id": ids, "z": [float(m.logits[i]) for i in ids],
        "P": [float(m.probs[i]) for i in ids], "e_y": [int(i == m.target) for i in ids],
        "P − e_y": [float(m.formula[i]) for i in ids],
        "autograd ∂L/∂z": [float(m.dz[i]) for i in ids],
        "|Δ|": [abs(float(m.formula[i] - m.dz[i])) for i in ids]})
    with on_demand(_("∂L/∂z as a table (z, P, e_y, autograd)"), key="logit_table") as shown:
        if shown:  # closed, the page loads no data grid (its code alone is ~1.4 MB)
            auto = _("autograd ∂L/∂z")
            data_grid(df.rename(columns={"token": _("token"), "autograd ∂L/∂z": auto}),
                      hide_index=True, width="stretch", column_config={
                k: st.column_config.NumberColumn(format="%.6f") for k in (
                    "z", "P", "P − e_y", auto)} | {
                "|Δ|": st.column_config.NumberColumn(format="%.1e")})
            csv_download(df, "logit-gradient.csv")
    worst = m.max_dz_error
    if worst <= DZ_TOLERANCE:
        st.success(_("P − e_y equals autograd's ∂L/∂z on all |V| = {n} entries: max |Δ| = "
                     "{delta} (float32 rounding).").format(
                         n=number(len(m.probs), 0, grouping=True), delta=fmt(worst, ".1e")),
                   icon=":material/check_circle:")
    else:
        st.error(_("P − e_y equals autograd's ∂L/∂z on all |V| = {n} entries: max |Δ| = "
                   "{delta}: more than rounding. Please report this.").format(
                       n=number(len(m.probs), 0, grouping=True), delta=fmt(worst, ".1e")),
                 icon=":material/error:")
    st.caption(_("The entries sum to 0 (ΣP_i − 1; here {sum}). A step against "
                 "this gradient raises the target's logit (its entry, P(y) − 1, is the only "
                 "negative one) and lowers every other logit in proportion to its probability: "
                 "the more wrongly confident the model, the harder it is pushed.").format(
                     sum=fmt(m.formula.sum(), ".1e")))


def backprop_section(picked: Picked, m: Microscope) -> None:
    st.markdown(_("#### 3. Back-propagation to every parameter"))
    st.latex(tex.chain_rule_latex(picked.checkpoint.config.n_layer))
    comps = [g.component for g in m.groups]
    layers = [g.layer for g in m.groups]
    chart(fg.gradient_norms_figure(comps, layers, m.norms))
    model = picked.checkpoint.model
    named = dict(model.named_parameters())
    sizes = [sum(learning.group_part(named, n, r).numel() for n, r in g.parts)
             for g in m.groups]
    df = pd.DataFrame({"group": [g.label for g in m.groups],
                       "block": pd.array([g.layer for g in m.groups], dtype="Int64"),
                       "component": comps, "parameters": sizes, "‖∂L/∂θ‖": m.norms,
                       "share of ‖g‖²": m.norms**2 / m.grad_sq})
    with on_demand(_("Gradient norms as a table"), key="norms_table") as shown:
        if shown:
            names = {k: _(k) for k in COLUMNS}
            data_grid(df.assign(group=df["group"].map(fg.group_name),
                                component=df["component"].map(fg.group_name)
                                ).rename(columns=names),
                      hide_index=True, width="stretch", height=260, column_config={
                "‖∂L/∂θ‖": st.column_config.NumberColumn(format="%.4e"),
                names["share of ‖g‖²"]: st.column_config.NumberColumn(format="percent"),
                names["parameters"]: st.column_config.NumberColumn(format="localized")})
            csv_download(df, "gradient-norms.csv")
    total = float(np.sqrt((m.norms**2).sum()))
    tied = picked.checkpoint.config.tie_embeddings
    st.caption(" ".join(
        [_("‖g‖ = {norm} over all {n} parameters; the groups' norms give √Σ‖g_group‖² = "
           "{total}, the same.").format(norm=number(math.sqrt(m.grad_sq), 4),
                                        n=number(sum(sizes), 0, grouping=True),
                                        total=number(total, 4))]
        + ([_("E is also the unembedding W_U (tied), so its gradient holds both uses: the "
              "rows of every token through z = h Eᵀ, and the rows of x_0 … x_t as inputs.")]
           if tied else [])
        + ([_("Rows of P after position {t} get no gradient: this prediction never reads "
              "them.").format(t=m.position)]
           if picked.checkpoint.config.positional == "learned" else [])
        + [_("W_Q and W_K of a block are the only way attention patterns change.")]))


def gradient_check_view(picked: Picked, window: Window, position: int) -> None:
    """Autograd against central finite differences on a few parameter entries, float64."""
    st.markdown(_("Autograd applies the chain rule mechanically. To check it with no "
                  "calculus, nudge one parameter by ±ε, run the model twice and take the "
                  "slope:"))
    model = picked.checkpoint.model
    groups = learning.parameter_groups(model)
    labels = [g.label for g in groups if copied_entries(model, g) <= CHECK_ENTRIES]
    left, mid, right = st.columns([3, 2, 2])
    chosen = left.multiselect(_("Parameter groups (one entry each)"), labels,
                              key="check_groups", bind="query-params",
                              format_func=fg.group_name,
                              default=default_check_groups(
                                  [g for g in groups if g.label in labels],
                                  few=model.num_params() > BIG_MODEL))
    eps = mid.select_slider("ε", EPSILONS, value=1e-6, key="check_eps", bind="query-params",
                            format_func=lambda v: f"{v:.0e}")
    pick = right.radio(_("Which entry"), ["largest", "random"], key="check_pick",
                       bind="query-params", horizontal=True,
                       format_func=lambda k: {"largest": _("largest |∂L/∂θ|"),
                                              "random": _("random")}.get(k, k))
    st.latex(tex.central_difference_latex(eps))
    if not chosen:
        st.info(_("Choose at least one parameter group to check."), icon=":material/tune:")
        return
    rows = cached(picked, "check", (window.x, window.y, position, tuple(chosen), eps, pick),
                  lambda: _mapped_apart(gradient_check, model, window, position, chosen, eps,
                                        pick))
    df = pd.DataFrame({"group": [r.group for r in rows], "tensor": [r.parameter for r in rows],
                       "entry": [str(list(r.index)) for r in rows],
                       "autograd": [r.autograd for r in rows],
                       "finite difference": [r.numeric for r in rows],
                       "|Δ|": [r.abs_error for r in rows],
                       "relative error": [r.rel_error for r in rows]})
    col = st.column_config.NumberColumn
    names = {k: _(k) for k in COLUMNS}
    data_grid(df.assign(group=df["group"].map(fg.group_name)).rename(columns=names),
              hide_index=True, width="stretch", height="content", column_config={
        "autograd": col(format="%.10f"), names["finite difference"]: col(format="%.10f"),
        "|Δ|": col(format="%.1e"), names["relative error"]: col(format="%.1e")})
    csv_download(df, "gradient-check.csv")
    worst = max(r.rel_error for r in rows)
    if worst < CHECK_TOLERANCE:
        st.success(_("Autograd passes: every relative error is below {tol} (the largest is "
                     "{worst}). Back-propagation is just the chain rule.").format(
                         tol=fmt(CHECK_TOLERANCE, ".0e"), worst=fmt(worst, ".1e")),
                   icon=":material/check_circle:")
    else:
        st.warning(_("The largest relative error is {worst}. With ε = {eps} that is "
                     "expected: too large an ε measures the curvature too, too small a one "
                     "drowns in rounding. ε = 1e-6 balances the two in float64.").format(
                         worst=fmt(worst, ".1e"), eps=fmt(eps, ".0e")),
                   icon=":material/warning:")
    st.caption(_("Both columns are computed in float64 (the page's other numbers are "
                 "float32), on x_0 … x_t only: the causal mask makes L at position t blind to "
                 "later tokens. Relative error = |Δ| / max(|autograd|, |finite difference|). "
                 "The nudges are made on float64 copies of the checked tensors: the model "
                 "never changes.") + _left_out_note(model, groups, labels))


def _left_out_note(model: GPT, groups: list[Group], labels: list[str]) -> str:
    """Name the groups too big to check, and why; "" when there are none."""
    big = [g for g in groups if g.label not in labels]
    if not big:
        return ""
    entries = _("{group} ({n} entries)")
    names = ", ".join(entries.format(group=fg.group_name(g.label),
                                     n=number(copied_entries(model, g), 0, grouping=True))
                      for g in big[:3])
    return " " + _(
        "Not offered: {names}. A check copies a group's tensors to float64 (8 bytes an entry) "
        "and holds their gradient beside them: past {limit} entries ({mb} MB) that is too "
        "much for a shared server.").format(
            names=names + (" …" if len(big) > 3 else ""),
            limit=number(CHECK_ENTRIES, 0, grouping=True), mb=8 * CHECK_ENTRIES // 10**6)


# The tables' column names shown through _ (the CSV files keep these)
COLUMNS = (N_("group"), N_("block"), N_("component"), N_("parameters"), N_("share of ‖g‖²"),
           N_("tensor"), N_("entry"), N_("finite difference"), N_("relative error"))
VIEWS = {N_("One step under the microscope"): microscope, N_("Gradient check"):
         gradient_check_view, N_("Training replay"): replay_view}
