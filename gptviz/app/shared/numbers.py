"""Numbers as the reader's language writes them: in formulas (KaTeX) and in plain text.

The decimal comma in Spanish is set as ``{,}`` inside KaTeX, so that no space follows it, and
a tuple's entries are then separated by semicolons, (0{,}25;\\ 1{,}5), as Spanish textbooks
write them; thousands are grouped with the language's sign. English is the default (the
doctests' output). ``tex`` re-exports these for the pages.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from decimal import ROUND_HALF_UP, Decimal
from functools import lru_cache

from gptviz import i18n

# How a decimal or thousands sign is set in KaTeX: a comma in braces (no space after it),
# the spaces some languages group with as a thin space.
_TEX_SIGNS = {",": "{,}", "\u00a0": r"\,", "\u202f": r"\,", " ": r"\,", "'": "{'}"}


def _tex_sign(sign: str) -> str:
    return _TEX_SIGNS.get(sign, sign)


def localized(text: str) -> str:
    r"""A number written by Python (``1,234.5``: "," groups, "." is the decimal sign) as the
    reader's language writes it, for KaTeX.

    >>> localized("1,234.5")
    '1{,}234.5'
    >>> with i18n.use("es"):
    ...     localized("1,234.5"), localized("-0.25")
    ('1.234{,}5', '-0{,}25')
    """
    dec, group = i18n.separators()
    return "".join(_tex_sign(group) if ch == "," else _tex_sign(dec) if ch == "." else ch
                   for ch in text)


def _plain(v: float, digits: int, sci: bool) -> str:
    """``num`` in Python's own notation (the decimal point), before ``localized``."""
    if math.isinf(v):
        return r"-\infty" if v < 0 else r"\infty"
    if sci and v != 0 and abs(v) < 10 ** -digits:
        mantissa, exp = f"{v:.1e}".split("e")
        return rf"{mantissa} \times 10^{{{int(exp)}}}"
    return f"{v:.{digits}f}"


def num(v: float, digits: int = 3, sci: bool = True) -> str:
    r"""A number for LaTeX: fixed decimals, ``-\infty`` for the mask, tiny values in e-notation;
    the decimal sign the reader's language's (``{,}`` in Spanish).

    >>> num(0.12345), num(float("-inf")), num(2e-7)
    ('0.123', '-\\infty', '2.0 \\times 10^{-7}')
    >>> with i18n.use("es"):
    ...     num(0.12345), num(2e-7)
    ('0{,}123', '2{,}0 \\times 10^{-7}')
    """
    return localized(_plain(float(v), digits, sci))


def vector(values: Sequence[float], shown: int = 4, digits: int = 3) -> str:
    r"""``(v_1, v_2, …, v_d)`` with the first ``shown`` entries, ``\dots`` and the last; where
    the decimal sign is a comma, the entries are separated by semicolons.

    >>> vector([1, 2, 3, 4, 5, 6], shown=2, digits=0)
    '(1,\\ 2,\\ \\dots,\\ 6)'
    >>> with i18n.use("es"):
    ...     vector([0.25, 1.5], digits=2)
    '(0{,}25;\\ 1{,}50)'
    """
    v = [float(x) for x in values]
    parts = [num(x, digits) for x in v[:shown]]
    if len(v) > shown + 1:
        parts += [r"\dots", num(v[-1], digits)]
    elif len(v) == shown + 1:
        parts.append(num(v[-1], digits))
    return "(" + between().join(parts) + ")"


def between() -> str:
    r"""What separates the entries of a tuple of numbers in a formula: ``,\ ``, or ``;\ ``
    where the decimal sign is a comma.

    >>> between()
    ',\\ '
    """
    return r";\ " if i18n.separators()[0] == "," else r",\ "


def addends(values: Sequence[float], digits: int = 3, most: int = 6) -> tuple[list[str], str]:
    """Terms and their total, written so that the terms as shown add up to the total as
    shown: the total is the exact sum to ``digits`` decimals (halves rounded up, as a reader
    rounds), each term to ``digits`` decimals or, where rounded terms would not add up
    (0.215 × 3 = 0.645 for a total of 0.646), to as many more as it takes, up to ``most``. A
    sum closer to a rounding boundary than ``most`` decimals can tell keeps ``most``. Both
    in the reader's notation (``num``).

    >>> addends([0.5, 0.25])
    (['0.500', '0.250'], '0.750')
    >>> addends([0.2153] * 3)
    (['0.2153', '0.2153', '0.2153'], '0.646')
    >>> addends([0.1875, 0.375])  # exactly 0.5625: the reader's 0.563, and terms that give it
    (['0.188', '0.375'], '0.563')
    >>> with i18n.use("es"):
    ...     addends([0.5, 0.25])
    (['0{,}500', '0{,}250'], '0{,}750')
    """
    if not all(math.isfinite(v) for v in values):
        return [num(v, digits, sci=False) for v in values], num(sum(values), digits, sci=False)
    step = Decimal(1).scaleb(-digits)
    shown = sum(Decimal(v) for v in values).quantize(step, ROUND_HALF_UP)  # Decimal(v): exact
    shown = abs(shown) if shown == 0 else shown  # 0.000, never -0.000
    for places in range(digits, max(digits, most) + 1):
        terms = [_plain(float(v), places, sci=False) for v in values]
        if sum(Decimal(t) for t in terms).quantize(step, ROUND_HALF_UP) == shown:
            break
    return [localized(t) for t in terms], localized(f"{shown:.{digits}f}")


def grouped(x: float, digits: int = 0) -> str:
    """A number with its thousands grouped; ``{,}`` keeps KaTeX from spacing the comma.

    >>> grouped(50257), grouped(12345.6, 1)
    ('50{,}257', '12{,}345.6')
    >>> with i18n.use("es"):
    ...     grouped(50257), grouped(12345.6, 1)
    ('50.257', '12.345{,}6')
    """
    return localized(f"{x:,.{digits}f}")


@lru_cache(maxsize=64)
def _percent_space(lang: str) -> str:
    """What stands between a number and "%" in ``lang`` (CLDR): a no-break space in Spanish."""
    if lang == i18n.SOURCE:
        return ""
    try:
        from babel import Locale

        pattern = Locale.parse(lang.replace("-", "_")).percent_formats[None].pattern
    except Exception:  # noqa: BLE001 - a language Babel does not know writes "29.3%"
        return ""
    return "\u00a0" if "\u00a0%" in pattern else ""


def percent(p: float, digits: int = 2) -> str:
    """A probability as every page writes it (a bar's label, a tree's edge, a metric), so
    that a small one still says how small: with |V| = 50,257 most tokens lie under 1 %;
    in the reader's notation (29,3 % in Spanish).

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
    >>> with i18n.use("es"):
    ...     percent(0.2931), percent(1.94e-5)
    ('29,3\u00a0%', '1,9e-5')
    """
    text = _percent(float(p), digits)
    if text == "NaN":
        return text
    text = text.replace(".", i18n.separators()[0])
    return text[:-1] + _percent_space(i18n.current()) + "%" if text.endswith("%") else text


def _percent(p: float, digits: int) -> str:
    """``percent`` in Python's own notation."""
    if math.isnan(p):
        return "NaN"
    if p <= 0:
        return "0%"
    if p >= 0.01:
        return f"{100 * p:.{digits - 1}f}%"
    if p >= 1e-4:
        shown = f"{100 * p:.{digits}g}"
        return _percent(0.01, digits) if float(shown) >= 1 else f"{shown}%"
    mantissa, exp = f"{p:.{digits - 1}e}".split("e")
    if float(f"{mantissa}e{exp}") >= 1e-4:  # 9.99e-5 rounds to 1.0e-4: 0.01 %
        return _percent(1e-4, digits)
    return f"{mantissa}e{int(exp)}"


def percent_tex(p: float, digits: int = 2) -> str:
    r"""``percent`` for KaTeX: the percent sign escaped, powers of ten set as such.

    >>> percent_tex(0.2931), percent_tex(0.004), percent_tex(2.1e-5)
    ('29.3\\%', '0.4\\%', '2.1{\\times}10^{-5}')
    >>> with i18n.use("es"):
    ...     percent_tex(0.2931)
    '29{,}3\\,\\%'
    """
    text = percent(p, digits).replace(",", "{,}")
    if "e" in text and text != "NaN":
        mantissa, exp = text.split("e")
        return rf"{mantissa}{{\times}}10^{{{exp}}}"
    return text.replace("%", r"\%").replace("\u00a0", r"\,")


# A printf field as st.column_config.NumberColumn's ``format`` writes one: "%.4f", "%+.2e".
_PRINTF = re.compile(r"%[-+ 0#]*\d*(?:\.\d+)?[dfeEgG]")
GRID_FORMATS = ("localized", "percent")  # Streamlit's named formats that write a number


def column_text(fmt: str) -> Callable[[float], str] | None:
    """How a data grid's cell shows a number under NumberColumn's ``fmt``, in the reader's
    language: Streamlit writes its formats in the browser's locale (a printf one always with
    the decimal point), not in the page's. A printf format ("%.4f", "%+.2e"), "localized"
    (grouped: a count) or "percent" (the share with ``percent``'s three digits); ``None`` for
    a format this does not write (the grid's own then applies).

    >>> column_text("%.4f")(0.12345), column_text("%+.2e")(-1.5e-5), column_text("%.1f")(4.25)
    ('0.1235', '-1.50e-05', '4.2')
    >>> column_text("localized")(124412160), column_text("percent")(0.25), column_text("dollar")
    ('124,412,160', '25.00%', None)
    >>> with i18n.use("es"):
    ...     column_text("%+.5f")(0.5), column_text("localized")(50257), column_text("percent")(0.25)
    ('+0,50000', '50.257', '25,00\u00a0%')
    """
    def nan_or(write: Callable[[float], str]) -> Callable[[float], str]:
        return lambda v: "NaN" if v != v else write(float(v))

    if fmt == "localized":
        return nan_or(lambda v: i18n.number(v, 0 if v.is_integer() else 3, grouping=True))
    if fmt == "percent":
        return nan_or(lambda v: percent(v, 3))
    field = _PRINTF.search(fmt)
    if field is None:
        return None
    dec = i18n.separators()[0]
    return nan_or(lambda v: fmt[:field.start()] + (field.group() % v).replace(".", dec)
                  + fmt[field.end():])
