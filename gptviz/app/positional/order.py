"""The Positional page's live demo: with the positions removed, shuffling the prefix still
changes the last token's logits, because the causal mask carries some order; without the
mask it would not (self-attention is permutation-equivariant)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import streamlit as st

from gptviz.analysis import positions
from gptviz.app.shared.cache import per_model, vocab_labels
from gptviz.app.shared.chips import token_chips_html
from gptviz.app.shared.inputs import Prompt, encode, prompt_input
from gptviz.app.shared.picker import Picked
from gptviz.app.shared.tex import words
from gptviz.app.shared.widgets import csv_download, dataframe
from gptviz.checkpoints.folder import Checkpoint
from gptviz.i18n import N_, _, ngettext, number, separators

# guesses_table's headers, shown as _(header); its CSV keeps them
COLUMNS = (N_("P (as typed)"), N_("P (shuffled)"))
SEED = "order_seed"  # st.session_state key of the shuffle's seed
SEED_MAX = 1_000_000
TOP = 5  # next-token guesses listed before and after the shuffle
ROUNDING = 1e-4  # a Δ below this, on logits of order 1–10, is float32 rounding


@per_model
def _order_check(ckpt: Checkpoint, ids: tuple[int, ...], seed: int) -> positions.OrderCheck:
    check = positions.order_check(ckpt.model, ids, seed)
    for a in (check.before, check.after):  # shared by every session: read-only
        a.flags.writeable = False
    return check


def _reshuffle() -> None:
    st.session_state[SEED] = (int(st.session_state.get(SEED, 0)) + 1) % (SEED_MAX + 1)


def order_formula(order: Sequence[int], n_layer: int, rope: bool = False) -> str:
    r"""Δ = max_v |y_{N,v}(π) − y_{N,v}| with the positions removed (with ``rope``: no
    rotation, R_i = I), and the order π.

    >>> tex = order_formula([2, 0, 1, 3], 4)
    >>> r"\pi &= (2,\ 0,\ 1,\ 3)" in tex and "p_i = 0" in tex
    True
    """
    shown = [str(k) for k in order]
    if len(shown) > 12:
        shown = shown[:10] + [r"\dots", shown[-1]]
    return (
        r"\begin{aligned}"
        r"\Delta &= \max_{v \in V}\big|\,y_{N,v}(" + words(_("shuffled"))
        + r") - y_{N,v}\,\big|,\qquad "
        + (r"x_i = E[t_i],\ R_i = I\ " + words(_("(no rotation)")) + r",\quad " if rope else
           r"x_i = E[t_i] + p_i\ " + words(_("with")) + r"\ p_i = 0,\quad ")
        + words(ngettext("{n} layer", "{n} layers", n_layer), n=n_layer) + r" \\"
        r"\pi &= (" + r",\ ".join(shown) + r") \\"
        r"&" + words(_("(position {k} of the shuffled prompt holds the token from position "
                       "{pi})"), k="k", pi=r"\pi_k")
        + r"\end{aligned}"
    )


def guesses_table(labels: Sequence[str], check: positions.OrderCheck, k: int = TOP
                  ) -> pd.DataFrame:
    """The top-k next tokens (softmax of y_N, positions removed) before and after.

    >>> c = positions.OrderCheck([1, 0, 2], np.array([2.0, 0.0]), np.array([0.0, 2.0]),
    ...                          2.0, 0.0, 1.0)
    >>> guesses_table(["a", "b"], c, k=1)[["as typed", "shuffled"]].values.tolist()
    [['a', 'b']]
    """
    rows = {}
    for name, y in ((N_("as typed"), check.before), (N_("shuffled"), check.after)):
        p = np.exp(y - y.max())
        p /= p.sum()  # (|V|,) softmax of y_N
        top = np.argsort(-p, kind="stable")[:k]
        rows[name] = [labels[i] for i in top]
        rows[f"P ({name})"] = p[top]
    return pd.DataFrame({N_("rank"): range(1, len(rows["as typed"]) + 1), **rows})


def order_view(picked: Picked) -> None:
    """Shuffle the prefix of a prompt, positions removed, and watch the last logits move."""
    ckpt = picked.checkpoint
    st.markdown(_(
        "Remove the positions ($p_i = 0$), shuffle every token of the prompt but the last, "
        "and compare the last token's logits $y_N$ before and after. Without the causal mask, "
        "self-attention is *permutation-equivariant*: the outputs are shuffled the same way "
        "as the inputs, so the last token, which stays last and sees every token, would get "
        "exactly the same logits. With the mask, token $i$ sees only tokens $0,\\dots,i$: "
        "the earlier tokens' outputs depend on the order, and from the second layer on the "
        "last token reads them.") + (" " + _(
            "This model uses RoPE: its positions are the rotations $R_i$ of every query and "
            "key, so removing them here means $R_i = I$, no rotation.")
            if ckpt.config.rope else ""))
    prompt = encode(ckpt, prompt_input(ckpt))
    if prompt is None:
        return
    n = len(prompt.ids)
    if n < 3:
        st.info(ngettext("The prompt has {n} token: shuffling needs at least two tokens before "
                         "the last one. Type a longer prompt.",
                         "The prompt has {n} tokens: shuffling needs at least two tokens "
                         "before the last one. Type a longer prompt.", n).format(n=n),
                icon=":material/shuffle:")
        return
    left, right = st.columns([3, 1], vertical_alignment="bottom")
    st.session_state.setdefault(SEED, 0)
    seed = int(left.number_input(_("Seed of the shuffle"), 0, SEED_MAX, key=SEED,
                                 help=_("Each seed gives one random order of the prefix.")))
    right.button(_("Shuffle again"), icon=":material/shuffle:", on_click=_reshuffle,
                 key="order_reshuffle")
    check = _order_check(picked, prompt.ids, seed)
    shuffled(prompt, check)
    st.latex(order_formula(check.order, ckpt.config.n_layer, ckpt.config.rope))
    cols = st.columns(3)
    causal, trained = number(check.causal, 3), number(check.trained, 3)
    unmasked = f"{check.unmasked:.1e}".replace(".", separators()[0])
    cols[0].metric(_("Δ with the causal mask"), causal)
    cols[1].metric(_("Δ without the mask"), unmasked)
    cols[2].metric(_("Δ with positions and mask"), trained)
    lines = [(_("Positions removed, the causal mask alone moves the last logits by up to "
                "{causal}. The same weights with the mask lifted give {unmasked}, float32 "
                "rounding: unmasked attention cannot tell the orders apart.")
              if check.unmasked < ROUNDING else
              _("Positions removed, the causal mask alone moves the last logits by up to "
                "{causal}. The same weights with the mask lifted give {unmasked}, more than "
                "float32 rounding: something in this model still sees the order.")),
             _("With the model's positions added back (as it was trained) the change is "
               "{trained}.")]
    if ckpt.config.n_layer == 1:
        lines.append(_("This model has one layer: its last token reads only the embeddings, "
                       "which do not depend on the order, so the mask alone changes nothing "
                       "here."))
    st.caption(" ".join(lines).format(causal=causal, unmasked=unmasked, trained=trained))
    st.caption(_("The {top} likeliest next tokens, $\\mathrm{{softmax}}(y_N)$, positions "
                 "removed: the prompt as typed beside the shuffled one.").format(top=TOP))
    df = guesses_table(vocab_labels(picked), check)
    dataframe(df, hide_index=True, width="stretch", column_config={
        c: st.column_config.NumberColumn(format="%.4f") for c in df.columns if c[:2] == "P "})
    csv_download(df, f"order-without-positions-{picked.name}.csv")


def shuffled(prompt: Prompt, check: positions.OrderCheck) -> None:
    """The shuffled prompt as chips, or a note when the seed kept the order."""
    st.markdown(_("The shuffled prompt (the last token stays last):"))
    st.html(token_chips_html([prompt.tokens[k] for k in check.order]))
    if not check.moved:
        st.info(_("This seed keeps every token where it was, so nothing can change: press "
                  "*Shuffle again*."), icon=":material/shuffle:")

