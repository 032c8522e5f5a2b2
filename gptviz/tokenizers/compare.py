"""Measuring tokenizers side by side on one text."""

from __future__ import annotations

from gptviz.tokenizers.base import Tokenizer, TokenizerError
from gptviz.tokenizers.specials import UNK


def compare(text: str, tokenizers: dict[str, Tokenizer]) -> list[dict]:
    """One row per tokenizer: vocabulary, token count, characters per token,
    share of ``<|UNK|>`` tokens and whether decoding gives the text back.

    >>> from gptviz.tokenizers.char import CharTokenizer
    >>> tok = CharTokenizer(); _ = tok.train("ab")
    >>> compare("abc", {"char": tok})[0]
    {'tokenizer': 'char', 'vocab size': 6, 'tokens': 3, 'chars per token': 1.0,
     'UNK rate': 0.3333, 'round trip': False}
    """
    rows = []
    for name, tok in tokenizers.items():
        try:
            ids = tok.encode(text)
            back = tok.decode(ids)
        except TokenizerError as exc:
            rows.append({"tokenizer": name, "vocab size": tok.vocab_size, "error": str(exc)})
            continue
        unk = tok.special_tokens.get(UNK)
        n_unk = sum(1 for i in ids if i == unk) if unk is not None else 0
        rows.append({
            "tokenizer": name,
            "vocab size": tok.vocab_size,
            "tokens": len(ids),
            "chars per token": round(len(text) / len(ids), 3) if ids else 0.0,
            "UNK rate": round(n_unk / len(ids), 4) if ids else 0.0,
            "round trip": back == text,
        })
    return rows
