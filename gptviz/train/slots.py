"""How many trainers run at once in this process, and how fast they have been."""

from __future__ import annotations

import gc
import math
import threading

DEFAULT_FLOPS_PER_S = 90e9  # one thread, bf16: 98-123 GFLOP/s measured (BENCHMARKS.md, training)


class TrainerSlots:
    """At most ``limit`` trainers at once in this process; the rest wait for a slot.

    Also remembers the training speed of finished runs, for time estimates, and keeps
    the heap that existed before training out of the cyclic garbage collector while
    any trainer runs (``gc.freeze``). Streamlit runs a full ``gc.collect`` after every
    script run; with a fragment redrawing twice a second, a full pass over the app's
    ~260k objects (0.2–0.4 s, holding the GIL) would stall the training thread for most
    of each second. Frozen objects are handed back (``gc.unfreeze``) when the last
    trainer ends, so nothing leaks.

    >>> slots = TrainerSlots(1); slots.acquire(threading.Event()), slots.running
    (True, 1)
    """

    def __init__(self, limit: int = 1) -> None:
        if limit < 1:
            raise ValueError(f"the trainer limit must be at least 1, got {limit}.")
        self.limit = limit
        self.running = 0  # jobs holding a slot
        self.waiting = 0  # jobs queued for one
        self.flops_per_s = DEFAULT_FLOPS_PER_S
        self._cond = threading.Condition()

    def acquire(self, stop: threading.Event, poll_s: float = 0.1) -> bool:
        """Wait for a free slot; False if ``stop`` was set first."""
        with self._cond:
            self.waiting += 1
            try:
                while self.running >= self.limit and not stop.is_set():
                    self._cond.wait(poll_s)
                if stop.is_set():
                    return False
                self.running += 1
                if self.running == 1:
                    gc.collect()
                    gc.freeze()
                return True
            finally:
                self.waiting -= 1

    def release(self) -> None:
        with self._cond:
            self.running = max(0, self.running - 1)
            if self.running == 0:
                gc.unfreeze()
            self._cond.notify_all()

    def record_speed(self, flops_per_s: float) -> None:
        """Blend a finished run's sustained FLOP/s into the estimate (moving average)."""
        if math.isfinite(flops_per_s) and flops_per_s > 0:
            self.flops_per_s = 0.5 * self.flops_per_s + 0.5 * flops_per_s
