"""The wing: everything that replaces or patches Streamlit or plotly, for speed or for a
feature Streamlit lacks. Nothing outside it imports their internals (a test holds that).

``GPTVIZ_STOCK=1`` turns every speed-up off (``stock.py``; ``GPTVIZ_STOCK=fold,svgplot`` just
those): the same pages and numbers, slower. A piece that touches private names checks the
release and names it relies on and switches itself off with one log line on a mismatch
(``guard.py``). ``install(pages)``, called once by ``app.py``, installs the server patches.
The largest gain is the heatmaps' canvas, +2.0× of a bare page's load on Positional; each
piece's is in BENCHMARKS.md, "Each speed-up against stock".

Speed-ups [their stock element]: ``svgplot`` bar and line charts as inline SVG
[``st.plotly_chart``]; ``heatcanvas`` heatmaps on a canvas [``st.plotly_chart``]; ``choice``
a native ``<select>`` [``st.selectbox``]; ``download`` a CSV button holding its file
[``st.download_button``]; ``fold`` what is below the first screen drawn when scrolled to;
``prefetch`` plotly.js loaded while the tab is idle; server patches: ``base_url`` (the app's
root in ``index.html``), ``sockets`` (``TCP_NODELAY``), ``fonts`` (each page's fonts
preloaded).

Features Streamlit lacks, kept in stock mode: ``click_button`` (fast clicks never merged),
``formula_fit`` (wide formulas fitted to the column), ``png`` (a PNG button on the SVG and
canvas charts), ``session`` (whether a thread runs a session's script; the expired sessions
ended once a class has left). Shared: ``component`` (the one ``st.components.v2`` factory),
``mount``, ``guard``, ``stock``.
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
