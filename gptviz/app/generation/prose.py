"""Sentences put side by side in running text, as each language writes them."""

from __future__ import annotations

WIDE_STOPS = "。！？；：）」』"  # a sentence ending in one of these needs no space after it


def sentences(*parts: str) -> str:
    """The non-empty ``parts`` in order, a space between two unless the first ends with a
    full-width stop (Chinese and Japanese write none there).

    >>> sentences("Done.", "", "It is kept."), sentences("完成。", "已保留。")
    ('Done. It is kept.', '完成。已保留。')
    """
    out = ""
    for part in (p for p in parts if p):
        out += part if not out or out[-1] in WIDE_STOPS else " " + part
    return out
