"""The Transformer block page's "Who wrote the prediction" views: direct logit attribution
as a waterfall, and the commitment layer of every position as a strip."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st
import torch

from gptviz.analysis import attribution as A
from gptviz.analysis.core import to_numpy
from gptviz.app.block import formulas as mb
from gptviz.app.block import prediction_figures as pf
from gptviz.app.block.names import shown_columns, stage_name
from gptviz.app.shared.cache import cached_result, per_model, vocab_labels
from gptviz.app.shared.inputs import Prompt, position_input
from gptviz.app.shared.picker import Picked
from gptviz.app.shared.widgets import chart, csv_download, data_grid, problem
from gptviz.checkpoints.folder import Checkpoint
from gptviz.i18n import N_, _, ngettext, number
from gptviz.model.hooks import ActivationCache
from gptviz.tokenizers import TokenizerError

TOP = 10  # tokens offered in the list: the model's most likely next tokens
TOLERANCE = 1e-4  # |Σ bars − the model's logit| allowed (float32 rounding)
EACH_HEAD_UP_TO = 32  # models with more heads than this start with one bar per layer
KIND_SUMS = ((N_("token"), ("token",)), (N_("position"), ("position",)),
             (N_("heads"), ("head", "heads")), ("b_O", ("b_O",)), ("FFN", ("FFN",)))
# Components whose label is a word (the others are symbols: "L1 H2", "L0 b_O", "L0 FFN").
WORDS = {"token": N_("token E[t]"), "position": N_("position p")}


@per_model
def _logits(ckpt: Checkpoint, ids: tuple[int, ...]) -> np.ndarray:
    """The model's own logits after the last of ``ids`` (|V|,), from its ordinary forward
    pass over them (a position's logits read only the tokens up to it): one row kept, not
    the prompt's (T, |V|) (26 MB for 128 GPT-2 tokens)."""
    with torch.no_grad():
        return to_numpy(ckpt.model(list(ids), last_only=True)[0, -1])


def _typed_token(picked: Picked, typed: str, vocab: list[str]) -> int | None:
    """The id of ``typed`` when this model's tokenizer reads it as exactly one known token;
    otherwise None, after a message that says why and what to do."""
    try:
        got = picked.checkpoint.tokenizer.tokens(typed)
    except TokenizerError as exc:
        problem(_("This model's tokenizer cannot read “{text}”: {reason} Showing the token "
                  "chosen in the list instead.").format(text=typed, reason=exc))
        return None
    if len(got) != 1:
        pieces = ", ".join(f"“{vocab[t.id]}”" for t in got[:8]) + (" …" if len(got) > 8 else "")
        problem(ngettext(
            "“{text}” is {n} token for this model's tokenizer ({pieces}), not one, so it has "
            "no single logit. Type one token (a piece shown on the chips above), or clear the "
            "box to use the list.",
            "“{text}” is {n} tokens for this model's tokenizer ({pieces}), not one, so it has "
            "no single logit. Type one token (a piece shown on the chips above), or clear the "
            "box to use the list.", len(got)).format(text=typed, n=len(got), pieces=pieces))
        return None
    if got[0].unknown:
        problem(_("“{text}” is not in this model's vocabulary (it would be read as "
                  "{read}), so the model has no logit for it. Type a token the "
                  "model knows, or clear the box to use the list.").format(
                      text=typed, read=vocab[got[0].id]))
        return None
    return got[0].id


def _chosen_token(picked: Picked, pos: int, logits: np.ndarray, vocab: list[str]) -> int:
    """One of the TOP most likely next tokens at ``pos`` (its prediction first, and again
    whenever the position changes), or one typed."""
    top = [int(t) for t in np.argsort(-logits, kind="stable")[:TOP]]
    if st.session_state.get("dla_token_at") != pos:
        st.session_state.pop("dla_token", None)
        st.session_state["dla_token_at"] = pos
    left, right = st.columns(2)
    option = _("#{rank}: {token}  (id {id}, logit {logit})")
    chosen = left.selectbox(
        _("Token (the {n} most likely next)").format(n=len(top)), top, index=0,
        key="dla_token", format_func=lambda t: option.format(
            rank=top.index(t), token=vocab[t], id=t, logit=number(logits[t], 2)))
    typed = right.text_input(_("…or type a token"), key="dla_typed", max_chars=50,
                             help=_("Text that this model's tokenizer reads as exactly one "
                                    "token of its vocabulary."))
    if not typed:
        return int(chosen)
    got = _typed_token(picked, typed, vocab)
    if got is None:
        return int(chosen)
    st.caption(_("Using the typed token “{token}” (id {id}, logit {logit}); "
                 "clear the box to use the list.").format(token=vocab[got], id=got,
                                                          logit=number(logits[got], 4)))
    return got


def component_label(comp: A.Component) -> str:
    """A bar's name as the page shows it: the engine's label, its words translated."""
    if comp.kind in WORDS:
        return _(WORDS[comp.kind])
    if comp.kind == "heads":
        return _("L{layer} heads").format(layer=comp.layer)
    return comp.label


def _kind_sums(a: A.Attribution) -> list[tuple[str, float]]:
    """The contributions summed by kind, and the LayerNorm's bias term (as the formula has
    them), e.g. [("token", 1.2), ("heads", 3.4), ("FFN", -0.7), ("b_f", 0.1)]."""
    kinds = [c.kind for c in a.components]
    values = a.contributions.tolist()
    sums = [(_(label), sum(v for k, v in zip(kinds, values, strict=True) if k in members))
            for label, members in KIND_SUMS if any(k in members for k in kinds)]
    return sums + ([("b_f", a.ln_bias)] if a.ln_bias is not None else [])


def attribution_view(picked: Picked, prompt: Prompt, cache: ActivationCache) -> None:
    """Direct logit attribution: one bar per writer of the residual stream."""
    c, model = picked.checkpoint.config, picked.checkpoint.model
    vocab = vocab_labels(picked)
    writers = {  # (adds positions, has biases): the sentence that lists the writers
        (True, True): _("Every component of the model writes into the residual stream by "
                        "*adding* a vector: the token's embedding, its position's, each "
                        "attention head, each attention output bias $b_O$, each feed-forward "
                        "network."),
        (True, False): _("Every component of the model writes into the residual stream by "
                         "*adding* a vector: the token's embedding, its position's, each "
                         "attention head, each feed-forward network."),
        (False, True): _("Every component of the model writes into the residual stream by "
                         "*adding* a vector: the token's embedding, each attention head, each "
                         "attention output bias $b_O$, each feed-forward network."),
        (False, False): _("Every component of the model writes into the residual stream by "
                          "*adding* a vector: the token's embedding, each attention head, each "
                          "feed-forward network.")}
    st.markdown(writers[(bool(c.adds_positions), bool(c.bias))] + " " + _(
        "The logit of a token $t$ is read off the sum by the "
        "final LayerNorm and the column $W_U[:,t]$ of the unembedding, so it can be split into "
        "one share per component: how much that component, on its own, pushed $t$ up or down."))
    pos = position_input(prompt, _("At position"), key="dla_position")
    logits = _logits(picked, tuple(prompt.ids[:pos + 1]))  # (|V|,)
    token = _chosen_token(picked, pos, logits, vocab)
    heads = st.segmented_control(
        _("Heads"), ["each", "per layer"], required=True, key="dla_heads", bind="query-params",
        default="each" if c.n_layer * c.n_head <= EACH_HEAD_UP_TO else "per layer",
        format_func=lambda k: {"each": _("one bar per head"),
                               "per layer": _("one bar per layer")}.get(k, k))
    a = cached_result(picked, "attribution", (prompt.ids, pos, token),
                      lambda: A.logit_attribution(model, cache, pos, token))
    shown = A.heads_per_layer(a) if heads == "per layer" else a
    real, total = float(logits[token]), a.total
    st.latex(mb.dla_formula(pos, vocab[token], _kind_sums(a), a.sigma, total, real, c.n_layer,
                            c.adds_positions, c.bias))
    st.markdown(_(
        "**The final LayerNorm's σ is frozen at its value for this input (σ = {sigma} "
        "at position {pos}): with σ fixed, LayerNorm is a linear map, so the bars add up "
        "exactly to the logit.**").format(sigma=number(a.sigma, 4), pos=pos))
    cols = st.columns(3)
    cols[0].metric(_("Σ of the bars"), number(total, 4))
    cols[1].metric(_("the model's logit"), number(real, 4))
    cols[2].metric("|Δ|", f"{abs(total - real):.1e}")
    if abs(total - real) <= TOLERANCE:
        st.success(_("The bars add up to the model's logit of “{token}” to within "
                     "{delta} (allowed: {tol}, float32 rounding).").format(
                         token=vocab[token], delta=f"{abs(total - real):.1e}",
                         tol=f"{TOLERANCE:.0e}"), icon=":material/check:")
    else:
        st.error(_("The bars differ from the model's logit by {delta}, more "
                   "than float32 rounding ({tol}) explains.").format(
                       delta=f"{abs(total - real):.1e}", tol=f"{TOLERANCE:.0e}"),
                 icon=":material/error:")
    labels = [component_label(comp) for comp in shown.components]
    values = shown.contributions.tolist()
    if shown.ln_bias is not None:
        labels, values = [*labels, _("b_f (LN bias)")], [*values, shown.ln_bias]
    chart(pf.logit_waterfall(labels, values, real, _(
        "who wrote the logit of “{token}” at position {pos} ({label})").format(
            token=vocab[token], pos=pos, label=prompt.labels[pos])))
    df = pd.DataFrame({"component": [comp.label for comp in shown.components]
                       + (["b_f (LN bias)"] if shown.ln_bias is not None else []),
                       "adds to the logit": values})  # the CSV's names stay English
    data_grid(shown_columns(df.assign(component=labels)), hide_index=True, width="stretch",
              height=220, column_config={
                  _("adds to the logit"): st.column_config.NumberColumn(format="%+.5f")})
    csv_download(df, f"logit-attribution-{pos}-{token}.csv")
    no_positions = (_("This model adds no position vector (RoPE rotates q and k inside "
                      "attention), so there is no position bar.") if c.rope else
                    _("This model adds no position vector (it has no positions), so there is "
                      "no position bar."))
    st.caption(" ".join(
        [_("Green bars raise the logit, red bars lower it; Σ is their sum, the dashed line the "
           "model's own logit. “L1 H2” is head 2 of block 1 (z W_O through its own d_k rows "
           "of W_O); FFN includes its bias b₂. Only the direct path is counted: a head that "
           "changes what a later block does gets its indirect effect credited to that later "
           "block.")]
        + ([] if c.adds_positions else [no_positions])
        + ([] if c.bias else [_("This model has no biases: no b_O and no LayerNorm bias "
                                "bar.")])))


def commitment_view(picked: Picked, prompt: Prompt, cache: ActivationCache) -> None:
    """The commitment layer of every position, as a strip over the prompt."""
    c, model = picked.checkpoint.config, picked.checkpoint.model
    vocab = vocab_labels(picked)
    com = cached_result(picked, "commitment", (prompt.ids,),
                        lambda: A.commitment_layers(model, cache))
    layers = com.layer.tolist()  # (T,) −1 = the embeddings
    final = com.top1[-1].tolist()  # (T,) the model's prediction at each position
    st.markdown(_(
        "The logit lens reads a guess for the next token off the residual stream after every "
        "block, as if the model stopped there. At each position, the **commitment layer** is "
        "the first block after which that guess (the top-1) is already the model's final "
        "prediction: “E” means the embeddings alone already point to it."))
    kept = com.kept_layer.tolist()  # (T,) from which block on the top-1 stays the final one
    chart(pf.commitment_strip(layers, prompt.labels, [vocab[t] for t in final], c.n_layer))
    st.caption(_commitment_count(layers, kept, c.n_layer) + " " + _(
        "Darker cells commit later. The "
        "strip shows the first match even if the guess changes again in a later block "
        "(the table lists the top-1 after every block, and the block after which it "
        "keeps the final one). Hover a cell for the predicted token."))
    df = pd.DataFrame({"position": range(len(layers)), "token": prompt.labels,
                       "final top-1": [vocab[t] for t in final],
                       "commits after": [com.stages[v + 1] for v in layers],
                       "keeps it after": [com.stages[v + 1] for v in kept]})
    for s, stage in enumerate(com.stages[:-1]):
        df[f"top-1 {stage}"] = [vocab[t] for t in com.top1[s].tolist()]
    shown = shown_columns(df.assign(**{k: df[k].map(stage_name) for k in (
        "commits after", "keeps it after")})).rename(columns=lambda k: _("top-1 {stage}").format(
            stage=stage_name(k[len("top-1 "):])) if k.startswith("top-1 ") else k)
    data_grid(shown, hide_index=True, width="stretch", height=min(240, 35 * len(df) + 40))
    csv_download(df, "commitment-layers.csv")


def _commitment_count(layers: list[int], kept: list[int], n_layer: int) -> str:
    """How many positions have their final top-1 before the last block and keep it from
    there to the end, in words; ``layers`` are the first matches, ``kept`` the blocks from
    which the top-1 stays the final one (−1: the embeddings). A position whose top-1 matches
    early and changes again counts only from where it stays.

    >>> _commitment_count([0, 3, 3], [0, 3, 3], 4)
    '1 of 3 positions have their final top-1 before the last block (block 3) and keep it from
     there on; the others get it for good only at the last block.'
    >>> _commitment_count([0, 1, 3], [3, 1, 3], 4)
    '1 of 3 positions have their final top-1 before the last block (block 3) and keep it from
     there on; the others get it for good only at the last block (1 of them had it earlier
     but lost it again).'
    >>> _commitment_count([3], [3], 4)
    'The one position gets its final top-1 only at the last block (block 3).'
    """
    last, n = n_layer - 1, len(kept)
    early = sum(v < last for v in kept)
    lost = sum(f < last <= k for f, k in zip(layers, kept, strict=True))
    if n == 1:
        text = (_("The one position has its final top-1 before the last block (block {last}) "
                  "and keeps it from there on.") if early else
                _("The one position gets its final top-1 only at the last block (block {last})"
                  " (it had it earlier but lost it again).") if lost else
                _("The one position gets its final top-1 only at the last block (block "
                  "{last})."))
    elif early == n:
        text = _("{early} of {n} positions have their final top-1 before the last block "
                 "(block {last}) and keep it from there on.")
    elif n - early == 1:
        text = (_("{early} of {n} positions have their final top-1 before the last block "
                  "(block {last}) and keep it from there on; the other gets it for good only "
                  "at the last block (it had it earlier but lost it again).") if lost else
                _("{early} of {n} positions have their final top-1 before the last block "
                  "(block {last}) and keep it from there on; the other gets it for good only "
                  "at the last block."))
    else:
        text = (_("{early} of {n} positions have their final top-1 before the last block "
                  "(block {last}) and keep it from there on; the others get it for good only "
                  "at the last block ({lost} of them had it earlier but lost it again).")
                if lost else
                _("{early} of {n} positions have their final top-1 before the last block "
                  "(block {last}) and keep it from there on; the others get it for good only "
                  "at the last block."))
    return text.format(early=early, n=n, last=last, lost=lost)
