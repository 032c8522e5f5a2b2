"""The sections of the Attention page; each takes plain values and draws."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from gptviz import i18n
from gptviz.analysis import attention as am
from gptviz.analysis import core as analysis
from gptviz.app.attention import figures as va
from gptviz.app.attention import flow, head_circuits, taxonomy
from gptviz.app.attention import formulas as mp
from gptviz.app.shared.cache import ablation, activations, cached_result, vocab_labels
from gptviz.app.shared.figure_cache import cached_figure
from gptviz.app.shared.heatmaps import fit_margins, title_room
from gptviz.app.shared.inputs import Prompt, position_input
from gptviz.app.shared.picker import Picked
from gptviz.app.shared.ticks import thin_ticks
from gptviz.app.shared.widgets import chart, csv_download, data_grid, on_demand, plain_table, plot
from gptviz.app.speedups import fold
from gptviz.i18n import N_, _
from gptviz.model.hooks import ActivationCache
from gptviz.model.names import act_name, attention_page_names

SQUARE = ("scores", "M", "masked scores", "pattern")  # the (T, T) steps of a head
STEP_ROWS = [("Q", "K", "V"), ("scores", "M", "masked scores"), ("pattern", "Z")]
ABLATION_TOP = 10  # most probable tokens before / after, in the bar chart


def page_activations(picked: Picked, prompt: Prompt) -> ActivationCache:
    """Each head's steps and, for the QK circuit's identity, every layer's x̂ = LN₁(X)."""
    c = picked.checkpoint.config
    n_layer = c.n_layer
    names = [*attention_page_names(n_layer, rope=c.rope),
             *(act_name("normalized", ly, "ln1") for ly in range(n_layer))]
    cache, _unused = activations(picked, prompt.ids, names)
    return cache


def grid_cell_px(n_head: int) -> int:
    """Thumbnail height so that thumbnails in a ~900 px wide grid come out roughly square.

    >>> grid_cell_px(4), grid_cell_px(12)
    (220, 80)
    """
    return max(80, min(220, 900 // n_head))


def narrow(name: str, fig):
    """A step figure for a third of the page: (T, T) ones keep only their token rows
    (hover names the key), so the matrix, not its labels, gets the width."""
    if name in SQUARE:
        fig.update_xaxes(showticklabels=False, title=_("key j (hover for the token)"))
    return thin_ticks(title_room(fig, 70))


def pattern_table(pattern: np.ndarray, labels: list[str]) -> pd.DataFrame:
    """A (T, T) pattern with 'i: token' row and column names, for CSV."""
    names = [f"{i}: {t}" for i, t in enumerate(labels)]
    return pd.DataFrame(pattern, index=pd.Index(names, name="query \\ key"), columns=names)


def overview(picked: Picked, prompt: Prompt, cache: ActivationCache, layer: int,
             head: int) -> None:
    """Every head of every layer as thumbnails, the chosen one large, one row worked out.
    A model with more heads than one grid shows readably (``va.one_grid``: GPT-2 small has
    144) gets the chosen layer's heads large first, then every head as an overview."""
    c = picked.checkpoint.config
    labels = prompt.labels
    key = (prompt.ids, layer, head, i18n.current())
    if va.one_grid(c.n_layer, c.n_head):
        grid = cached_figure(picked, "attention-grid", key, lambda: va.attention_grid(
            am.all_patterns(cache, c.n_layer), labels, selected=(layer, head),
            cell_px=grid_cell_px(c.n_head)))
        plot(grid)
        st.caption(_("All {n} heads: layers down, heads across; row i of a "
                     "thumbnail is how token i spreads its attention over tokens 0..i. The "
                     "framed head is shown large below. Choose another with Layer and Head "
                     "above.").format(n=c.n_layer * c.n_head))
        fold.below("attention", _("Next: layer {layer}, head {head} large, with one of its "
                                  "rows worked out (drawn as you scroll here).").format(
                                      layer=layer, head=head),
                   lambda: chosen_head(picked, prompt, cache, layer, head))
        return
    strip = cached_figure(picked, "attention-strip", key, lambda: va.layer_strip(
        am.all_patterns(cache, c.n_layer)[layer], labels, layer, head))
    plot(strip)
    st.caption(_("Layer {layer}'s {n} heads (choose the layer with Layer above): row i "
                 "of a thumbnail is how token i spreads its attention over tokens 0..i. The "
                 "framed head is shown large below, after all {all} heads at a glance.").format(
                     layer=layer, n=c.n_head, all=c.n_layer * c.n_head))
    fold.below("attention", _("Next: all {all} heads at a glance, then layer {layer}, head "
                              "{head} large with one of its rows worked out (drawn as you "
                              "scroll here).").format(all=c.n_layer * c.n_head, layer=layer,
                                                      head=head),
               lambda: (all_heads(picked, prompt, cache, layer, head),
                        chosen_head(picked, prompt, cache, layer, head)))


def all_heads(picked: Picked, prompt: Prompt, cache: ActivationCache, layer: int,
              head: int) -> None:
    """Every head as a small thumbnail, numbered once along each axis (no title per head)."""
    c = picked.checkpoint.config
    grid = cached_figure(picked, "attention-overview", (prompt.ids, layer, head,
                                                        i18n.current()),
                         lambda: va.attention_grid(
                             am.all_patterns(cache, c.n_layer), prompt.labels,
                             selected=(layer, head), cell_px=overview_cell_px(c.n_head),
                             axis_names=True))
    plot(grid)
    st.caption(_("All {all} heads: layers down (L0 … L{last_layer}), heads across (H0 … "
                 "H{last_head}); the framed one is layer {layer}, head {head}. Hover a "
                 "thumbnail for its query, key and weight.").format(
                     all=c.n_layer * c.n_head, last_layer=c.n_layer - 1,
                     last_head=c.n_head - 1, layer=layer, head=head))


COLUMN_PX = 820  # the page's column in a 1280 px window, beside the sidebar


def overview_cell_px(n_head: int) -> int:
    """Thumbnail height of the all-heads overview: about its width in the page's column
    (less the layer numbers and the colour bar), from 40 to 110 px.

    >>> overview_cell_px(12), overview_cell_px(25)
    (56, 40)
    """
    return max(40, min(110, (COLUMN_PX - 142) // n_head))


def chosen_head(picked: Picked, prompt: Prompt, cache: ActivationCache, layer: int,
                head: int) -> None:
    """The overview's chosen head drawn large, its top keys for one query, that row worked
    out, and the whole pattern as a table on demand."""
    c, labels = picked.checkpoint.config, prompt.labels
    key = (prompt.ids, layer, head, i18n.current())
    steps = am.head_tensors(cache, layer, head)
    left, right = st.columns([3, 2])
    large = cached_figure(picked, "attention-pattern", key, lambda: fit_margins(title_room(
        thin_ticks(va.attention_pattern(steps["pattern"], labels, height=640,
                                        title=_("layer {layer}, head {head}: W_attn").format(
                                            layer=layer, head=head))))))
    plot(large, container=left)
    with right:
        query = position_input(prompt, _("Query token (a row of W_attn)"), key="query")
        # keys j ≤ i only: a future key's weight is 0 by the mask, never one it "looks at"
        top = np.argsort(-steps["pattern"][query][:query + 1], kind="stable")[:5]
        best = pd.DataFrame({"key": [f"{j}: {labels[j]}" for j in top],
                             "weight": steps["pattern"][query][top]})
        plain_table(best.rename(columns={"key": _("key"), "weight": _("weight")}))
        csv_download(best, f"top-keys-L{layer}-H{head}-q{query}.csv")
        st.caption(_("Where {token} (position {query}) looks most: the largest "
                     "weights of its row. The row is worked out below.").format(
                         token=repr(labels[query]), query=query))
    st.latex(mp.attention_row(labels[query], query, labels, steps["scores"][query],
                              steps["pattern"][query], c.d_head))
    st.latex(mp.z_row(query, labels, steps["pattern"][query]))
    df = pattern_table(steps["pattern"], labels)
    with on_demand(_("This head's pattern as a table"), key="pattern_table") as shown:
        if shown:
            data_grid(df.rename_axis(_("query \\ key")), width="stretch", height=260)
            csv_download(df.reset_index(), f"pattern-L{layer}-H{head}.csv")


def head_steps(picked: Picked, prompt: Prompt, cache: ActivationCache, layer: int,
               head: int) -> None:
    """Q, K, V, the scaled scores, the mask, the pattern and Z of one head."""
    c = picked.checkpoint.config
    rope = c.rope
    st.latex(r"\begin{gathered}\mathrm{head}(X) = \mathrm{softmax}\Big(\frac{QK^\top}"
             r"{\sqrt{d_k}} + M\Big)V,\qquad d_k = " + str(c.d_head) + r"\\"
             + mp.qkv_lines(c.bias, rope)
             + rf"\ \in \mathbb{{R}}^{{{len(prompt.ids)} \times {c.d_head}}}\end{{gathered}}")
    if rope:
        st.caption(_("This model uses RoPE: R_i turns each pair of dimensions (2m, 2m+1) of "
                     "row i by the angle i·θ_m (Positional encoding page). Q and K below are "
                     "the turned rows, those the scores are made of; a score then depends on "
                     "the offset j − i of its query and key."))
    elif c.bias:
        st.caption(_("$b_K$ changes no pattern: it adds $q_i \\cdot b_K / \\sqrt{d_k}$ to "
                     "every score of row $i$, and a row-softmax is the same when one constant "
                     "is added to its whole row. b_Q and b_V do change Q and V."))
    steps = am.head_tensors(cache, layer, head)
    figs = cached_figure(picked, "head-steps", (prompt.ids, layer, head, i18n.current()),
                         lambda: {
        name: narrow(name, fig) for name, fig in va.head_step_figures(
            steps, prompt.labels, c.bias, rope).items()})
    for row in STEP_ROWS:
        for col, name in zip(st.columns(3), row, strict=False):
            plot(figs[name], key=f"step-{name}", container=col)
    st.caption(_("Q, K, V and Z: tokens down, the head's d_k dimensions across. Scores, mask "
                 "and pattern: queries down, keys across; grey cells are −∞, the future a "
                 "token may not see."))
    tables = {name: pd.DataFrame(steps[name], index=prompt.labels) for name in ("Q", "K", "V",
                                                                                "Z")}
    with on_demand(_("Q, K, V and Z as tables"), key="step_tables") as shown:
        if shown:
            name = st.segmented_control(_("Matrix"), list(tables), default="Q", required=True,
                                        key="step_table", bind="query-params")
            data_grid(tables[name], width="stretch", height=240)
            csv_download(tables[name].reset_index(names="token"),
                         f"{name}-L{layer}-H{head}.csv")


def masks_and_check(picked: Picked, prompt: Prompt, cache: ActivationCache, layer: int,
                    head: int) -> None:
    """The seeds' weight-free attention, both causal masks, and the SDPA check."""
    x = analysis.to_numpy(cache[act_name("embed")][0] + cache[act_name("pos_embed")])  # (T, d)
    scores, simple, _unused = am.simplified_attention(x)  # (T, T) each
    renorm, neg_inf = am.causal_by_renormalising(scores), am.causal_by_neg_inf(scores)
    delta = float((renorm - neg_inf).abs().max())
    steps = am.head_tensors(cache, layer, head)
    head_delta = float(np.abs(am.causal_by_renormalising(steps["scores"]).numpy()
                              - steps["pattern"]).max())
    st.markdown(_("The seeds first show attention **without weights**: each token scores "
                  "every token by a dot product of embeddings, $S = XX^\\top$ with {x}, and "
                  "mixes them by $\\mathrm{{softmax}}(S)X$. A GPT must not look ahead, and the "
                  "seeds give two ways to forbid it: zero the future after the softmax and "
                  "renormalise each row, or add $M$ ($-\\infty$ above the diagonal) before it. "
                  "They are the same matrix:").format(
                      x="$X = E[\\mathrm{ids}]" + (" + P$" if picked.checkpoint.config
                                                    .adds_positions else "$")))
    st.latex(mp.masking_equality(delta, head_delta, layer, head))
    fig = cached_figure(picked, "masks", (prompt.ids, i18n.current()), lambda: thin_ticks(
        va.masking_comparison(simple, renorm, neg_inf, prompt.labels, delta)))
    plot(fig)
    st.markdown(_("**The hand-written attention against PyTorch's fused kernel.** The model "
                  "computes attention step by step here (so that every step can be shown) and "
                  "with `torch.nn.functional.scaled_dot_product_attention` when it trains. "
                  "From the captured Q, K, V of every layer and head:"))
    check = cached_result(picked, "sdpa-check", (prompt.ids,), lambda: am.sdpa_max_delta(
        cache, range(picked.checkpoint.config.n_layer)))  # every layer: once per prompt
    st.latex(mp.sdpa_check(check, picked.checkpoint.config.n_layer))
    ok = max(check.values()) < 1e-4
    (st.success if ok else st.error)(
        (_("max |Δ| = {delta}: equal up to float32 rounding.") if ok else
         _("max |Δ| = {delta}: larger than rounding explains.")).format(
             delta=f"{max(check.values()):.1e}"),
        icon=":material/check:" if ok else ":material/error:")


def ablation_view(picked: Picked, prompt: Prompt, layer: int, head: int) -> None:
    """Switch heads off (z_h = 0) and compare the next-token distributions."""
    c = picked.checkpoint.config
    options = [(ly, h) for ly in range(c.n_layer) for h in range(c.n_head)]
    chosen = st.multiselect(_("Heads to switch off"), options, default=[(layer, head)],
                            format_func=lambda p: f"L{p[0]} H{p[1]}", key="ablate",
                            bind="query-params")
    before, after = ablation(picked, prompt.ids, chosen)  # (|V|,), (|V|,)
    vocab = vocab_labels(picked)
    ids = am.top_changes(before, after, ABLATION_TOP)
    top = int(ids[0])
    tv = 0.5 * float(np.abs(before - after).sum())
    st.latex(mp.ablation_formula(chosen, vocab[top], float(before[top]), float(after[top]), tv))
    chart(va.ablation_bars([vocab[i] for i in ids], before[ids], after[ids],
                           title=_("P(next token after {token})").format(
                               token=repr(prompt.labels[-1]))))
    if not chosen:
        st.info(_("No head is switched off, so both distributions are the same. Pick heads "
                  "above."), icon=":material/info:")
    df = pd.DataFrame({"id": ids, "token": [vocab[i] for i in ids], "P all heads": before[ids],
                       "P ablated": after[ids], "change": after[ids] - before[ids]})
    four = st.column_config.NumberColumn(format="%.4f")  # one format a column
    shown = {"token": _("token"), "P all heads": _("P all heads"),
             "P ablated": _("P ablated"), "change": _("change")}  # on screen; the CSV's stay
    data_grid(df.rename(columns=shown), hide_index=True, width="stretch", column_config={
        shown["P all heads"]: four, shown["P ablated"]: four,
        shown["change"]: st.column_config.NumberColumn(format="%+.2e")})
    csv_download(df, "ablation.csv")
    st.caption(_("Ablation replaces a head's output $z_h$ (its column block of $Z$) with zeros "
                 "before $W_O$ mixes the heads, and runs the rest of the model unchanged. Half "
                 "the sum of |P − P′| is the total-variation distance: the probability mass "
                 "that moved."))


VIEWS = {N_("All heads"): overview, N_("Steps of one head"): head_steps,
         N_("Masks and the SDPA check"): masks_and_check, N_("Head ablation"): ablation_view,
         N_("Circuits of a head"): head_circuits.circuits_view,
         N_("OV circuit"): head_circuits.ov_view,
         N_("Head taxonomy"): taxonomy.taxonomy_view, N_("Summed heads"): flow.summed_view,
         N_("Rollout"): flow.rollout_view}
