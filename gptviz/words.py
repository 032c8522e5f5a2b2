"""Counts in running text: "1 token", "2 tokens", "1,024 entries"."""

from __future__ import annotations


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and its noun, singular or plural as ``n`` asks, with thousands grouped.

    >>> counted(1, "token"), counted(948, "token"), counted(2, "piece"), counted(3, "model")
    ('1 token', '948 tokens', '2 pieces', '3 models')
    >>> counted(1_024, "entry", "entries"), counted(0, "run")
    ('1,024 entries', '0 runs')
    """
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"
