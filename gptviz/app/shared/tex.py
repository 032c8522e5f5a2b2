"""LaTeX helpers every page shares: numbers, vectors and text set safely inside KaTeX."""

from __future__ import annotations

import math
from collections.abc import Sequence

from gptviz.app.shared.chips import visible


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


def tex_int(n: int) -> str:
    return f"{n:,}".replace(",", "{,}")


_ESCAPES = {
    "\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "$": r"\$", "&": r"\&", "#": r"\#",
    "%": r"\%", "_": r"\_", "^": r"\textasciicircum{}", "~": r"\textasciitilde{}",
}


def tex_text(s: str, max_chars: int = 24) -> str:
    r"""A string as escaped ``\text{…}``, shortened with an ellipsis.

    >>> tex_text("a_b c")
    '\\text{a\\_b·c}'
    """
    s = visible(s)
    if len(s) > max_chars:
        s = s[: max_chars - 1] + "…"
    return r"\text{" + "".join(_ESCAPES.get(ch, ch) for ch in s) + "}"
