"""plotly.js fetched while a page is idle, before its first plotly chart is asked for.

Streamlit loads its plotly chart module (4.6 MB) only when a page first draws a plotly
chart, and evaluates it then. The router mounts ``prefetch_charts`` on every page: a small
component (``prefetch.js``) that, once the page has been still for ``AFTER_MS`` and the
browser is idle, imports that same module once per tab, so Streamlit's own import finds it
loaded. The Lesson's first plotly chart, revealed after 6 s in a new tab, went from 1.69 s
to 0.57 s (benchmarks/LOG.md, "The first plotly chart of a tab, on Reveal"). It reads the
module's file name from Streamlit's static files: off in stock mode, or when that file or
a checked Streamlit release is not found.
"""

from __future__ import annotations

import functools
from pathlib import Path

import streamlit as st

from gptviz.app.speedups import guard, stock
from gptviz.app.speedups.component import component

NAME = "gptviz.prefetch"
KEY = "gv-prefetch"  # the element's key: widgets.FORMULA_CSS hides its (empty) container
AFTER_MS = 3000  # the page unchanged this long (ms), then an idle moment: fetch
STREAMLIT = ("1.67",)  # releases whose static files were checked


def static_js() -> Path:
    """Streamlit's folder of JavaScript chunks."""
    return Path(st.__file__).parent / "static" / "static" / "js"


@functools.cache
def plotly_chunk() -> str | None:
    """The file name of Streamlit's plotly chart module (``PlotlyChart.<hash>.js``), or
    None, with one log line, if this Streamlit is not one checked or has no such file."""
    if not guard.fits("prefetch", streamlit=STREAMLIT):
        return None
    found = sorted(static_js().glob("PlotlyChart.*.js"))
    if len(found) != 1:
        guard.switch_off("prefetch", f"{len(found)} files PlotlyChart.*.js in {static_js()}")
        return None
    return found[0].name


def prefetch_charts() -> None:
    """Fetch plotly.js in this tab once the page is idle (once per tab; nothing in stock
    mode or if Streamlit's plotly module is not found)."""
    if stock.off("prefetch"):
        return
    chunk = plotly_chunk()
    if chunk:
        component(NAME, js="prefetch.js")(key=KEY, data={"chunk": f"./{chunk}",
                                                         "after": AFTER_MS})
