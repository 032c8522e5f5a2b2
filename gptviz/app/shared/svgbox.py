"""Inline SVG charts (``svgplot``) put into the page as they are, by a small
``st.components.v2`` component that sets the chart's HTML on its own element.

``st.markdown(chart.html, unsafe_allow_html=True)`` draws the same chart, but the browser then
parses the HTML as Markdown, turns it into a syntax tree (rehype-raw) and rebuilds it as one
React element per SVG node, a few hundred per chart. In the page benchmark (6 loads each,
beside a bare page) the Learning page, with three such charts on its first view, went from
1.74x to 1.68x the bare page this way. ``st.html`` would be as cheap, but its sanitiser
(DOMPurify's HTML profile) drops every SVG element. The HTML is built by ``svgplot`` from
numbers, with every text escaped (``svgaxes.esc``), so nothing is sanitised here.

Tests read the chart back from the page (``tests.helpers.svg_charts``) as they read a
heatmap's figure.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import streamlit as st

from gptviz.app.shared.mount import mount
from gptviz.app.shared.svgplot import SvgChart

NAME = "gptviz.svg"
_HTML = '<div class="gv-svgbox"></div>'
_JS = """export default function (component) {
  const root = component.parentElement.querySelector(".gv-svgbox");
  const html = component.data.html;
  if (root.gvHtml !== html) { root.innerHTML = html; root.gvHtml = html; }
  root.dataset.drawn = "1";
}"""


@functools.cache
def _component() -> Callable[..., Any]:
    return st.components.v2.component(NAME, html=_HTML, js=_JS, isolate_styles=False)


def draw(chart: SvgChart, key: str | None = None, container=st) -> None:
    """Draw ``chart`` at full width in ``container``."""
    mount(_component(), {"html": chart.html}, key, container)
