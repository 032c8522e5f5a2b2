"""Handing memory a computation has freed back to the system.

glibc's ``malloc`` keeps freed blocks inside its heaps (one per thread that allocated:
Streamlit runs each session's script in its own) and returns them only from a heap's top.
Back-propagation and its float64 checks free tens of MB mid-heap, which then stayed in the
server's RSS. ``malloc_trim(0)`` releases every heap's free pages; it runs after such a
computation, not after every script run. The Learning page went from +21 to +2 MB of RSS
(benchmarks/LOG.md, the ``session_rss.py`` run of 2026-11-24, 07:07). Elsewhere than glibc
it does nothing.

glibc also raises its mmap threshold (from 128 kB up to 32 MB) each time a large block is
freed, after which blocks of a few MB come from the heaps, where freed ones leave holes:
GPT-2 small's gradient check (float64 copies of 5–19 MB, made and freed in turn) peaked at
+400 MB of RSS for +210 MB of tensors. ``blocks_mapped_apart`` maps blocks from 8 MB up
apart while such a computation runs (+0.7 s there: each is page-faulted afresh). After
it, the threshold stays fixed at glibc's own ceiling, 32 MB (a threshold set by hand no
longer moves), where the moving one ends up in a server that has freed large tensors.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import threading
from collections.abc import Callable, Iterator
from typing import TypeVar

R = TypeVar("R")


MAPPED_BYTES = 8 * 2**20  # during a churning computation, blocks this large are mapped
HEAP_BYTES = 32 * 2**20  # after it: glibc's ceiling for the threshold it moves itself
_M_MMAP_THRESHOLD = -3  # mallopt's parameter number (malloc.h)
_lock = threading.Lock()
_inside = 0  # computations inside ``blocks_mapped_apart``


@functools.cache
def _libc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name) if name else None
    except OSError:
        return None


def _threshold(size: int) -> None:
    mallopt = getattr(_libc(), "mallopt", None)
    if mallopt is not None:
        mallopt(_M_MMAP_THRESHOLD, size)


@contextlib.contextmanager
def blocks_mapped_apart() -> Iterator[None]:
    """While the block runs (in any thread), blocks from ``MAPPED_BYTES`` up are mappings of
    their own, returned to the system when freed; after the last such block ends, the
    threshold is ``HEAP_BYTES``."""
    global _inside
    with _lock:
        _inside += 1
        if _inside == 1:
            _threshold(MAPPED_BYTES)
    try:
        yield
    finally:
        with _lock:
            _inside -= 1
            if _inside == 0:
                _threshold(HEAP_BYTES)


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
