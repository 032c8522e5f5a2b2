"""One intra-op torch thread for a small model's forward passes (Generation, Learning).

A bundled model's forward pass is ~100 small ops of a few microseconds each. With two
threads each op waits for the second one, and on our 2 cores the browser drawing the
page holds the other core while the script runs: after a "Next token" click in Chromium
the script ran 147 ms with two threads and 39 ms with one (medians of 20 clicks). A large
model (GPT-2 small, 124M parameters) gains from the second thread, so it keeps it.

``torch.set_num_threads`` sets the calling thread's OpenMP count and the default of
threads started later. Sessions may overlap here, so the count to put back is the one
before the first of them entered (a session that entered second would read 1).
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
