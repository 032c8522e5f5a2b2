"""Memory handed back when a session leaves.

Streamlit keeps a disconnected session for a reconnect (``server.disconnectedSessionTTL``,
120 s by default) but clears its session-scoped resources at once: this session's figures
and results of its own models (``shared.cache``), its trainer, and the ``Lease`` below.
Releasing the lease collects the cycles those leave (a figure, a widget tree) and trims
every malloc heap (``memory.give_back``), a moment later, on a thread of its own: what the
session made would otherwise stay in the server's RSS until another computation trims.
"""

from __future__ import annotations

import gc
import threading

import streamlit as st

from gptviz.app.serving.memory import give_back

TRIM_AFTER_S = 1.0  # after the release: Streamlit drops the session's other references first


class Lease:
    """Held by a connected session; its release schedules one collection and trim."""

    def close(self) -> None:
        timer = threading.Timer(TRIM_AFTER_S, collect_and_trim)
        timer.daemon = True
        timer.start()


def collect_and_trim() -> bool:
    """A full garbage collection, then ``give_back()``: whether any pages were returned."""
    gc.collect()
    return give_back()


@st.cache_resource(scope="session", show_spinner=False, on_release=Lease.close)
def lease() -> Lease:
    """This session's lease (call it on every run: a cache hit after the first)."""
    return Lease()
