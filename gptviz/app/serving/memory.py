"""Handing memory a computation has freed back to the system.

glibc's ``malloc`` keeps freed blocks inside its heaps (one per thread that allocated:
Streamlit runs each session's script in its own) and returns them only from a heap's top.
Back-propagation and its float64 checks free tens of MB mid-heap, which then stayed in the
server's RSS. ``malloc_trim(0)`` releases every heap's free pages; it runs after such a
computation, not after every script run. The Learning page went from +21 to +2 MB of RSS
(benchmarks/LOG.md, the ``session_rss.py`` run of 2026-11-24, 07:07). Elsewhere than glibc it
does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
from collections.abc import Callable
from typing import TypeVar

R = TypeVar("R")


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name).malloc_trim if name else None
    except (OSError, AttributeError):  # no C library found, or not glibc
        return None


def give_back() -> bool:
    """Return the free pages of every malloc heap to the system: whether any were."""
    trim = _malloc_trim()
    return bool(trim(0)) if trim is not None else False


def then_give_back(compute: Callable[[], R]) -> Callable[[], R]:
    """``compute`` followed by ``give_back()``: for a cache's compute function, so the
    trim runs once per computed result, not at every hit."""
    def run() -> R:
        try:
            return compute()
        finally:
            give_back()
    return run
