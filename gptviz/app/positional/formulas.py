"""The Positional page's LaTeX: one sinusoid value worked out, and X + PE for one token."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from gptviz.app.shared.tex import between, num, tex_text, vector, words
from gptviz.i18n import _


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


def x_plus_pe_formula(token: str, i: int, e_row: Sequence[float], p_row: Sequence[float],
              positional: str) -> str:
    r"""``x_i = E[t_i] + p_i`` for one token, with numbers.

    >>> "x_{2}" in x_plus_pe_formula("a", 2, [1.0], [0.5], "learned")
    True
    """
    e, p = np.asarray(e_row, np.float64), np.asarray(p_row, np.float64)
    name = {"learned": r"P_{i,:}\ " + words(_("(learned)")),
            "sinusoidal": words(_("sinusoidal")) + r"\ p_i",
            "none": r"0\ " + words(_("(no positions)")),
            "rope": r"0\ " + words(_("(RoPE turns q and k instead)"))}[positional]
    return (r"\begin{aligned}"
            rf"x_{{{i}}} &= E[{tex_text(token, 16)}] + p_{{{i}}},\qquad p_i = {name} \\"
            rf"&= {vector(e)} + {vector(p)} \\"
            rf"&= {vector(e + p)}"
            r"\end{aligned}")


def shift_identity(i: int, j: int, d: int, lhs: float, rhs: float, max_dev: float) -> str:
    r"""``PE_i · PE_j = Σ_k cos(ω_k (i − j))`` with the live i, j, both sides and the largest
    deviation over the whole matrix. An odd d keeps its lone sine column as an extra term.

    >>> tex = shift_identity(3, 10, 64, 20.5, 20.5, 5.7e-14)
    >>> r"\cos\big(\omega_k (i - j)\big)" in tex and "PE_{3} \\cdot PE_{10}" in tex
    True
    """
    last = d // 2 - 1
    lone = (rf" + \sin(\omega_{{{d // 2}}} i)\sin(\omega_{{{d // 2}}} j)" if d % 2 else "")
    return (
        r"\begin{aligned}"
        rf"PE_i \cdot PE_j &= \sum_{{k=0}}^{{{last}}} \big(\sin(\omega_k i)\sin(\omega_k j)"
        rf" + \cos(\omega_k i)\cos(\omega_k j)\big){lone} \\"
        rf"&= \sum_{{k=0}}^{{{last}}} \cos\big(\omega_k (i - j)\big){lone},\qquad "
        rf"\omega_k = 10000^{{-2k/d}},\ d = {d} \\"
        rf"PE_{{{i}}} \cdot PE_{{{j}}} &= {num(lhs, 6, sci=False)},\qquad "
        rf"\sum_{{k=0}}^{{{last}}} \cos\big(\omega_k \cdot ({i - j})\big) = "
        rf"{num(rhs, 6, sci=False)} \\"
        rf"\max_{{i,j}}\Big|PE_i \cdot PE_j - \sum_k \cos\big(\omega_k (i - j)\big)\Big| &= "
        rf"{num(max_dev, 3)}\quad " + words(_("(float64, all pairs)"))
        + r"\end{aligned}"
    )


def rope_rotation(n: int, d_head: int) -> str:
    r"""RoPE's rotation of pair m of a head's q (and k) at position p, and where it acts.

    >>> r"\theta_m = 10000^{-2m/d_k}" in rope_rotation(64, 32)
    True
    """
    return (
        r"\begin{pmatrix} q'_{p,2m} \\ q'_{p,2m+1} \end{pmatrix} = "
        r"\begin{pmatrix} \cos p\theta_m & -\sin p\theta_m \\ \sin p\theta_m & \cos p\theta_m"
        r"\end{pmatrix} \begin{pmatrix} q_{p,2m} \\ q_{p,2m+1} \end{pmatrix},\qquad "
        rf"\theta_m = 10000^{{-2m/d_k}},\ 0 \le m < d_k/2 = {d_head // 2},\ "
        rf"0 \le p < N = {n}"
    )


def rope_pair(token: str, p: int, q: Sequence[float], q_rot: Sequence[float]) -> str:
    r"""Pair m = 0 of the q of the token at position p, turned by p·θ_0 = p radians, with the
    live numbers.

    >>> "&= (0.540,\\ 0.841)" in rope_pair("a", 1, [1.0, 0.0], [0.5403, 0.8414])
    True
    """
    c, s, sep = float(np.cos(p)), float(np.sin(p)), between()
    return (
        r"\begin{aligned}"
        rf"&{words(_('position {p}:').format(p=p))}\ {tex_text(token, 16)},\qquad "
        r"\theta_0 = 10000^0 = 1 \\"
        rf"(q'_{{{p},0}},\ q'_{{{p},1}}) &= (q_{{{p},0}} \cos {p}\theta_0 - q_{{{p},1}} "
        rf"\sin {p}\theta_0,\ \ q_{{{p},0}} \sin {p}\theta_0 + q_{{{p},1}} \cos {p}\theta_0) \\"
        rf"&= ({num(q[0])} \cdot ({num(c)}) - ({num(q[1])}) \cdot ({num(s)}){sep}\ "
        rf"{num(q[0])} \cdot ({num(s)}) + ({num(q[1])}) \cdot ({num(c)})) \\"
        rf"&= ({num(q_rot[0])}{sep}{num(q_rot[1])})"
        r"\end{aligned}"
    )


def rope_relative(i: int, j: int, d_head: int, lhs: float, rhs: float, max_dev: float) -> str:
    r"""(R_i q)·(R_j k) = Σ_m [a_m cos((i − j)θ_m) + b_m sin((i − j)θ_m)] with the live
    i, j, both sides and the largest deviation over every pair of positions.

    >>> tex = rope_relative(5, 2, 16, 1.25, 1.25, 1e-15)
    >>> "(i - j)" in tex and "\\cdot 3" in tex
    True
    """
    last = d_head // 2 - 1
    return (
        r"\begin{aligned}"
        r"q_i \cdot k_j = (R_i q)\cdot(R_j k) &= q \cdot R_{j-i}\, k = "
        rf"\sum_{{m=0}}^{{{last}}} \big[a_m \cos\big((i - j)\theta_m\big) "
        r"+ b_m \sin\big((i - j)\theta_m\big)\big] \\"
        r"a_m &= q_{2m}k_{2m} + q_{2m+1}k_{2m+1},\qquad b_m = q_{2m}k_{2m+1} - q_{2m+1}k_{2m}"
        r" \\"
        rf"\theta_m &= 10000^{{-2m/d_k}},\qquad d_k = {d_head} \\"
        rf"(R_{{{i}}} q)\cdot(R_{{{j}}} k) &= {num(lhs, 6, sci=False)},\qquad \sum_m \big[a_m "
        rf"\cos(\theta_m \cdot {i - j}) + b_m \sin(\theta_m \cdot {i - j})\big] = "
        rf"{num(rhs, 6, sci=False)}"
        r" \\"
        r"\max_{i,j}\big|(R_i q)\cdot(R_j k) - \textstyle\sum_m[\dots](i - j)\big| &= "
        rf"{num(max_dev, 3)}\quad " + words(_("(float64, all pairs)"))
        + r"\end{aligned}"
    )
