"""Whether this thread is running a session's script: what the per-session language
(``gptviz/app/shared/language.py``) needs to know before it reads ``st.session_state``, which
on any other thread (a trainer's, a prefetch) warns and finds nothing.

Streamlit has no public way to ask; its ``get_script_run_ctx`` (a private module, present in
1.67) answers. If that import ever fails, the answer is "a runtime exists", public, and the
language is then read wherever a session is running.
"""

from __future__ import annotations

import streamlit as st

try:
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx
except ImportError:  # a Streamlit that moved it: the public approximation below
    get_script_run_ctx = None


def in_script_run() -> bool:
    """True on a thread that runs a session's script (or its callbacks and fragments)."""
    if get_script_run_ctx is None:
        return st.runtime.exists()
    return get_script_run_ctx(suppress_warning=True) is not None
