"""Heatmaps drawn on a ``<canvas>``: the same plotly figure, without plotly.js in the page.

A page that draws one plotly chart makes the browser fetch and evaluate plotly.js (4.6 MB);
in our page benchmark that alone took a bare page to about 2× its load time. Most of our
figures are heatmaps, and a heatmap is a picture: one pixel per cell, scaled up. So a
figure whose traces are all heatmaps is sent as its plotly JSON to a small
``st.components.v2`` component (``heatcanvas_js`` and ``heatcanvas_paint_js``, ~440 lines of
JavaScript, nothing downloaded), which
draws exactly what the JSON holds: the cells with their colour scale and range (``zmin``,
``zmax``, ``zmid``, a shared ``coloraxis``), NaN cells as gaps showing ``plot_bgcolor``,
subplot domains, token tick labels (every k-th when crowded, turned when long), axis and
figure titles, annotations, rectangle shapes, colour bars (vertical or horizontal), cell
gaps, square cells under ``scaleanchor``, text in cells, and the hover text of
``hovertemplate`` filled in per cell. Margins grow to hold the labels, as plotly's
automargin does; the title is HTML above the canvas.

The figure itself is not changed; tests read it back from the page (``tests.helpers.figures``)
just as they read a plotly chart's.
"""

from __future__ import annotations

import functools
import json
import weakref
from collections.abc import Callable
from typing import Any

import plotly.graph_objects as go
import streamlit as st

from gptviz.app.shared import heatcanvas_js, heatcanvas_paint_js
from gptviz.app.shared.mount import mount

NAME = "gptviz.heatmap"
_HTML = ('<div class="gv-heat"><div class="gv-heat-title"></div><canvas role="img"></canvas>'
         '<div class="gv-heat-tip"></div></div>')
_CSS = """
.gv-heat{position:relative;width:100%;font-family:inherit;color:inherit}
.gv-heat canvas{display:block}
.gv-heat-title{font-weight:600;font-size:1rem;line-height:1.3;padding:.25rem .5rem 0}
.gv-heat-title:empty{display:none}
.gv-heat-tip{display:none;position:absolute;pointer-events:none;z-index:5;white-space:pre;
font-size:13px;line-height:1.35;padding:.3rem .5rem;border-radius:.3rem;
background:rgba(38,39,48,.92);color:#fff;box-shadow:0 2px 6px rgba(0,0,0,.25)}
"""
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


@functools.cache
def _component() -> Callable[..., Any]:
    return st.components.v2.component(NAME, html=_HTML, css=_CSS,
                                      js=heatcanvas_js.JS + heatcanvas_paint_js.JS,
                                      isolate_styles=False)


def draw(fig: go.Figure, key: str | None = None, container=st) -> None:
    """Draw a heatmap-only figure (``drawable``) at full width in ``container``."""
    mount(_component(), {"figure": spec(fig)}, key, container)
