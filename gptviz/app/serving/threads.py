"""One intra-op torch thread for a small model's forward passes (Generation, Learning).

A bundled model's forward pass is ~100 ops of a few microseconds each. With two threads each
op waits for the second, and on two cores the browser drawing the page holds the other one:
server CPU per "Next token" click fell from ~290 ms to 63 ms together with one forward pass
per click (benchmarks/LOG.md, "Next token" runs of 2026-11-24). A large model (GPT-2 small) keeps
its threads. ``torch.set_num_threads`` sets the calling thread's count and the default of
threads started later; sessions overlap, so the count put back is the one before the first
of them entered.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import torch

SMALL = 10_000_000  # parameters: below this, one thread

_lock = threading.Lock()
_inside = 0  # forward passes now in a one_thread block, across sessions
_before = 1  # the thread count before the first of them entered


def is_small(model: torch.nn.Module | None) -> bool:
    """Whether ``model`` runs its forward pass on one thread.

    >>> is_small(torch.nn.Linear(10, 10)), is_small(None)
    (True, False)
    """
    return model is not None and sum(p.numel() for p in model.parameters()) < SMALL


@contextlib.contextmanager
def one_thread(model: torch.nn.Module | None) -> Iterator[None]:
    """One intra-op thread while the block runs, if ``model`` is small; else nothing.

    >>> before = torch.get_num_threads()
    >>> with one_thread(torch.nn.Linear(2, 2)):
    ...     torch.get_num_threads()
    1
    >>> torch.get_num_threads() == before
    True
    """
    if not is_small(model):
        yield
        return
    global _inside, _before
    with _lock:
        if _inside == 0:
            _before = torch.get_num_threads()
        _inside += 1
        torch.set_num_threads(1)
    try:
        yield
    finally:
        with _lock:
            _inside -= 1
            torch.set_num_threads(_before)  # this thread's count; the others keep theirs
