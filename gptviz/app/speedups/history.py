"""One browser history entry per page or view, not per keystroke (a correctness fix).

Streamlit's frontend pushes a history entry whenever a page's link changes, so Back undid a
typed prompt or a generated token one entry at a time (five Backs did nothing on a
teacher's walk). ``history.js`` wraps ``history.pushState``: a change that keeps the page
and its view (or lesson step) replaces the entry. It depends on Streamlit writing the link
with ``pushState`` (1.67); if it stops doing so, nothing happens. Kept in stock mode: it
fixes behaviour, it does not speed anything up (tests/test_browser_presenter.py).
"""

from __future__ import annotations

from gptviz.app.speedups.component import component


def one_entry_per_view() -> None:
    """Install the wrapper in this browser tab (once; later calls do nothing)."""
    component("gptviz.history", js="history.js")(key="gv_history")
