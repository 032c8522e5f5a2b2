"""Word-level tokenizer: words, single punctuation marks and whitespace runs.

Whitespace and punctuation are tokens of their own, so decoding a text made
only of known words gives the text back exactly.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from gptviz.tokenizers.symbols import SymbolTokenizer

# A run of word characters, one other non-space character, or a run of spaces.
WORD_PATTERN = re.compile(r"\w+|[^\w\s]|\s+")


class WordTokenizer(SymbolTokenizer):
    """One token per word, punctuation mark or run of whitespace.

    >>> list(WordTokenizer.split("Hi, you"))
    [('Hi', 0, 2), (',', 2, 3), (' ', 3, 4), ('you', 4, 7)]
    """

    kind = "word"
    unit = "word"

    @staticmethod
    def split(text: str) -> Iterator[tuple[str, int, int]]:
        for m in WORD_PATTERN.finditer(text):
            yield m.group(), m.start(), m.end()
