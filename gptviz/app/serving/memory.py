"""Handing memory a computation has freed back to the system.

glibc's ``malloc`` keeps freed blocks inside its heaps (one per thread that allocated:
Streamlit runs each session's script in its own) and returns them only from a heap's top.
Back-propagation and its float64 checks free tens of MB mid-heap, which then stayed in the
server's RSS. ``malloc_trim(0)`` releases every heap's free pages; it runs after such a
computation, not after every script run. The Learning page went from +21 to +2 MB of RSS
(benchmarks/LOG.md, the ``session_rss.py`` run of 2026-11-24, 07:07). Elsewhere than glibc
it does nothing.

glibc also raises its mmap threshold (from 128 kB up to 32 MB) each time a large block is
freed, after which tensors of a few MB come from the heaps, where freed ones fragment them:
GPT-2 small's gradient check peaked at +416 MB of RSS for +211 MB of tensors. ``fixed_mmap_
threshold`` pins it at ``MMAP_BYTES``, so a block that large is its own mapping, returned
when freed.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
from collections.abc import Callable
from typing import TypeVar

R = TypeVar("R")


MMAP_BYTES = 4 * 2**20  # blocks from this size up are mapped apart from the heaps
_M_MMAP_THRESHOLD = -3  # mallopt's parameter number (malloc.h)


@functools.cache
def _libc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name) if name else None
    except OSError:
        return None


@functools.cache
def fixed_mmap_threshold() -> bool:
    """Pin glibc's mmap threshold at ``MMAP_BYTES`` (once per process): whether it was."""
    mallopt = getattr(_libc(), "mallopt", None)
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_BYTES)) if mallopt is not None else False


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    return getattr(_libc(), "malloc_trim", None)  # None: no C library found, or not glibc


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
