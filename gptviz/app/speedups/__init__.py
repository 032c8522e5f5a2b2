"""The wing: everything that replaces or patches Streamlit or plotly, for speed or for a
feature Streamlit lacks; nothing outside it imports their internals (a test holds that).

``GPTVIZ_STOCK=1`` turns every speed-up off (``stock.py``), pieces touching private names
switch themselves off on another release (``guard.py``), and ``install(pages)``, called once
by ``app.py``, installs the server patches. Each piece's docstring says what it replaces; the
largest gain, the heatmaps' canvas, is +2.0× of a bare page's load (BENCHMARKS.md, "Each
speed-up against stock", has every piece's). The speed-ups: svgplot, heatcanvas, choice,
download, fold, prefetch; the server patches: base_url, sockets, fonts; kept in stock mode:
click_button, formula_fit, history, png (png.js), session.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

_installed = False
_lock = threading.Lock()


def install(pages: Iterable[str]) -> None:
    """Install every server patch that applies, once per process (later calls do nothing):
    ``TCP_NODELAY``, and ``index.html`` with the
    app's root at the address of each of ``pages`` (url paths, ``""`` the main page) and
    each page's font preloads. In stock mode, or where a patch does not fit, that patch is
    left out; the pages work either way."""
    global _installed
    with _lock:
        if _installed:
            return
        _installed = True
    from gptviz.app.speedups import base_url, fonts, guard, sockets, stock

    def run(piece: str, patch: Callable[[], Any], otherwise: Any = None) -> Any:
        if stock.off(piece):
            return otherwise
        try:
            return patch()
        except Exception as exc:  # a patch that fails is off, and the page goes on
            guard.switch_off(piece, f"it failed: {exc!r}")
            return otherwise

    run("sockets", sockets.no_delay)
    heads = run("fonts", fonts.preloads, {})
    run("base_url", lambda: base_url.serve_base_url(pages, heads))
    if stock.off("base_url") and heads:  # the fonts alone, through the same insertion
        run("fonts", lambda: base_url.serve_base_url((), heads))
