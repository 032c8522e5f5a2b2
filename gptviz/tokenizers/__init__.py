"""Tokenizers: the map T: TEXTS -> Seq(V), four ways.

>>> tok = make_tokenizer("char"); _ = tok.train("hello"); tok.encode("hole")
[1, 3, 2, 0]
"""

from __future__ import annotations

from gptviz.i18n import _
from gptviz.tokenizers.base import TokenInfo, Tokenizer, TokenizerError
from gptviz.tokenizers.bpe import ByteLevelBPE
from gptviz.tokenizers.bpe_train import PATTERNS, Merge
from gptviz.tokenizers.char import CharTokenizer
from gptviz.tokenizers.openai import (
    OPENAI_ENCODINGS,
    TiktokenTokenizer,
    available_encodings,
    load_encoding,
)
from gptviz.tokenizers.ranks import MissingEncoding, read_ranks
from gptviz.tokenizers.specials import BOS, ENDOFTEXT, EOS, PAD, SEED_SPECIALS, UNK
from gptviz.tokenizers.word import WordTokenizer

TRAINABLE = {"char": CharTokenizer, "word": WordTokenizer, "bpe": ByteLevelBPE}


def make_tokenizer(kind: str, **settings) -> Tokenizer:
    """An untrained char/word/bpe tokenizer, or a pretrained OpenAI encoding by name.

    The one place a tokenizer is built from its name: the app, the training page and
    ``python -m gptviz.train`` all come here.

    >>> make_tokenizer("bpe", pattern="none").pattern, make_tokenizer("gpt2").vocab_size
    ('none', 50257)
    """
    if kind in TRAINABLE:
        return TRAINABLE[kind](**settings)
    if kind in OPENAI_ENCODINGS:
        return TiktokenTokenizer(kind)
    raise TokenizerError(_("unknown tokenizer {kind}: use char, word, bpe or an "
                           "OpenAI encoding.").format(kind=repr(kind)))


def train_tokenizer(kind: str, text: str, vocab_size: int | None = None,
                    pattern: str = "gpt2") -> Tokenizer:
    """A char/word/bpe tokenizer trained on ``text`` (``pattern`` is BPE's split).

    >>> train_tokenizer("word", "to be or not to be", vocab_size=7).symbols
    [' ', 'be', 'to']
    """
    tok = make_tokenizer(kind, **({"pattern": pattern} if kind == "bpe" else {}))
    tok.train(text, vocab_size)
    return tok


__all__ = [
    "train_tokenizer",
    "BOS", "EOS", "PAD", "UNK", "ENDOFTEXT", "SEED_SPECIALS", "PATTERNS", "Merge", "TokenInfo",
    "Tokenizer", "read_ranks", "OPENAI_ENCODINGS",
    "TokenizerError", "MissingEncoding", "CharTokenizer", "WordTokenizer", "ByteLevelBPE",
    "TiktokenTokenizer", "available_encodings", "load_encoding", "make_tokenizer", "TRAINABLE",
]
