r"""LaTeX for the model pages' math panels, filled in with the live numbers.

Every function returns one string for ``st.latex`` (KaTeX). Long vectors are
shown by their first few entries, ``\dots`` and the last one; token text goes
through ``latex.tex_text`` (escaped, whitespace made visible).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from gptviz.app.shared.tex import num, tex_escape, tex_text
from gptviz.i18n import _

# ---- embeddings and positions -------------------------------------------------------------


# ---- attention ----------------------------------------------------------------------------

def _pick_columns(i: int, t: int, shown: int, weights: np.ndarray) -> list[int | None]:
    """Keys to show for query i (None = an ellipsis): the first, the query itself and the
    largest weights, in order; then one masked key, if any.

    >>> _pick_columns(9, 12, 4, np.array([.1, 0, 0, .5, 0, 0, .3, 0, 0, .1, 0, 0]))
    [0, None, 3, None, 6, None, 9, 10, None]
    """
    if i + 1 <= shown:
        cols: list[int | None] = list(range(i + 1))
    else:
        top = np.argsort(-weights[: i + 1], kind="stable")
        keep = sorted({0, i, *[int(j) for j in top[: max(shown - 2, 0)]]})[: max(shown, 2)]
        cols = []
        for j in keep:
            if cols and j != cols[-1] + 1:
                cols.append(None)
            cols.append(j)
    if i + 1 < t:
        cols += [i + 1] + ([None] if i + 2 < t else [])
    return cols


def qkv_lines(bias: bool, rope: bool = False) -> str:
    r"""Q, K and V of a head from the block's normalised input, with the biases the model
    has; with ``rope``, row i of Q and of K turned by R_i (the scores use those rows).

    >>> qkv_lines(False)
    'Q = \\mathrm{LN}_1(X)W_Q,\\ K = \\mathrm{LN}_1(X)W_K,\\ V = \\mathrm{LN}_1(X)W_V'
    >>> "Q_i = R_i" in qkv_lines(True, rope=True), "b_V" in qkv_lines(True, rope=True)
    (True, True)
    """
    def made(m: str) -> str:
        return rf"\mathrm{{LN}}_1(X)W_{m}" + (rf" + b_{m}" if bias else "")

    if rope:
        return (rf"Q_i = R_i\big({made('Q')}\big)_i,\ K_i = R_i\big({made('K')}\big)_i,\ "
                rf"V = {made('V')}")
    return rf"Q = {made('Q')},\ K = {made('K')},\ V = {made('V')}"


def attention_row(query: str, i: int, keys: Sequence[str], scores: Sequence[float],
                  pattern: Sequence[float], d_k: int, shown: int = 5) -> str:
    r"""Row i of ``W = softmax(QKᵀ/√d_k + M)``: scores, the mask, exponentials, weights.

    ``scores`` is row i of QKᵀ/√d_k before the mask, ``pattern`` row i of W.

    >>> tex = attention_row("b", 1, ["a", "b", "c"], [0.0, 0.0, 5.0], [0.5, 0.5, 0.0], 4)
    >>> r"-\infty" in tex and "0.500" in tex
    True
    """
    s = np.asarray(scores, np.float64)  # (T,)
    w = np.asarray(pattern, np.float64)  # (T,)
    t = len(s)
    cols = _pick_columns(i, t, shown, w)
    masked = np.where(np.arange(t) <= i, s, -np.inf)  # (T,) s + M
    z = float(np.exp(masked[: i + 1] - masked[: i + 1].max()).sum())

    def row(values: np.ndarray, digits: int = 3) -> str:
        cells = [r"\dots" if j is None else
                 rf"\underset{{{tex_text(keys[j], 8)}}}{{{num(values[j], digits, sci=False)}}}"
                 for j in cols]
        return r"\big(" + r",\ ".join(cells) + r"\big)"

    shift = masked[: i + 1].max()
    return (
        r"\begin{aligned}"
        r"&\text{" + tex_escape(_("query")) + " } "
        rf"i = {i}\ ({tex_text(query, 12)}),\quad d_k = {d_k},\quad "
        rf"m = \max_{{j \le {i}}} s_{{{i},j}} = {num(shift)}"
        r"\ \text{" + tex_escape(_("(over the unmasked keys only)")) + r"}\\"
        rf"s_{{{i},j}} = \tfrac{{q_{{{i}}} \cdot k_j}}{{\sqrt{{{d_k}}}}} &= {row(s)}\\"
        rf"s_{{{i},j}} + M_{{{i},j}} &= {row(masked)}\\"
        rf"e^{{\,s_{{{i},j}} + M_{{{i},j}} - m}} &= {row(np.exp(masked - shift))},\quad "
        rf"\textstyle\sum_j = {num(z)}\\"
        rf"w_{{{i},j}} = \mathrm{{softmax}}_j(\cdot) &= {row(w)},\quad "
        rf"\textstyle\sum_j w_{{{i},j}} = {num(w.sum(), 4)}"
        r"\end{aligned}"
    )


def z_row(i: int, keys: Sequence[str], pattern: Sequence[float], top: int = 3) -> str:
    r"""``z_i = Σ_j w_ij v_j`` written with its largest weights, each v_j under its token.

    >>> z_row(1, ["a", "b"], [0.25, 0.75]).count("v_{")
    2
    """
    w = np.asarray(pattern, np.float64)[: i + 1]  # (i+1,)
    order = np.argsort(-w, kind="stable")[:top]
    terms = [rf"{num(w[j])}\, \underset{{{tex_text(keys[j], 8)}}}{{v_{{{j}}}}}" for j in order]
    more = r" + \dots" if i + 1 > top else ""
    return (rf"z_{{{i}}} = \textstyle\sum_{{j \le {i}}} w_{{{i},j}}\, v_j = "
            + " + ".join(terms) + more)


def masking_equality(delta_renorm: float, delta_head: float, layer: int, head: int) -> str:
    r"""The two causal masks agree: ``softmax(S) ⊙ tril / row sum = softmax(S + M)``.

    >>> "layer 0" in masking_equality(1e-8, 2e-8, 0, 1)
    True
    """
    return (
        r"\begin{aligned}"
        r"\frac{\big[\mathrm{softmax}(S) \odot \mathrm{tril}(\mathbf 1)\big]_{ij}}"
        r"{\sum_{j'} \big[\mathrm{softmax}(S) \odot \mathrm{tril}(\mathbf 1)\big]_{ij'}}"
        r" &= \frac{e^{S_{ij}}\,[j \le i]}{\sum_{j' \le i} e^{S_{ij'}}}"
        r" = \mathrm{softmax}(S + M)_{ij} \\"
        rf"\max|\Delta| &= {num(delta_renorm)}\ \ (S = XX^\top),\\"  # one per line: they
        rf"\max|\Delta| &= {num(delta_head)}\ \ "  # are long in scientific notation
        r"(S = QK^\top/\sqrt{d_k},\ \text{"
        + tex_escape(_("layer {layer}, head {head}").format(layer=layer, head=head)) + "})"
        r"\end{aligned}"
    )


def sdpa_check(delta: dict[str, float], n_layer: int) -> str:
    r"""Max |Δ| between our explicit attention and torch's ``scaled_dot_product_attention``.

    >>> "10^{-7}" in sdpa_check({"pattern": 1e-7, "Z": 2e-7}, 2)
    True
    """
    ours = r"\text{" + tex_escape(_("ours")) + "}"
    return (
        r"\max_{\ell < " + str(n_layer) + r",\,h,\,i,\,j}\big|W^{" + ours + "}_{ij} - "
        r"W^{\text{SDPA}}_{ij}\big| = " + num(delta["pattern"])
        + r",\qquad \max\big|Z^{" + ours + r"} - Z^{\text{SDPA}}\big| = " + num(delta["Z"])
    )


def ablation_formula(heads: Sequence[tuple[int, int]], token: str, before: float, after: float,
             tv: float) -> str:
    r"""What ablating heads means, and what it did to the model's top next token.

    >>> "z^{(0,1)}" in ablation_formula([(0, 1)], "a", 0.5, 0.25, 0.3)
    True
    """
    zs = ",\\ ".join(rf"z^{{({ly},{h})}}" for ly, h in heads) or r"\varnothing"
    return (
        rf"{zs} \leftarrow 0:\quad P\big({tex_text(token, 12)}\big):\ {num(before)} \to "
        rf"{num(after)},\qquad \tfrac12 \textstyle\sum_v |P_v - P'_v| = {num(tv)}"
    )
