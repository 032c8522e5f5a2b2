"""The wing: everything that replaces or patches Streamlit or plotly, for speed or for a
feature Streamlit lacks. Nothing outside it imports their internals (a test holds that).

``GPTVIZ_STOCK=1`` turns every speed-up off (``stock.py``): the same pages and numbers,
slower; ``GPTVIZ_STOCK=fold,svgplot`` just those pieces. A server patch checks the releases
and private names it relies on and switches itself off with one log line on a mismatch
(``guard.py``). ``install(pages)``, called once by ``app.py``, installs them. Each gain is
a share of a bare page's load, from BENCHMARKS.md, "Each speed-up against stock".

Speed-ups [stock mode's element] and what they rely on:
- ``svgplot`` (+ svgaxes, svgbox, svgfigure): bar and line charts as inline SVG; Training
  +0.23×. Public API only. [``st.plotly_chart``]
- ``heatcanvas``: heatmap-only figures painted on a canvas; Positional +2.0×. Reads
  ``Figure.to_json()``. [``st.plotly_chart``]
- ``choice``: a native ``<select>``; Attention +0.19×. [``st.selectbox``]
- ``download``: a CSV button that holds its file; Attention +0.19×. [``st.download_button``]
- ``fold``: what is below the first screen drawn when scrolled to; Learning +0.69×. [all]
- ``prefetch``: plotly.js loaded while the tab is idle; the Lesson's first chart 0.53×.
  Streamlit 1.67's ``static/js/PlotlyChart.*.js``. [loaded when needed]
- ``base_url`` (server): the app's root written into ``index.html``; Home +0.10×. Streamlit
  1.67's ``create_streamlit_static_handler``, ``_StreamlitStaticFiles``; Starlette's
  ``StaticFiles.__call__``. [not patched]
- ``sockets`` (server): ``TCP_NODELAY``; Attention +0.45×. Streamlit 1.67's
  ``_bind_socket``. [not set]
- ``fonts`` (server): each page's fonts preloaded; Attention +0.28×. Streamlit 1.67's
  ``file_util`` and font file names. [none]

Features Streamlit lacks, kept in stock mode: ``click_button`` (fast clicks never merged),
``formula_fit`` (wide formulas fitted to the column), ``png`` (a PNG button on the SVG and
canvas charts) and ``session`` (whether a thread runs a session's script; Streamlit 1.67's
``get_script_run_ctx``, else ``st.runtime.exists``; and the expired sessions shut down once
a class has left, which Streamlit 1.67 never does: its runtime's, session store's and
``TTLCache.expire``). Shared: ``component`` (the one
``st.components.v2`` factory; JS and CSS in files here), ``mount``, ``guard``, ``stock``.
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
