"""The Embeddings page's LaTeX: the one-hot lookup OH · E written out with real numbers."""

from __future__ import annotations

from collections.abc import Sequence

from gptviz.app.shared.tex import grouped, tex_text, vector


def embedding_lookup(token: str, token_id: int, vocab_size: int, row: Sequence[float]) -> str:
    r"""``OH(t) = e_id`` and ``e_idᵀ A = A_{id,:}`` with the row's real numbers.

    >>> "A_{17,:}" in embedding_lookup("cat", 17, 100, [0.1, 0.2])
    True
    """
    d = len(row)
    return (
        r"\begin{aligned}"
        rf"\mathrm{{OH}}\big({tex_text(token, 16)}\big) &= e_{{{token_id}}} \in "
        rf"\{{0,1\}}^{{{grouped(vocab_size)}}} \\"
        rf"e_{{{token_id}}}^\top A &= \textstyle\sum_v [v = {token_id}]\, A_{{v,:}} = "
        rf"A_{{{token_id},:}} \\"
        rf"&= {vector(row)} \in \mathbb{{R}}^{{{d}}}"
        r"\end{aligned}"
    )


def embedding_of_one_hot(vocab_size: int) -> str:
    """Why one-hot vectors matter: ``A ∘ OH`` picks a row of the embedding matrix."""
    return (
        rf"\mathrm{{Embedding}} = A \circ \mathrm{{OH}} : V \to \mathbb{{R}}^{{d}},\qquad"
        rf" e_{{i}}^\top A = A_{{i,:}},\quad A \in \mathbb{{R}}^{{{vocab_size} \times d}}"
    )
