"""The Attention page's circuits of one head: W_QK and W_OV with the score identity checked
on the live scores, and the OV circuit read in token space."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from gptviz import i18n
from gptviz.analysis import circuits as C
from gptviz.analysis.core import to_numpy
from gptviz.app.attention import circuit_figures as cf
from gptviz.app.attention import circuit_formulas as cm
from gptviz.app.shared.cache import cached_result, per_model, vocab_labels
from gptviz.app.shared.figure_cache import cached_figure
from gptviz.app.shared.heatmaps import shown_label
from gptviz.app.shared.inputs import Prompt, position_input
from gptviz.app.shared.picker import Picked
from gptviz.app.shared.widgets import csv_download, data_grid, plot, problem
from gptviz.checkpoints.folder import Checkpoint
from gptviz.i18n import N_, _, ngettext, number
from gptviz.model import GPT
from gptviz.model.hooks import ActivationCache
from gptviz.model.names import act_name
from gptviz.tokenizers import TokenizerError

OV_ROWS = 10  # tokens in the OV table unless the student asks for more
TERM_TITLES = {"xWx": "x̂ᵢ W_QK x̂ⱼᵀ / √d_k", "xWb": "x̂ᵢ W_Q b_Kᵀ / √d_k",
               "bWx": "b_Q W_Kᵀ x̂ⱼᵀ / √d_k", "bb": "b_Q b_Kᵀ / √d_k", "sum": N_("sum = s_ij")}
ROPE_TITLES = {"xWx": "x̂ᵢ W_Q R₍ⱼ₋ᵢ₎ W_Kᵀ x̂ⱼᵀ / √d_k", "xWb": "x̂ᵢ W_Q R₍ⱼ₋ᵢ₎ b_Kᵀ / √d_k",
               "bWx": "b_Q R₍ⱼ₋ᵢ₎ W_Kᵀ x̂ⱼᵀ / √d_k", "bb": "b_Q R₍ⱼ₋ᵢ₎ b_Kᵀ / √d_k",
               "sum": N_("sum = s_ij")}  # titles shown through _


def _identity_deltas(model: GPT, cache: ActivationCache) -> tuple[float, float, float]:
    c = model.config
    exact = page = 0.0
    tol = C.TOLERANCE
    for layer in range(c.n_layer):
        x = cache[act_name("normalized", layer, "ln1")][0]  # (T, d)
        scores = cache[act_name("scores", layer)][0].double()  # (H, T, T)
        tol = max(tol, C.tolerance(scores))
        for head in range(c.n_head):
            w = C.head_weights(model, layer, head)
            total = C.score_terms(x, w, c.rope)["sum"]  # (T, T)
            exact = max(exact, float((C.direct_scores(x, w, c.rope) - total).abs().max()))
            page = max(page, float((scores[head] - total).abs().max()))
    return exact, page, tol


def score_terms(picked: Picked, ids: tuple[int, ...], cache: ActivationCache, layer: int,
                head: int) -> dict[str, np.ndarray]:
    """``circuits.score_terms`` of one head on the prompt ``ids`` (float64 (T, T) each), from
    the page's forward pass ``cache`` of ``ids``."""
    def compute() -> dict[str, np.ndarray]:
        x = cache[act_name("normalized", layer, "ln1")][0]  # (T, d)
        terms = C.score_terms(x, C.head_weights(picked.checkpoint.model, layer, head),
                              rope=picked.checkpoint.config.rope)
        return {k: v.numpy() for k, v in terms.items()}

    return cached_result(picked, "score-terms", (tuple(ids), layer, head), compute)


def identity_deltas(picked: Picked, ids: tuple[int, ...], cache: ActivationCache
                    ) -> tuple[float, float, float]:
    """Over every head of every layer: max |Δ| of the identity in float64, max |Δ| against
    the model's float32 scores, and the tolerance for the latter (``circuits.tolerance``);
    from the page's forward pass ``cache`` of ``ids`` (every layer's LN₁ output and
    scores)."""
    return cached_result(picked, "identity-deltas", (tuple(ids),),
                         lambda: _identity_deltas(picked.checkpoint.model, cache))


def circuits_view(picked: Picked, prompt: Prompt, cache: ActivationCache, layer: int,
                  head: int) -> None:
    """W_QK and W_OV of the chosen head, and the score identity checked on the prompt."""
    c = picked.checkpoint.config
    w = C.head_weights(picked.checkpoint.model, layer, head)
    rope = c.rope
    qk = (_("A head's four weight blocks only ever act in two pairs. The query and key "
            "blocks meet in the scores, ${qk}$; in the first term $W_Q$ and $W_K^\\top$ "
            "together are one $d\\times d$ matrix $W_{{QK}}$, the **QK circuit**: *where* the "
            "head looks (the bias terms beside it: the identity below).") if c.bias else
          _("A head's four weight blocks only ever act in two pairs. The query and key "
            "blocks meet in the scores, ${qk}$, so together they are one $d\\times d$ matrix "
            "$W_{{QK}}$, the **QK circuit**: *where* the head looks.")
          ).format(qk=cm.qk_product(c.bias, rope))
    ov = _("The value and output blocks act one after the other on whatever is read, so "
           "together they are one $d\\times d$ matrix $W_{{OV}}$, the **OV circuit**: "
           "*what* the head writes into the residual stream. Here $W_Q^h$ is head $h$'s "
           "block of $d_k = {d_k}$ columns of $W_Q$ (and $W_O^h$ its $d_k$ rows of "
           "$W_O$); the product of a $d\\times d_k$ and a $d_k\\times d$ matrix has rank at "
           "most $d_k$.").format(d_k=c.d_head)
    st.markdown(qk + " " + ov + (" " + _(
        "**This model uses RoPE:** it turns query $i$ by $R_i$ and key $j$ by $R_j$ "
        "before their product, so $R_{j-i} = R_i^\\top R_j$ sits between $W_Q$ and "
        "$W_K^\\top$ in the product above: the QK circuit depends on the offset $j-i$. "
        "The $W_{QK}$ drawn is the one at offset 0 ($R_0 = I$), a query reading its own "
        "position.") if rope else ""))
    st.latex(cm.circuit_shapes(c.d_model, c.d_head, layer, head))
    figs = cached_figure(picked, "circuits", (layer, head, i18n.current()), lambda: (
        cf.circuit_matrix(to_numpy(C.qk_circuit(w)), _("W_QK, layer {layer}, head {head}")
                          .format(layer=layer, head=head)),
        cf.circuit_matrix(to_numpy(C.ov_circuit(w)), _("W_OV, layer {layer}, head {head}")
                          .format(layer=layer, head=head))))
    for col, fig in zip(st.columns(2), figs, strict=True):
        plot(fig, container=col)
    _score_identity(picked, prompt, cache, layer, head)


def _score_identity(picked: Picked, prompt: Prompt, cache: ActivationCache, layer: int,
                    head: int) -> None:
    c = picked.checkpoint.config
    rope = c.rope
    st.markdown(_("**The scores through W_QK.** With $\\hat x = \\mathrm{{LN}}_1(X)$, the "
                  "input of layer {layer}'s heads, every score of this head is").format(
                      layer=layer))
    st.latex(cm.score_identity(c.bias, rope))
    terms = score_terms(picked, prompt.ids, cache, layer, head)  # each (T, T)
    scores = cache[act_name("scores", layer)][0, head]  # (T, T), the page's, before the mask
    labels = prompt.labels
    left, right = st.columns(2)
    i = position_input(prompt, _("Query i"), key="qk_query", container=left)
    j = position_input(prompt, _("Key j (j ≤ i)"), key="qk_key", default_last=False,
                       container=right, upto=i)
    parts = {k: float(v[i, j]) for k, v in terms.items() if k != "sum"}
    st.latex(cm.score_pair(i, j, parts, c.d_head, float(scores[i, j]), rope))
    shown = {k: v for k, v in terms.items() if len(terms) > 2 or k == "xWx"}
    fig = cached_figure(picked, "score-terms", (prompt.ids, layer, head, i18n.current()),
                        lambda: cf.score_term_panels(shown, {
                            k: _(v) for k, v in (ROPE_TITLES if rope else TERM_TITLES).items()},
                            labels))
    plot(fig)
    exact, page, tol = identity_deltas(picked, prompt.ids, cache)
    st.latex(cm.identity_check(exact, page, tol, c.bias, rope))
    ok = page <= tol
    (st.success if ok else st.error)((
        (_("Every head of every layer: the four terms give the page's scores to within "
           "{delta} (allowed: {tol}, float32 rounding).") if c.bias else
         _("Every head of every layer: the one term gives the page's scores to within "
           "{delta} (allowed: {tol}, float32 rounding).")) if ok else
        _("The terms differ from the page's scores by {delta}, more than float32 rounding "
          "({tol}) explains.")).format(delta=f"{page:.1e}", tol=f"{tol:.1e}"),
        icon=":material/check:" if ok else ":material/error:")
    if c.bias and rope:
        st.caption(_(
            "The panels: queries i down, keys j across, on one colour scale so that their "
            "sizes compare; all cells are shown, also those the mask removes later (above the "
            "diagonal). With RoPE every bias term passes through R₍ⱼ₋ᵢ₎ too, so none is "
            "constant along a row: each can change the pattern. Tolerance: 1e-5, or 1e-6 × "
            "the largest |s_ij| when scores are large (float32 keeps about 7 significant "
            "digits)."))
    elif c.bias:
        st.caption(_(
            "The panels: queries i down, keys j across, on one colour scale so that their "
            "sizes compare; all cells are shown, also those the mask removes later (above the "
            "diagonal). Two of the bias terms change no pattern: x̂ᵢ W_Q b_Kᵀ is the same for "
            "every key "
            "of row i and b_Q b_Kᵀ is one number, and a row-softmax ignores a constant added "
            "to its whole row. b_Q W_Kᵀ x̂ⱼᵀ does matter: it differs from key to key, so some "
            "keys draw every query whatever the query is. Tolerance: 1e-5, or 1e-6 × the "
            "largest |s_ij| when scores are large (float32 keeps about 7 significant digits)."))
    elif rope:
        st.caption(_("This model has no biases, so s_ij is the QK circuit alone at offset "
                     "j − i (the panel: queries i down, keys j across). Tolerance: 1e-5, or "
                     "1e-6 × the largest |s_ij| (float32 keeps about 7 digits)."))
    else:
        st.caption(_("This model has no biases, so s_ij is the QK circuit alone (the panel: "
                     "queries i down, keys j across). Tolerance: 1e-5, or 1e-6 × the largest "
                     "|s_ij| (float32 keeps about 7 digits)."))


@per_model
def _ov_logits(ckpt: Checkpoint, layer: int, head: int, source: int) -> np.ndarray:
    return to_numpy(C.ov_token_logits(ckpt.model, layer, head, source))  # (|V|,)


def _source_token(picked: Picked, prompt: Prompt, vocab: list[str]) -> int:
    """The source token: one of the prompt's (the last by default), or one typed in."""
    ids = list(dict.fromkeys(prompt.ids))  # the prompt's distinct ids, in order
    left, right = st.columns(2)
    shown = _("{token}  (id {id})")
    chosen = left.selectbox(_("Source token (from the prompt)"), ids, index=ids.index(
        prompt.ids[-1]), format_func=lambda t: shown.format(token=vocab[t], id=t),
        key="ov_source")
    typed = right.text_input(_("…or type one token"), key="ov_typed", max_chars=50,
                             help=_("Text that this model's tokenizer reads as exactly one "
                                    "token."))
    if not typed:
        return int(chosen)
    try:
        got = picked.checkpoint.tokenizer.encode(typed)
    except TokenizerError as exc:
        problem(_("This model's tokenizer cannot read “{text}”: {reason} Showing the token "
                  "chosen on the left.").format(text=typed, reason=exc))
        return int(chosen)
    if len(got) != 1:
        problem(ngettext(
            "“{text}” is {n} token for this model's tokenizer ({pieces}), not one. Type a "
            "single token (a piece shown on the chips above), or clear the box.",
            "“{text}” is {n} tokens for this model's tokenizer ({pieces}), not one. Type a "
            "single token (a piece shown on the chips above), or clear the box.",
            len(got)).format(text=typed, n=len(got),
                             pieces=", ".join(vocab[t] for t in got[:8])))
        return int(chosen)
    st.caption(_("Using the typed token {token} (id {id}); clear the box to use "
                 "the list on the left.").format(token=repr(vocab[got[0]]), id=got[0]))
    return int(got[0])


def ov_view(picked: Picked, prompt: Prompt, layer: int, head: int) -> None:
    """The OV circuit in token space: which tokens this head promotes when it reads one."""
    ckpt = picked.checkpoint
    vocab = vocab_labels(picked)
    st.markdown(_(
        "If this head put all its weight on one token $s$, it would add $E_s W_{OV}$ to the "
        "residual stream. Read that straight through the unembedding, $E_s W_{OV} W_U$ is "
        "one number per vocabulary token: how much the head raises (or lowers) its logit. "
        "A head that raises $s$ itself is a copying head."))
    source = _source_token(picked, prompt, vocab)
    size = len(vocab)
    rows = int(st.number_input(_("Tokens in the table"), 1, size, min(OV_ROWS, size),
                               key="ov_rows", bind="query-params"))
    logits = _ov_logits(picked, layer, head, source)  # (|V|,)
    order = np.argsort(-logits, kind="stable")  # (|V|,) most raised first
    top = order[:rows]
    st.latex(cm.ov_formula(vocab[source], source, ckpt.config.tie_embeddings,
                           vocab[top[0]], float(logits[top[0]])))
    rank = int(np.flatnonzero(order == source)[0]) + 1  # from 1, as Learning and the Lesson
    df = pd.DataFrame({"rank": np.arange(1, rows + 1), "id": top,
                       "token": [vocab[t] for t in top], "logit change": logits[top]})
    left, right = st.columns([2, 3])
    with left:
        data_grid(df.rename(columns={"rank": _("rank"), "token": _("token"),
                                     "logit change": _("logit change")}),
                  hide_index=True, width="stretch")
        csv_download(df, f"ov-L{layer}-H{head}-source{source}.csv")
    with right:
        bars = cached_figure(picked, "ov-bars", (layer, head, source, i18n.current()),
                             lambda: cf.ov_bars(
            [shown_label(vocab[t], suffix=f" ({t})") for t in order[:10]], logits[order[:10]],
            [shown_label(vocab[t], suffix=f" ({t})") for t in order[::-1][:10]],
            logits[order[::-1][:10]],
            _("E W<sub>OV</sub> W<sub>U</sub> for {token}, layer {layer}, head {head}").format(
                token=repr(vocab[source]), layer=layer, head=head)))
        plot(bars)
    st.caption(_(
        "The source token itself is at rank {rank} of {size} (rank 1 = raised most). The "
        "direct path only: E's row enters without LN₁ and without the "
        "blocks before this one, and leaves without the final LayerNorm; what the head "
        "actually adds to a position is a weighted mix of such rows (its pattern's weights). "
        "Biases are left out, here and in W_OV: b_V W_O^h is added whatever the head reads, "
        "so it says nothing about the source token, and b_O belongs to the whole layer, not "
        "to one head.").format(rank=number(rank, 0, grouping=True),
                               size=number(size, 0, grouping=True)) + " "
        + (_("W_U = Eᵀ: this model ties its unembedding to its embedding.")
           if ckpt.config.tie_embeddings else _("W_U is this model's own unembedding "
                                                 "(not tied to E).")))
