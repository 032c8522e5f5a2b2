"""The wing: everything that replaces or patches Streamlit or plotly, for speed or for a
feature Streamlit lacks. Nothing outside it imports their internals (a test holds that).

``GPTVIZ_STOCK=1`` turns every speed-up off (``stock.py``): the same pages and numbers with
Streamlit's and plotly's own elements, only slower; ``GPTVIZ_STOCK=fold,svgplot`` turns off
just those pieces. A server patch checks the releases and private names it relies on and,
on a mismatch, switches itself off with one log line (``guard.py``). ``install(pages)``,
called once by ``app.py``, installs the server patches. Gains are each piece's own A/B run
in BENCHMARKS.md ("×" is a share of a bare Streamlit page's load time).

Speed-ups (stock mode: the element or behaviour in brackets)
- ``svgplot`` (svgplot, svgaxes, svgbox, svgfigure): bar and line charts as inline SVG
  instead of plotly.js; three charts 1.05× against 2.07× (2026-11-24, 09:43 run).
  Public API only. [``st.plotly_chart`` of the same chart, ``svgfigure``]
- ``heatcanvas``: heatmap-only plotly figures painted on a canvas; a 32 × 32 heatmap 1.00×
  against 1.96× (2026-11-24, 13:52 run). Reads ``Figure.to_json()`` (plotly 6.5, 7.1).
  [``st.plotly_chart``]
- ``choice``: a native ``<select>``; with ``download``, Attention 0.11–0.17× sooner
  (stop 34). [``st.selectbox``]
- ``download``: a CSV button that holds its file (stop 34, with ``choice``).
  [``st.download_button``]
- ``fold``: parts a screen below the top drawn when scrolled to; Learning's cost
  0.24–0.29× (stop 35). [everything drawn at once]
- ``prefetch``: plotly.js loaded while the tab is idle; the Lesson's first chart 1.69 s →
  0.57 s. Streamlit 1.67's ``static/js/PlotlyChart.*.js``. [loaded when first needed]
- ``base_url`` (server): the app's root written into ``index.html``; the websocket opens
  115–155 ms earlier (stop 32). Streamlit 1.67: ``create_streamlit_static_handler`` and its
  ``_StreamlitStaticFiles``, ``window.__streamlit.BACKEND_BASE_URL``; Starlette's
  ``StaticFiles.__call__``. [not patched]
- ``sockets`` (server): ``TCP_NODELAY``; a file on a kept-open connection 44 ms → ~1 ms
  ("Nagle's algorithm"). Streamlit 1.67's ``_bind_socket``. [not set]
- ``fonts`` (server): each page's fonts preloaded through ``base_url``'s insertion; Attention
  0.11–0.13× sooner (stop 33). Streamlit 1.67's ``file_util``, its font file names. [none]

Features Streamlit lacks, kept in stock mode: ``click_button`` (fast clicks are never
merged), ``formula_fit`` (wide formulas fitted to a projector's column), ``png`` (a PNG
button on the SVG charts and canvas heatmaps, as plotly's modebar has; stock mode draws
plotly's) and ``session`` (whether a thread runs a session's script, for the session's
language; Streamlit 1.67's ``get_script_run_ctx``, else public ``st.runtime.exists``). Shared by the
pieces: ``component`` (the one ``st.components.v2`` factory; JavaScript and CSS in ``.js`` and
``.css`` files here), ``mount`` (the same chart twice in a run), ``guard``, ``stock``.
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
