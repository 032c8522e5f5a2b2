"""Heatmaps drawn on a ``<canvas>``: the same plotly figure, without plotly.js in the page.

A figure whose traces are all heatmaps is sent as its plotly JSON to a small component
(``heatcanvas.js`` with ``heatcanvas_paint.js``, styled by ``heatcanvas.css``) that draws
what the JSON holds: cells with their colour scale and range, gaps, subplots, token ticks,
titles, annotations, rectangles, colour bars, text in cells and each cell's hover text, and
a PNG button as plotly's modebar has (``png.js``).
A bare page with a 32 × 32 heatmap loads in 1.00× a bare page's time this way, 1.96× with
plotly (benchmarks/LOG.md, "Heatmaps on a canvas"). In stock mode (``heatcanvas`` off) the
figure goes to ``st.plotly_chart``. Tests read it back the same way either way
(``tests.helpers.figures``).
"""

from __future__ import annotations

import json
import weakref
from typing import Any

import plotly.graph_objects as go
import streamlit as st

from gptviz.app.shared.ticks import thin_ticks
from gptviz.app.speedups import stock
from gptviz.app.speedups.component import component
from gptviz.app.speedups.mount import mount, plotly_chart, separators
from gptviz.i18n import _

NAME = "gptviz.heatmap"
HTML = ('<div class="gv-heat"><div class="gv-heat-title"></div><canvas role="img"></canvas>'
        '<div class="gv-heat-tip"></div></div>')
TICKS = 32  # the most token ticks an axis keeps in stock mode (``ticks.thin_ticks``)
_SPECS: dict[int, dict] = {}  # id(figure) -> its JSON, while the figure lives


def drawable(fig: Any) -> bool:
    """Whether the canvas draws ``fig``: a plotly figure whose traces are all heatmaps.

    >>> drawable(go.Figure(go.Heatmap(z=[[1]]))), drawable(go.Figure(go.Scatter(y=[1])))
    (True, False)
    """
    return isinstance(fig, go.Figure) and bool(fig.data) and all(
        t.type == "heatmap" for t in fig.data)


def spec(fig: go.Figure) -> dict:
    """The figure as the JSON plotly.js would get (arrays as typed-array ``bdata``), without
    its template. Figures shared through a cache are read once, not at every rerun.

    >>> spec(go.Figure(go.Heatmap(z=[[1.0, 2.0]])))["data"][0]["type"]
    'heatmap'
    """
    key = id(fig)
    if key not in _SPECS:
        out = json.loads(fig.to_json(validate=False))
        out.get("layout", {}).pop("template", None)
        for trace in out.get("data", []):
            _compact_hover(trace)
        _SPECS[key] = out
        weakref.finalize(fig, _SPECS.pop, key, None)
    return _SPECS[key]


def _compact_hover(trace: dict) -> None:
    """Hover text that need not travel one string per cell: text ``heatmaps.hover_text`` wrote
    (its recipe is in ``meta``; the browser writes the same strings), and rows of one label
    each (sent once per row).

    >>> t = {"customdata": [["a", "a"], ["b", "b"]]}; _compact_hover(t); t["customdata"]
    ['a', 'b']
    """
    custom = trace.get("customdata")
    if not isinstance(custom, list) or not custom:
        return
    if isinstance(trace.get("meta"), dict) and "hover" in trace["meta"]:
        del trace["customdata"]
    elif all(isinstance(row, list) and row and all(c == row[0] for c in row) for row in custom):
        trace["customdata"] = [row[0] for row in custom]


def thin(fig: go.Figure) -> go.Figure:
    """``fig``, or a copy of it with at most ``TICKS`` token ticks per axis.

    >>> from gptviz.app.shared.heatmaps import heatmap
    >>> big = heatmap([[0.0] * 40], [str(i) for i in range(40)])
    >>> len(thin(big).layout.xaxis.tickvals), len(big.layout.xaxis.tickvals)
    (20, 40)
    """
    crowded = any(axis.tickmode == "array" and axis.tickvals is not None
                  and len(axis.tickvals) > TICKS
                  for axis in [*fig.select_xaxes(), *fig.select_yaxes()])
    return thin_ticks(go.Figure(fig), TICKS) if crowded else fig


def draw(fig: go.Figure, key: str | None = None, container=st) -> None:
    """Draw a heatmap-only figure (``drawable``) at full width in ``container``: on the
    canvas, or in stock mode by plotly.js (its token ticks thinned as ``thin`` does, on a
    copy: the figure may be shared through a cache)."""
    if stock.off("heatcanvas"):
        plotly_chart(thin(fig), key, container)
        return
    element = component(NAME, html=HTML, js=("heatcanvas.js", "heatcanvas_paint.js", "png.js"),
                        css=("heatcanvas.css", "png.css"))
    shared = spec(fig)  # the reader's separators on a copy of its top: shared by languages
    figure = {**shared, "layout": {**shared.get("layout", {}), "separators": separators()}}
    mount(element, {"figure": figure, "png": _("Download as PNG")}, key, container)
