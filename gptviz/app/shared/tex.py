"""LaTeX helpers every page shares: numbers, vectors and text set safely inside KaTeX."""

from __future__ import annotations

import html
import math
import re
import unicodedata
from collections.abc import Sequence
from decimal import ROUND_HALF_UP, Decimal

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


def addends(values: Sequence[float], digits: int = 3, most: int = 6) -> tuple[list[str], str]:
    """Terms and their total, written so that the terms as shown add up to the total as
    shown: the total is the exact sum to ``digits`` decimals (halves rounded up, as a reader
    rounds), each term to ``digits`` decimals or, where rounded terms would not add up
    (0.215 × 3 = 0.645 for a total of 0.646), to as many more as it takes, up to ``most``. A
    sum closer to a rounding boundary than ``most`` decimals can tell keeps ``most``.

    >>> addends([0.5, 0.25])
    (['0.500', '0.250'], '0.750')
    >>> addends([0.2153] * 3)
    (['0.2153', '0.2153', '0.2153'], '0.646')
    >>> addends([0.1875, 0.375])  # exactly 0.5625: the reader's 0.563, and terms that give it
    (['0.188', '0.375'], '0.563')
    """
    if not all(math.isfinite(v) for v in values):
        return [num(v, digits, sci=False) for v in values], num(sum(values), digits, sci=False)
    step = Decimal(1).scaleb(-digits)
    shown = sum(Decimal(v) for v in values).quantize(step, ROUND_HALF_UP)  # Decimal(v): exact
    shown = abs(shown) if shown == 0 else shown  # 0.000, never -0.000
    for places in range(digits, max(digits, most) + 1):
        terms = [num(v, places, sci=False) for v in values]
        if sum(Decimal(t) for t in terms).quantize(step, ROUND_HALF_UP) == shown:
            break
    return terms, f"{shown:.{digits}f}"


def grouped(x: float, digits: int = 0) -> str:
    """A number with its thousands grouped; ``{,}`` keeps KaTeX from spacing the comma.

    >>> grouped(50257), grouped(12345.6, 1)
    ('50{,}257', '12{,}345.6')
    """
    return f"{x:,.{digits}f}".replace(",", "{,}")


_SUBSCRIPT = re.compile(r"(?<![A-Za-z])([A-Za-z])_([A-Za-z0-9])(?![A-Za-z0-9])")


def html_subscripts(text: str) -> str:
    """Authored plain text (a chart's title, never a token) escaped for HTML, with the seeds'
    one-letter subscripts set as subscripts: P_T, e_y, x_t.

    >>> html_subscripts("top 3 of P_T <b>, e_y, max_len")
    'top 3 of P<sub>T</sub> &lt;b&gt;, e<sub>y</sub>, max_len'
    """
    return _SUBSCRIPT.sub(r"\1<sub>\2</sub>", html.escape(text))


def percent(p: float, digits: int = 2) -> str:
    """A probability as every page writes it (a bar's label, a tree's edge, a metric), so
    that a small one still says how small: with |V| = 50,257 most tokens lie under 1 %.

    The rule, for ``digits`` = 2: 0 is "0%"; p ≥ 1 % in percent with one decimal ("29.3%",
    "1.0%"); 0.01 % ≤ p < 1 % in percent with two significant digits ("0.45%", "0.02%");
    below 0.01 % in powers of ten with two ("2.1e-5", a probability: no percent sign).
    ``digits`` = 1 is the compact form of narrow places ("29%", "0.5%", "0.02%", "2e-5"),
    3 the finer one of a page that watches P move ("29.31%", "0.452%", "2.06e-5"). A value
    rounded up into the next range is written as that range writes it (0.00999 is "1.0%").

    >>> percent(0.2931), percent(0.0045), percent(0.0002), percent(1.94e-5), percent(0.0)
    ('29.3%', '0.45%', '0.02%', '1.9e-5', '0%')
    >>> percent(0.2931, 1), percent(0.0046, 1), percent(2.1e-7, 1), percent(0.2931, 3)
    ('29%', '0.5%', '2e-7', '29.31%')
    """
    p = float(p)
    if math.isnan(p):
        return "NaN"
    if p <= 0:
        return "0%"
    if p >= 0.01:
        return f"{100 * p:.{digits - 1}f}%"
    if p >= 1e-4:
        shown = f"{100 * p:.{digits}g}"
        return percent(0.01, digits) if float(shown) >= 1 else f"{shown}%"
    mantissa, exp = f"{p:.{digits - 1}e}".split("e")
    if float(f"{mantissa}e{exp}") >= 1e-4:  # 9.99e-5 rounds to 1.0e-4: 0.01 %
        return percent(1e-4, digits)
    return f"{mantissa}e{int(exp)}"


def percent_tex(p: float, digits: int = 2) -> str:
    r"""``percent`` for KaTeX: the percent sign escaped, powers of ten set as such.

    >>> percent_tex(0.2931), percent_tex(0.004), percent_tex(2.1e-5)
    ('29.3\\%', '0.4\\%', '2.1{\\times}10^{-5}')
    """
    text = percent(p, digits)
    if "e" in text and text != "NaN":
        mantissa, exp = text.split("e")
        return rf"{mantissa}{{\times}}10^{{{exp}}}"
    return text.replace("%", r"\%")


# TeX's ten special characters, each spelt so that \text{…} prints it.
# Inside a token's box: a letter's height and depth. KaTeX has no metrics for characters
# outside its fonts (↵, emoji, CJK), takes them as flat, and drew the box below the glyph.
STRUT = r"\vphantom{Ag}"
TEX_ESCAPES = {
    "\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "$": r"\$", "&": r"\&", "#": r"\#",
    "%": r"\%", "_": r"\_", "^": r"\textasciicircum{}", "~": r"\textasciitilde{}",
}
# What \text{} sets as itself: printable ASCII (the specials above are escaped first) and,
# from U+00A0 to U+FFFF, letters, digits, punctuation, symbols, spaces and the marks of a
# script (Devanagari's vowel signs, …), minus what KaTeX refuses in text mode. Rendering
# every BMP code point in \text{} with KaTeX 0.16 (tests/test_tex.py) finds: the control
# characters, private use, U+2028/9, the generic combining accents (an error without a
# base, and KaTeX knows only some), and symbols KaTeX maps to math-only commands (ℭ is
# \mathfrak{C}, ∑ a big operator, ≠ a \mathrel, ‼ a \mathclose). Their whole blocks are
# left out, in case a later KaTeX maps more of them. The astral plane (𝔄, emoji, 𓀀) is
# left out too: KaTeX's fonts lack it and treats U+1D400–U+1D7FF as math letters.
_COMBINING = ((0x0300, 0x036F), (0x1AB0, 0x1AFF), (0x1DC0, 0x1DFF), (0x20D0, 0x20FF),
              (0xFE20, 0xFE2F))
_MATH_ONLY = ((0x203C, 0x203C), (0x2100, 0x214F), (0x2200, 0x23FF), (0x27C0, 0x27E7),
              (0x27EA, 0x27EF), (0x2980, 0x2AFF))
_SETTABLE = ("L", "N", "P", "S", "Zs", "M")


def settable(ch: str) -> bool:
    """Whether KaTeX's ``\\text{}`` can show ``ch`` as itself (TeX specials aside).

    >>> settable("é"), settable("ℭ"), settable("\\U0001d504"), settable("\\u0301")
    (True, False, False, False)
    """
    cp = ord(ch)
    if cp < 0x80:
        return 0x20 <= cp < 0x7F
    if not 0xA0 <= cp <= 0xFFFF or not unicodedata.category(ch).startswith(_SETTABLE):
        return False
    return not any(lo <= cp <= hi for lo, hi in _COMBINING + _MATH_ONLY)


def tex_escape(s: str) -> str:
    r"""``s`` made safe inside ``\text{…}``: TeX specials escaped, and what KaTeX cannot set
    there shown by its code point, e.g. ``⟨U+1D504⟩``.

    NFC first, so that "e" + U+0301 becomes "é" rather than an escaped accent.

    >>> tex_escape("50%_{x}"), tex_escape("\U0001d504e\u0301")
    ('50\\%\\_\\{x\\}', '⟨U+1D504⟩é')
    """
    return "".join(TEX_ESCAPES.get(ch) or (ch if settable(ch) else f"⟨U+{ord(ch):04X}⟩")
                   for ch in unicodedata.normalize("NFC", s))


def tex_text(s: str, max_chars: int = 24) -> str:
    r"""A string as escaped ``\text{…}``, whitespace made visible, shortened with an ellipsis.
    A token of punctuation alone is quoted: a bare "." or ":" in a formula reads as a typo
    (``P(y = :)``, ``cos(E., E_b)``).

    A token of spaces alone says so: “·” beside “.” differs only in the dot's height.

    >>> tex_text("a_b c"), tex_text("."), tex_text(" :")
    ('\\text{a\\_b·c}', '\\text{“.”}', '\\text{“·:”}')
    >>> tex_text(" "), tex_text("   ")
    ('\\text{“·” (space)}', '\\text{“···” (3 spaces)}')
    """
    spaces = len(s) if s and not s.strip(" ") else 0
    s = visible(s)
    if len(s) > max_chars:
        s = s[: max_chars - 1] + "…"
    if s and not any(ch.isalnum() for ch in s):
        s = f"“{s}”"
    if spaces:
        s += " (space)" if spaces == 1 else f" ({spaces} spaces)"
    return r"\text{" + tex_escape(s) + "}"


def tex_running(s: str, max_chars: int = 40) -> str:
    r"""Running text for ``\text{…}``: its tail, escaped, spaces kept, newlines shown as ↵.

    >>> tex_running("a_b\nc", 10), tex_running("abcdef", 4)
    ('\\text{a\\_b↵c}', '\\text{…def}')
    """
    if len(s) > max_chars:
        s = "…" + s[-(max_chars - 1):]
    shown = "".join(ch if ch == " " else visible(ch) for ch in s)
    return r"\text{" + tex_escape(shown) + "}"
