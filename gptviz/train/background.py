"""The thread, the stop flag and the trainer slot that every background job shares.

A job (a Training-page run, the Positional page's retrain) runs in a daemon thread once
it holds one of the server's ``TrainerSlots``. Its final state is published after the
slot is released and everything it held is let go: once a page sees a final status,
nothing of the job changes any more.

>>> class Square(SlotJob):
...     def _work(self): return self.n * self.n
...     def _finish(self, result): self.result = result
>>> job = Square(TrainerSlots(1), "square"); job.n = 7
>>> job.start(); job.join(), job.result
(True, 49)
"""

from __future__ import annotations

import threading
from typing import Any

import torch

from gptviz.train.slots import TrainerSlots


class SlotJob:
    """Run ``_work`` in a daemon thread inside one trainer slot, on ``threads`` torch
    threads; ``_cancelled`` if stopped while queued, ``_finish(result)`` after the slot
    is released. ``_work`` catches its own errors and returns what ``_finish`` publishes."""

    def __init__(self, slots: TrainerSlots, name: str, threads: int = 1) -> None:
        self.slots, self.threads = slots, threads
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Ask the thread to end after the current step (or to leave the queue)."""
        self._stop.set()

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the thread; True if it has ended."""
        if self._thread.ident is not None:
            self._thread.join(timeout)
        return not self._thread.is_alive()

    def _main(self) -> None:
        if self.threads:
            torch.set_num_threads(self.threads)  # two busy threads on 2 cores thrash otherwise
        if not self.slots.acquire(self._stop):
            self._cancelled()
            return
        result = None  # what _finish gets if _work is interrupted by an exception it let pass
        try:
            result = self._work()
        finally:
            self._release()
            self.slots.release()
            self._finish(result)

    def _work(self) -> Any:
        raise NotImplementedError

    def _release(self) -> None:
        """Let go of what the work held (runs before the slot is released)."""

    def _cancelled(self) -> None:
        """Stopped before a slot was free."""

    def _finish(self, result: Any) -> None:
        """Publish the final state (``result`` is None if ``_work`` raised); runs last, after
        the slot is released."""
