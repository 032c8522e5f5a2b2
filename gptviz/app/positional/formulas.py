"""The Positional page's LaTeX: one sinusoid value worked out, and X + PE for one token."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from gptviz.app.shared.tex import num, tex_text, vector


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
    name = {"learned": r"P_{i,:}\ \text{(learned)}", "sinusoidal": r"\text{sinusoidal } p_i",
            "none": r"0\ \text{(no positions)}"}.get(positional, "p_i")
    return (r"\begin{aligned}"
            rf"x_{{{i}}} &= E[{tex_text(token, 16)}] + p_{{{i}}},\qquad p_i = {name} \\"
            rf"&= {vector(e)} + {vector(p)} \\"
            rf"&= {vector(e + p)}"
            r"\end{aligned}")
