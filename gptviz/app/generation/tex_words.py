"""Words inside a formula, in the reader's language: a translated sentence set in KaTeX
with its math in place, so that no translation can break the formula around it."""

from __future__ import annotations

import string

from gptviz.app.shared.tex import tex_escape


class _Others(dict):
    """Fills the whole numbers in, leaves every other ``{name}`` as it is."""

    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def words(message: str, **fill: str | int) -> str:
    r"""A sentence (already translated) inside a formula: its words as ``\text{…}``, every
    TeX special in them escaped (no translation can break the formula). Each ``{name}``
    is ``fill[name]``: a whole number is written among the words, a string is set as math.

    >>> words("the mass of {S}", S="S"), words("50% of {k} best", k="k")
    ('\\text{the mass of } S ', '\\text{50\\% of } k \\text{ best}')
    >>> words("left the {k} beams at step {t}", k=3, t=2)
    '\\text{left the 3 beams at step 2}'
    """
    numbers = {k: v for k, v in fill.items() if isinstance(v, int)}
    if numbers:
        message = message.format_map(_Others(numbers))
    out = []
    for literal, field, _spec, _conv in string.Formatter().parse(message):
        if literal:
            out.append(r"\text{" + tex_escape(literal) + "}")
        if field is not None:
            out.append(" " + str(fill[field]) + " ")
    return "".join(out)
