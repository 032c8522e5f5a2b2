"""Two things about sessions Streamlit has no public way to do.

Whether this thread is running a session's script: what the per-session language
(``gptviz/app/shared/language.py``) needs to know before it reads ``st.session_state``, which
on any other thread (a trainer's, a prefetch) warns and finds nothing. Its
``get_script_run_ctx`` (a private module, present in 1.67) answers. If that import ever
fails, the answer is "a runtime exists", public, and the language is then read wherever a
session is running.

Ending the disconnected sessions it no longer keeps (``end_expired_sessions``, called once
a class has left: ``serving/sessions.py``): Streamlit 1.67 never shuts them down. Off, with
one log line, on another release or where its private names have moved.
"""

from __future__ import annotations

import contextlib
import logging
import threading

import streamlit as st

from gptviz.app.serving.sessions import when_idle
from gptviz.app.speedups import guard

STREAMLIT = ("1.67",)  # the releases ``end_expired_sessions`` was checked with
ENDING_S = 10.0  # at most this long for the runtime's loop to end the expired sessions
_LOG = logging.getLogger(__name__)

try:
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx
except ImportError:  # a Streamlit that moved it: the public approximation below
    get_script_run_ctx = None


def in_script_run() -> bool:
    """True on a thread that runs a session's script (or its callbacks and fragments)."""
    if get_script_run_ctx is None:
        return st.runtime.exists()
    return get_script_run_ctx(suppress_warning=True) is not None


def end_expired_sessions() -> int:
    """Shut down the disconnected sessions Streamlit no longer keeps, and empty their state.

    Its store of them hides an expired one from reads but drops it only at its next write
    (``streamlit/runtime/caching/ttl_cache.py``), and never shuts it down (``close_session``
    looks through the store, which no longer shows it): the session's last run's media files
    and dataframe sources stayed in the server, and its state (widgets, generation histories
    with their KV caches), which the runtime's send loop still reaches through the last
    session it flushed. How many were ended."""
    if not guard.fits("end_expired_sessions", streamlit=STREAMLIT, names=(
            "streamlit.runtime.runtime:Runtime._get_async_objs",
            "streamlit.runtime.caching.ttl_cache:TTLCache.expire")):
        return 0
    try:
        from streamlit.runtime import Runtime
        runtime = Runtime.instance()
        manager = runtime._session_mgr
        kept = manager._session_storage._cache
        loop = runtime._get_async_objs().eventloop
    except Exception:  # no runtime (a bare script), or another Streamlit's layout
        return 0
    with getattr(manager, "_storage_lock", None) or contextlib.nullcontext():
        expired = kept.expire()
    if expired:
        ended = threading.Event()

        def end() -> None:  # on the runtime's loop, as Streamlit closes a session
            try:
                for _id, info in expired:
                    _end(info.session)
            finally:
                ended.set()

        loop.call_soon_threadsafe(end)
        ended.wait(ENDING_S)  # then the collection and trim see what they held
    return len(expired)


when_idle(end_expired_sessions)  # first of the stores emptied when the class has left


def _end(session) -> None:
    try:
        session.shutdown()
        state = session.session_state
        state.clear()  # values and widgets' states, but not the widgets' callbacks and args:
        getattr(getattr(state, "_new_widget_state", None), "widget_metadata", {}).clear()
    except Exception:  # one session that fails to end leaves the others to end
        _LOG.exception("ending an expired session failed")
