"""Words inside a formula, in the reader's language: a translated sentence set in KaTeX
with its math in place, so that no translation can break the formula around it."""

from __future__ import annotations

import string

from gptviz.app.shared.tex import tex_escape


def words(message: str, **math: str) -> str:
    r"""A sentence (already translated) inside a formula: its words as ``\text{…}``, every
    TeX special in them escaped (no translation can break the formula), each ``{name}`` set
    as the math ``math[name]``.

    >>> words("the mass of {S}", S="S"), words("50% of {k} best", k="k")
    ('\\text{the mass of } S ', '\\text{50\\% of } k \\text{ best}')
    """
    out = []
    for literal, field, _spec, _conv in string.Formatter().parse(message):
        if literal:
            out.append(r"\text{" + tex_escape(literal) + "}")
        if field is not None:
            out.append(" " + math[field] + " ")
    return "".join(out)
