r"""LaTeX for the circuits views of the Attention page: W_QK and W_OV with their shapes, the
score identity with one pair's live terms, the OV circuit in token space, and attention
summed over heads or rolled out over layers.

Every function returns one string for ``st.latex``; token text goes through ``tex_text``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from gptviz.app.shared.tex import addends, num, tex_escape, tex_text
from gptviz.i18n import _

# The four terms of s_ij (times √d_k), in the order they are written.
TERM_TEX = {
    "xWx": r"\hat x_i W_{QK}\, \hat x_j^\top", "xWb": r"\hat x_i W_Q\, b_K^\top",
    "bWx": r"b_Q W_K^\top\, \hat x_j^\top", "bb": r"b_Q\, b_K^\top",
}
# With RoPE: query i turned by R_i and key j by R_j leave R_{j−i} = R_iᵀR_j between them.
ROPE_TERM_TEX = {
    "xWx": r"\hat x_i W_Q R_{j-i} W_K^\top \hat x_j^\top",
    "xWb": r"\hat x_i W_Q R_{j-i} b_K^\top",
    "bWx": r"b_Q R_{j-i} W_K^\top \hat x_j^\top", "bb": r"b_Q R_{j-i} b_K^\top",
}
TERMS_PER_LINE = 8  # heads' weights on one line of the summed entry


def term_tex(rope: bool) -> dict[str, str]:
    """The terms of s_ij as the identity writes them (``ROPE_TERM_TEX`` for a RoPE model)."""
    return ROPE_TERM_TEX if rope else TERM_TEX


def qk_product(bias: bool, rope: bool = False) -> str:
    r"""Inline TeX for the sentence that introduces W_QK: a query times a key, every term the
    model has written out (with biases, the three bias terms beside the bilinear one; with
    RoPE, R_{j−i} in each), so that it equals q_i·k_j as the model computes it.

    >>> qk_product(False)
    'q_i\\cdot k_j = \\hat x_i W_Q W_K^\\top \\hat x_j^\\top'
    >>> r"b_Q\, b_K^\top" in qk_product(True), "R_{j-i}" in qk_product(True, rope=True)
    (True, True)
    """
    terms = dict(term_tex(rope))
    if not rope:
        terms["xWx"] = r"\hat x_i W_Q W_K^\top \hat x_j^\top"  # before W_QK is named
    if not bias:
        lhs = r"R_i(q_i)\cdot R_j(k_j)" if rope else r"q_i\cdot k_j"
        return f"{lhs} = {terms['xWx']}"
    q, k = r"\hat x_i W_Q + b_Q", r"\hat x_j W_K + b_K"
    lhs = (rf"R_i(q_i)\cdot R_j(k_j) = R_i({q})\cdot R_j({k})" if rope
           else rf"q_i\cdot k_j = ({q})({k})^\top")
    return lhs + " = " + " + ".join(terms.values())


def circuit_shapes(d: int, d_k: int, layer: int, head: int) -> str:
    r"""W_QK and W_OV of head (layer, head), each product with its live shapes.

    >>> r"128 \times 128" in circuit_shapes(128, 32, 0, 1)
    True
    """
    def shape(a: int, b: int) -> str:
        return rf"({a} \times {b})"

    return (
        r"\begin{aligned}"
        rf"W_{{QK}} &= W_Q^{{h}}\, (W_K^{{h}})^\top &&{shape(d, d_k)}\,{shape(d_k, d)}"
        rf" = {d} \times {d} \\"
        rf"W_{{OV}} &= W_V^{{h}}\, W_O^{{h}} &&{shape(d, d_k)}\,{shape(d_k, d)}"
        rf" = {d} \times {d},\qquad \ell = {layer},\ h = {head},\ "
        rf"\operatorname{{rank}} \le d_k = {d_k}"
        r"\end{aligned}"
    )


def score_identity(bias: bool, rope: bool = False) -> str:
    r"""s_ij written as the QK circuit plus, where the model has biases, three bias terms;
    with ``rope``, the rotations R_i, R_j of query and key meet as R_{j−i} in each term.

    >>> "b_K" in score_identity(True), "b_K" in score_identity(False)
    (True, False)
    >>> "R_{j-i}" in score_identity(False, rope=True)
    True
    """
    terms = term_tex(rope)
    shown = terms.values() if bias else [terms["xWx"]]
    q, k = (r"\hat x_i W_Q + b_Q", r"\hat x_j W_K + b_K") if bias else (
        r"\hat x_i W_Q", r"\hat x_j W_K")
    lhs = (rf"\frac{{R_i({q})\cdot R_j({k})}}{{\sqrt{{d_k}}}}" if rope
           else rf"\frac{{({q})({k})^\top}}{{\sqrt{{d_k}}}}")
    return rf"s_{{ij}} = {lhs} = \frac{{" + " + ".join(shown) + r"}{\sqrt{d_k}}"


def score_pair(i: int, j: int, terms: Mapping[str, float], d_k: int, page: float,
               rope: bool = False) -> str:
    r"""One pair's terms (each times √d_k, as written in the identity), their sum / √d_k and
    the page's score. ``terms`` holds the terms already divided by √d_k, as
    ``circuits.score_terms`` returns them.

    >>> tex = score_pair(2, 1, {"xWx": 0.5, "bb": 0.25}, 4, 0.75)
    >>> r"\underbrace{1.0000}" in tex and "0.7500" in tex
    True
    """
    root = d_k ** 0.5
    written = term_tex(rope)
    parts = [rf"\underbrace{{{num(terms[k] * root, 4, sci=False)}}}_{{{written[k]}}}"
             for k in written if k in terms]
    total = sum(terms[k] for k in written if k in terms)
    return (rf"s_{{{i},{j}}} = \frac{{1}}{{\sqrt{{{d_k}}}}}\Big[" + " + ".join(parts)
            + rf"\Big] = {num(total, 4, sci=False)},\qquad "
            + r"\text{" + tex_escape(_("page's score:")) + " } "
            + rf"s_{{{i},{j}}} = {num(page, 4, sci=False)}")


def identity_check(exact: float, page: float, tol: float, bias: bool = True,
                   rope: bool = False) -> str:
    r"""The identity's max |Δ|: in float64, and against the page's float32 scores, with
    ``\le`` or ``>`` the tolerance as the numbers are.

    >>> "10^{-15}" in identity_check(2e-15, 3e-6, 1e-5), "b_K" in identity_check(0, 0, 1, False)
    (True, False)
    >>> identity_check(0, 27.6, 1e-5).endswith(r"27.600 > 1.0 \times 10^{-5}")
    True
    """
    q, k = (r"\hat x_i W_Q + b_Q", r"\hat x_j W_K + b_K") if bias else (
        r"\hat x_i W_Q", r"\hat x_j W_K")
    lhs = rf"R_i({q})\cdot R_j({k})" if rope else rf"({q})({k})^\top"
    return (r"\max_{i,j}\Big|\tfrac{" + lhs + r"}{\sqrt{d_k}}"
            r" - \tfrac{[\dots]}{\sqrt{d_k}}\Big| = " + num(exact)
            + r",\qquad \max_{i,j}\big|s^{\text{" + tex_escape(_("page"))
            + r"}}_{ij} - \tfrac{[\dots]}{\sqrt{d_k}}\big|"
            + " = " + num(page) + (r" \le " if page <= tol else " > ") + num(tol))


def ov_formula(source: str, source_id: int, tied: bool, top: str, top_value: float) -> str:
    r"""The OV circuit in token space, with the source token and the largest entry.

    >>> r"W_U = E^\top" in ov_formula("a", 3, True, "b", 1.5)
    True
    """
    w_u = (r"W_U = E^\top\ \text{" + tex_escape(_("(tied)")) + "}" if tied else
           r"W_U\ \text{" + tex_escape(_("(this model's own)")) + "}")
    return (
        rf"\ell_t = \big(E_{{s}}\, W_{{OV}}\, W_U\big)_t,\quad s = {source_id}\ "
        rf"({tex_text(source, 12)}),\quad {w_u};\qquad "
        rf"\max_t \ell_t = \ell_{{{tex_text(top, 12)}}} = {num(top_value, sci=False)}"
    )


def summed_formula(layer: int, n_head: int, i: int, j: int, weights: Sequence[float]) -> str:
    r"""S = Σ_h A^h for one layer, with entry (i, j) written out head by head.

    >>> "= 0.750" in summed_formula(0, 2, 1, 0, [0.5, 0.25])
    True
    >>> summed_formula(0, 12, 1, 0, [0.1] * 12).count(r"\\")  # 12 heads: 8, then 4
    2
    """
    terms, total = addends(weights)  # as shown, the terms add up to the total shown
    heads = r" \\ &\quad + ".join(" + ".join(terms[k: k + TERMS_PER_LINE])
                                 for k in range(0, len(terms), TERMS_PER_LINE))
    return (  # the sum on its own lines: GPT-2 small has 12 heads, GPT-2 XL 25
        rf"\begin{{aligned}}S^{{({layer})}} &= \sum_{{h=0}}^{{{n_head - 1}}} "
        rf"A^{{({layer},h)}},\quad \textstyle\sum_j S^{{({layer})}}_{{ij}} = H = {n_head};"
        rf"\qquad\\ S^{{({layer})}}_{{{i},{j}}} &= {heads} = {total}"
        r"\end{aligned}"
    )


def rollout_formula(n_layer: int, residual: float, row_error: float) -> str:
    r"""Attention rollout (Abnar & Zuidema 2020), with the live check that rows sum to 1.

    >>> r"\tilde A" in rollout_formula(2, 0.5, 1e-16)
    True
    """
    a = num(1 - residual, 1, sci=False)
    r = num(residual, 1, sci=False)
    last = n_layer - 1
    product = (r"\tilde A^{(0)}" if n_layer == 1 else
               rf"\tilde A^{{({last})}} \cdots \tilde A^{{(0)}}")
    return (
        r"\begin{aligned}"
        r"\bar A^{(\ell)} &= \tfrac1H \textstyle\sum_h A^{(\ell,h)},\qquad "
        rf"\tilde A^{{(\ell)}}_{{ij}} = \dfrac{{{a}\,\bar A^{{(\ell)}}_{{ij}} + {r}\,I_{{ij}}}}"
        rf"{{\sum_{{j'}} \big({a}\,\bar A^{{(\ell)}}_{{ij'}} + {r}\,I_{{ij'}}\big)}} \\"
        r"R^{(\ell)} &= \tilde A^{(\ell)} R^{(\ell-1)},\quad R^{(-1)} = I,\qquad "
        rf"R^{{({last})}} = {product},\qquad "
        rf"\max_{{\ell,i}} \big|\textstyle\sum_j R^{{(\ell)}}_{{ij}} - 1\big| = {num(row_error)}"
        r"\end{aligned}"
    )
