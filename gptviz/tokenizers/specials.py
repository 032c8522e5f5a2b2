"""The special tokens' strings, and cutting a text around them."""

from __future__ import annotations

import re
from collections.abc import Iterator

# The seeds' special tokens, in the order their ids are assigned.
BOS, EOS, UNK, PAD = "<|BOS|>", "<|EOS|>", "<|UNK|>", "<|PAD|>"
SEED_SPECIALS: tuple[str, ...] = (BOS, EOS, UNK, PAD)
ENDOFTEXT = "<|endoftext|>"  # GPT-2's one special token, between documents


def split_on_specials(text: str, allowed: set[str]) -> Iterator[tuple[str, int, bool]]:
    """Yield (piece, start, is_special), in order, covering ``text``.

    >>> list(split_on_specials("a<|EOS|>b", {"<|EOS|>"}))
    [('a', 0, False), ('<|EOS|>', 1, True), ('b', 8, False)]
    """
    if not allowed:
        if text:
            yield text, 0, False
        return
    # Longest first, so that a special which is a prefix of another loses.
    pattern = re.compile("|".join(re.escape(s) for s in sorted(allowed, key=len, reverse=True)))
    pos = 0
    for m in pattern.finditer(text):
        if m.start() > pos:
            yield text[pos:m.start()], pos, False
        yield m.group(), m.start(), True
        pos = m.end()
    if pos < len(text):
        yield text[pos:], pos, False
