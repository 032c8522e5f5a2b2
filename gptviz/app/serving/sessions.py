"""Memory handed back when a session leaves, and when the last one has left.

Streamlit keeps a disconnected session for a reconnect (``server.disconnectedSessionTTL``,
120 s by default) but clears its session-scoped resources at once: this session's figures
and results of its own models (``shared.cache``), its trainer, and the ``Lease`` below.
Releasing the lease collects the cycles those leave (a figure, a widget tree) and trims
every malloc heap (``memory.give_back``), a moment later, on a thread of its own: what the
session made would otherwise stay in the server's RSS until another computation trims.

Once no session is left, not even a disconnected one, for ``IDLE_S``, what registered with
``when_idle`` is emptied (Streamlit's expired sessions, which it never shuts down: the wing's
``speedups/session.py``; prompts' results, figures, whole-model results, shared tokenizers),
and ``st.cache_data`` too: the class has gone, and the next one
computes them again (a server naming GPT-2 small: BENCHMARKS.md, "GPT-2 on a teacher's
laptop").
"""

from __future__ import annotations

import gc
import logging
import threading
from collections.abc import Callable

import streamlit as st

from gptviz.app.serving.memory import give_back

_LOG = logging.getLogger(__name__)
TRIM_AFTER_S = 1.0  # after the release: Streamlit drops the session's other references first
IDLE_S = 10.0  # with no session left this long (past Streamlit's keeping of disconnected
# ones, whose widgets and results are then freed), the stores are emptied and heaps trimmed

_lock = threading.Lock()
_live = 0  # leases held: sessions connected
_arrivals = 0  # leases ever made: an idle timer set before the latest arrival does nothing
_clears: list[Callable[[], None]] = []


def when_idle(clear: Callable[[], None]) -> None:
    """Call ``clear()`` once no session has been connected for ``IDLE_S`` (each time)."""
    with _lock:
        _clears.append(clear)


class Lease:
    """Held by a connected session; its release schedules one collection and trim, and,
    if it was the last, the idle check."""

    def __init__(self) -> None:
        global _live, _arrivals
        with _lock:
            _live += 1
            _arrivals += 1

    def close(self) -> None:
        global _live
        with _lock:
            _live -= 1
            last, seen = _live == 0, _arrivals
        _after(TRIM_AFTER_S, collect_and_trim)
        if last:
            _after(_kept_s() + IDLE_S, lambda: empty_if_idle(seen))


def _kept_s() -> float:
    """How long Streamlit keeps a disconnected session for a reconnect."""
    try:
        return float(st.get_option("server.disconnectedSessionTTL"))
    except Exception:  # an option renamed in another Streamlit: its default of 1.67
        return 120.0


def _after(seconds: float, fn: Callable[[], object]) -> None:
    timer = threading.Timer(seconds, fn)
    timer.daemon = True
    timer.start()


def empty_if_idle(seen: int) -> bool:
    """Empty the prompts' stores if no session came since the ``seen``-th lease was made
    and none is connected; then collect and trim. Whether it emptied them."""
    with _lock:
        if _live or _arrivals != seen:
            return False
        clears = list(_clears)
    for clear in (*clears, st.cache_data.clear):
        try:
            clear()
        except Exception:  # one store that fails to empty leaves the others to empty
            _LOG.exception("emptying a store once the class had left failed")
    collect_and_trim()
    return True


def collect_and_trim() -> bool:
    """A full garbage collection, then ``give_back()``: whether any pages were returned."""
    gc.collect()
    return give_back()


@st.cache_resource(scope="session", show_spinner=False, on_release=Lease.close)
def lease() -> Lease:
    """This session's lease (call it on every run: a cache hit after the first)."""
    return Lease()
