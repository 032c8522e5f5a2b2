"""LaTeX helpers every page shares: numbers, vectors and text set safely inside KaTeX.

Numbers are written as the reader's language writes them (``numbers``, re-exported here:
the decimal comma in Spanish, semicolons between a vector's entries).
"""

from __future__ import annotations

import html
import re
import unicodedata

from gptviz.app.shared.chips import visible
from gptviz.app.shared.numbers import (  # noqa: F401 - the pages' imports
    addends,
    between,
    grouped,
    localized,
    num,
    percent,
    percent_tex,
    vector,
)
from gptviz.i18n import ngettext

_SUBSCRIPT = re.compile(r"(?<![A-Za-z])([A-Za-z])_([A-Za-z0-9])(?![A-Za-z0-9])")


def html_subscripts(text: str) -> str:
    """Authored plain text (a chart's title, never a token) escaped for HTML, with the seeds'
    one-letter subscripts set as subscripts: P_T, e_y, x_t.

    >>> html_subscripts("top 3 of P_T <b>, e_y, max_len")
    'top 3 of P<sub>T</sub> &lt;b&gt;, e<sub>y</sub>, max_len'
    """
    return _SUBSCRIPT.sub(r"\1<sub>\2</sub>", html.escape(text))


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
        s += " " + ngettext("(space)", "({n} spaces)", spaces).format(n=spaces)
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


def words(message: str, **fill: str | int) -> str:
    r"""A sentence (already translated) inside a formula, as ``\text{…}`` with every TeX
    special in its words escaped, so that no translation can break the formula around it.
    A ``{name}`` given in ``fill`` is filled in: a whole number written among the words, a
    string set as math inside the text (``$…$``); any other ``{name}`` is left as it is.

    >>> words("the token at {k}: {pi}", k="k", pi=r"\pi_k")
    '\\text{the token at $k$: $\\pi_k$}'
    >>> words("50% of {n}"), words("left the {k} beams at step {t}", k=3, t="t")
    ('\\text{50\\% of \\{n\\}}', '\\text{left the 3 beams at step $t$}')
    """
    out = []
    for piece in re.split(r"(\{\w+\})", message):
        value = fill.get(piece[1:-1]) if piece[:1] == "{" else None
        if isinstance(value, int):
            out.append(tex_escape(str(value)))
        else:
            out.append(tex_escape(piece) if value is None else f"${value}$")
    return r"\text{" + "".join(out) + "}"

