"""Character-level tokenizer: one token per Unicode code point."""

from __future__ import annotations

from collections.abc import Iterator

from gptviz.tokenizers.symbols import SymbolTokenizer


class CharTokenizer(SymbolTokenizer):
    """One token per character; the sorted characters first, then the specials.

    >>> t = CharTokenizer(); _ = t.train("banana"); t.encode("nab")   # a=0, b=1, n=2
    [2, 0, 1]
    >>> t.special_tokens
    {'<|BOS|>': 3, '<|EOS|>': 4, '<|UNK|>': 5, '<|PAD|>': 6}
    """

    kind = "char"
    unit = "character"

    @staticmethod
    def split(text: str) -> Iterator[tuple[str, int, int]]:
        for i, ch in enumerate(text):
            yield ch, i, i + 1
