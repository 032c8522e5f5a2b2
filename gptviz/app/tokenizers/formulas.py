"""LaTeX for the formulas the pages show, filled in with live values.

Everything returns a string for ``st.latex`` (KaTeX); token text is escaped
and its whitespace made visible.
"""

from __future__ import annotations

from gptviz.app.shared.tex import STRUT, grouped, tex_escape, tex_text
from gptviz.i18n import ngettext
from gptviz.tokenizers.base import TokenInfo


def _token_box(tok: TokenInfo) -> str:
    label = f"‹{tok.bytes.hex()}›" if tok.partial else tok.string
    return r"\fbox{$" + STRUT + tex_text(label, 16) + "$}"


def tokenizer_map(text: str, tokens: list[TokenInfo], vocab_size: int, shown: int = 7) -> str:
    """``T(text) = (t_1, …, t_N) = (id_1, …, id_N) ∈ Seq(V)`` for the live text."""
    more = len(tokens) > shown
    boxes = ",\\,".join(_token_box(t) for t in tokens[:shown]) + (r",\,\dots" if more else "")
    ids = ", ".join(str(t.id) for t in tokens[:shown]) + (r", \dots" if more else "")
    return (
        r"\begin{aligned}"
        rf"T\big({tex_text(text, 28)}\big) &= \big({boxes}\big) \\"
        rf"&= \big({ids}\big) \in \mathrm{{Seq}}(V) \\"
        rf"N &= {len(tokens)}\ \text{{{tex_escape(ngettext('token', 'tokens', len(tokens)))}}},"
        rf"\quad |V| = {grouped(vocab_size)}"
        r"\end{aligned}"
    )


def one_hot_formula(tokens: list[TokenInfo], vocab_size: int, shown: int = 4,
                    dropped: int = 0) -> str:
    r"""``OH(t_i) = e_{id}``: each row a standard basis vector of ``R^{|V|}``.

    The one-hot matrix ``X ∈ {0,1}^{N×|V|}`` has these vectors as rows. ``tokens`` are those
    the model reads; ``dropped`` earlier ones of the text fell out of its window (the rows
    keep the text's numbering, t_{dropped+1} first).
    """
    lines = []
    for i, tok in enumerate(tokens[:shown], start=dropped + 1):
        before = r"0,\dots,0," if tok.id > 0 else ""
        after = r",0,\dots,0" if tok.id < vocab_size - 1 else ""
        lines.append(
            rf"\mathrm{{OH}}(t_{{{i}}}) = e_{{{tok.id}}} &= "
            rf"({before}\underset{{{tok.id}}}{{1}}{after}) \in \mathbb{{R}}^{{{vocab_size}}}"
        )
    if len(tokens) > shown:
        lines.append(r"&\ \ \vdots")
    n = len(tokens)
    lines.append(
        rf"X = \begin{{pmatrix}} e_{{{tokens[0].id}}}^\top \\ \vdots \\ e_{{{tokens[-1].id}}}^\top"
        rf" \end{{pmatrix}} &\in \{{0,1\}}^{{{n} \times {vocab_size}}},\quad X_{{ij}} = "
        r"[\,j = \mathrm{id}(t_i)\,]"
    )
    return r"\begin{aligned}" + r" \\ ".join(lines) + r"\end{aligned}"


