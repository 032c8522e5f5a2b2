"""Counts in running text: "1 token", "2 tokens", "12,345 tokens"."""

from __future__ import annotations


def count(n: int, noun: str, nouns: str | None = None) -> str:
    """``n`` with thousands grouped, then ``noun`` or its plural (``noun + "s"`` unless given).

    >>> count(1, "token"), count(0, "token"), count(12345, "branch", "branches")
    ('1 token', '0 tokens', '12,345 branches')
    """
    return f"{n:,} {noun if n == 1 else nouns or noun + 's'}"
