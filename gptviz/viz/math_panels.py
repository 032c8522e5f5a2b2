r"""LaTeX for the model pages' math panels, filled in with the live numbers.

Every function returns one string for ``st.latex`` (KaTeX). Long vectors are
shown by their first few entries, ``\dots`` and the last one; token text goes
through ``latex.tex_text`` (escaped, whitespace made visible).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from gptviz.viz.latex import tex_text


def num(v: float, digits: int = 3, sci: bool = True) -> str:
    r"""A number for LaTeX: fixed decimals, ``-\infty`` for the mask, tiny values in e-notation.

    >>> num(0.12345), num(float("-inf")), num(2e-7)
    ('0.123', '-\\infty', '2.0 \\times 10^{-7}')
    """
    v = float(v)
    if math.isinf(v):
        return r"-\infty" if v < 0 else r"\infty"
    if sci and v != 0 and abs(v) < 10 ** -digits:
        mantissa, exp = f"{v:.1e}".split("e")
        return rf"{mantissa} \times 10^{{{int(exp)}}}"
    return f"{v:.{digits}f}"


def vector(values: Sequence[float], shown: int = 4, digits: int = 3) -> str:
    r"""``(v_1, v_2, …, v_d)`` with the first ``shown`` entries, ``\dots`` and the last.

    >>> vector([1, 2, 3, 4, 5, 6], shown=2, digits=0)
    '(1,\\ 2,\\ \\dots,\\ 6)'
    """
    v = [float(x) for x in values]
    parts = [num(x, digits) for x in v[:shown]]
    if len(v) > shown + 1:
        parts += [r"\dots", num(v[-1], digits)]
    elif len(v) == shown + 1:
        parts.append(num(v[-1], digits))
    return "(" + r",\ ".join(parts) + ")"


def _int(n: int) -> str:
    return f"{n:,}".replace(",", "{,}")


# ---- embeddings and positions -------------------------------------------------------------

def embedding_lookup(token: str, token_id: int, vocab_size: int, row: Sequence[float]) -> str:
    r"""``OH(t) = e_id`` and ``e_idᵀ A = A_{id,:}`` with the row's real numbers.

    >>> "A_{17,:}" in embedding_lookup("cat", 17, 100, [0.1, 0.2])
    True
    """
    d = len(row)
    return (
        r"\begin{aligned}"
        rf"\mathrm{{OH}}\big({tex_text(token, 16)}\big) &= e_{{{token_id}}} \in "
        rf"\{{0,1\}}^{{{_int(vocab_size)}}} \\"
        rf"e_{{{token_id}}}^\top A &= \textstyle\sum_v [v = {token_id}]\, A_{{v,:}} = "
        rf"A_{{{token_id},:}} \\"
        rf"&= {vector(row)} \in \mathbb{{R}}^{{{d}}}"
        r"\end{aligned}"
    )


def sinusoid_point(i: int, dim: int, d: int, value: float) -> str:
    r"""One entry of the sinusoidal table, the formula evaluated step by step.

    >>> sinusoid_point(3, 4, 64, 0.5).startswith("p_{3,4}")
    True
    """
    two_j = dim - dim % 2
    fn = r"\sin" if dim % 2 == 0 else r"\cos"
    which = "2j" if dim % 2 == 0 else "2j+1"
    angle = i / 10000 ** (two_j / d)
    return (
        rf"p_{{{i},{dim}}} = p_{{i,{which}}}\big|_{{i={i},\,j={two_j // 2}}} = "
        rf"{fn}\!\Big(\frac{{i}}{{10000^{{2j/d}}}}\Big) = "
        rf"{fn}\!\Big(\frac{{{i}}}{{10000^{{{two_j}/{d}}}}}\Big) = {fn}({num(angle, 4)}) = "
        rf"{num(value, 4)}"
    )


def x_plus_pe(token: str, i: int, e_row: Sequence[float], p_row: Sequence[float],
              positional: str) -> str:
    r"""``x_i = E[t_i] + p_i`` for one token, with numbers.

    >>> "x_{2}" in x_plus_pe("a", 2, [1.0], [0.5], "learned")
    True
    """
    e, p = np.asarray(e_row, np.float64), np.asarray(p_row, np.float64)
    name = {"learned": r"P_{i,:}\ \text{(learned)}", "sinusoidal": r"\text{sinusoidal } p_i",
            "none": r"0\ \text{(no positions)}"}.get(positional, "p_i")
    return (r"\begin{aligned}"
            rf"x_{{{i}}} &= E[{tex_text(token, 16)}] + p_{{{i}}},\qquad p_i = {name} \\"
            rf"&= {vector(e)} + {vector(p)} \\"
            rf"&= {vector(e + p)}"
            r"\end{aligned}")


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
        rf"&\text{{query }} i = {i}\ ({tex_text(query, 12)}),\quad d_k = {d_k},\quad "
        rf"m = \max_j s_{{{i},j}} = {num(shift)}\\"
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
        rf"\max|\Delta| &= {num(delta_renorm)}\ \ (S = XX^\top),\qquad {num(delta_head)}\ \ "
        rf"(S = QK^\top/\sqrt{{d_k}},\ \text{{layer {layer}, head {head}}})"
        r"\end{aligned}"
    )


def sdpa_check(delta: dict[str, float], n_layer: int) -> str:
    r"""Max |Δ| between our explicit attention and torch's ``scaled_dot_product_attention``.

    >>> "10^{-7}" in sdpa_check({"pattern": 1e-7, "Z": 2e-7}, 2)
    True
    """
    return (
        r"\max_{\ell < " + str(n_layer) + r",\,h,\,i,\,j}\big|W^{\text{ours}}_{ij} - "
        r"W^{\text{SDPA}}_{ij}\big| = " + num(delta["pattern"])
        + r",\qquad \max\big|Z^{\text{ours}} - Z^{\text{SDPA}}\big| = " + num(delta["Z"])
    )


def ablation(heads: Sequence[tuple[int, int]], token: str, before: float, after: float,
             tv: float) -> str:
    r"""What ablating heads means, and what it did to the model's top next token.

    >>> "z^{(0,1)}" in ablation([(0, 1)], "a", 0.5, 0.25, 0.3)
    True
    """
    zs = ",\\ ".join(rf"z^{{({ly},{h})}}" for ly, h in heads) or r"\varnothing"
    return (
        rf"{zs} \leftarrow 0:\quad P\big({tex_text(token, 12)}\big):\ {num(before)} \to "
        rf"{num(after)},\qquad \tfrac12 \textstyle\sum_v |P_v - P'_v| = {num(tv)}"
    )
