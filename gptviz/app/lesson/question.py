"""What a lesson question is (``Question``: its text, choices, the model's answer and why) and
the helpers its builders share: Markdown-safe text, choices of whole numbers, the word of the
prompt cut into the most tokens. Pure, no Streamlit.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from gptviz.i18n import number
from gptviz.tokenizers.base import TokenInfo

_MARKDOWN = re.compile(r"([\\`*_{}\[\]<>#$~|])")


def md(s: str) -> str:
    r"""Text (a token, a word of the prompt) that Markdown shows as itself, math signs too.

    >>> md("a*b $x$ <i>")
    'a\\*b \\$x\\$ \\<i\\>'
    """
    return _MARKDOWN.sub(r"\\\1", s)


@dataclass(frozen=True)
class Question:
    """One multiple-choice question; ``answer`` indexes the model's answer in ``choices``.

    >>> q = Question("2 + 2?", ("3", "4"), 1, "It is 4."); q.right("4"), q.right("3")
    (True, False)
    """

    text: str  # Markdown
    choices: tuple[str, ...]
    answer: int
    why: str  # Markdown: the model's numbers that decide it
    basis: tuple = ()  # what the question is made of, in no language (see ``key``)

    def right(self, choice: str | None) -> bool:
        return choice == self.choices[self.answer]

    @property
    def key(self) -> str:
        """A fingerprint: a new prompt or model asks a new question, answered afresh; the
        same question in another language keeps it (from ``basis`` when the builder gives
        one: its kind and numbers, the same in every language).

        >>> from dataclasses import replace
        >>> a, b = Question("2 + 2?", ("3", "4"), 1, ""), Question("¿2 + 2?", ("3", "4"), 1, "")
        >>> a.key != b.key, replace(a, basis=(2, 2)).key == replace(b, basis=(2, 2)).key
        (True, True)
        """
        parts = [repr(p) for p in self.basis] if self.basis else [self.text, *self.choices]
        return hashlib.sha1("\x1f".join(parts).encode("utf-8")).hexdigest()[:16]


def numbers(answer: int, others: Sequence[int]) -> tuple[tuple[str, ...], int]:
    """Up to four distinct positive whole numbers, ascending, and where ``answer`` is.

    >>> numbers(3, [1, 2, 4, 5, 7]), numbers(23, [23_552])
    ((('1', '2', '3', '4'), 2), (('23', '23,552'), 0))
    """
    picked = [answer]
    for x in others:
        if x > 0 and x not in picked and len(picked) < 4:
            picked.append(x)
    picked.sort()
    # 23,552 as the text writes it (23.552 in Spanish)
    return tuple(number(x, 0, grouping=True) for x in picked), picked.index(answer)


FULL_STOPS = "。！？；：）"  # a sentence that ends so is followed by the next with no space


def sentences(parts: Sequence[str]) -> str:
    """Sentences (each translated whole) as one paragraph: a space after each, except after
    a full-width stop, as Chinese writes them; empty parts left out.

    >>> sentences(["A b.", "", "C."]), sentences(["甲。", "乙。"])
    ('A b. C.', '甲。乙。')
    """
    out = ""
    for part in filter(None, parts):
        out += ("" if not out or out.endswith(tuple(FULL_STOPS)) else " ") + part
    return out


def longest_word(text: str, tokens: Sequence[TokenInfo]) -> tuple[str, list[TokenInfo]] | None:
    """The word of ``text`` cut into the most tokens (ties: the longest, then the first),
    and the tokens that cover it."""
    words = list(re.finditer(r"\w{2,}", text)) or list(re.finditer(r"\S+", text))
    if not words:
        return None

    def covering(m: re.Match) -> list[TokenInfo]:
        a, b = m.span()
        return [t for t in tokens if t.span[0] < b and t.span[1] > a]

    best = max(words, key=lambda m: (len(covering(m)), len(m.group()), -m.start()))
    return best.group(), covering(best)
