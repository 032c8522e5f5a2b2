"""Handing memory a computation has freed back to the system (glibc; elsewhere a no-op).

glibc keeps freed blocks inside its heaps: ``give_back`` (``malloc_trim(0)``) releases the free
pages inside every heap but the free top of the main heap only; ``trim_thread_heaps`` makes
every heap hand back a free top past 8 MB (Streamlit's script threads each have one, which
glibc's own thresholds never trimmed); ``blocks_mapped_apart`` maps large blocks apart while a
computation churns them, so they leave no holes. After a GPT-2 class has left the server holds
the model + 228 MB (BENCHMARKS.md, "GPT-2 on a teacher's laptop: memory").
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
TOP_BYTES = 8 * 2**20  # a heap's free top past this is handed back at the next free
_M_TRIM_THRESHOLD = -1  # mallopt's parameter numbers (malloc.h)
_M_MMAP_THRESHOLD = -3
_lock = threading.Lock()
_inside = 0  # computations inside ``blocks_mapped_apart``


@functools.cache
def _libc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name) if name else None
    except OSError:
        return None


def _mallopt(parameter: int, size: int) -> None:
    mallopt = getattr(_libc(), "mallopt", None)
    if mallopt is not None:
        mallopt(parameter, size)


def _threshold(size: int) -> None:
    _mallopt(_M_MMAP_THRESHOLD, size)


@functools.cache
def trim_thread_heaps() -> None:
    """From now on, a heap's free top past ``TOP_BYTES`` is handed back at the next free
    that joins it. Fixing one threshold stops glibc moving both, so the mmap threshold is
    fixed too: at ``HEAP_BYTES`` (the ceiling of glibc's moving, which the first large
    mapped block freed, such as a model's load, reaches), or ``MAPPED_BYTES`` while a
    ``blocks_mapped_apart`` block runs. Once per process."""
    with _lock:
        _threshold(MAPPED_BYTES if _inside else HEAP_BYTES)
        _mallopt(_M_TRIM_THRESHOLD, TOP_BYTES)


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
