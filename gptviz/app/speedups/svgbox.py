"""Inline SVG charts (``svgplot``) put into the page as they are, by a small component
(``svgbox.js``) that sets the chart's HTML on its own element.

``st.markdown(html, unsafe_allow_html=True)`` draws the same chart, but the browser then
parses it as Markdown and builds one React element per SVG node; this way the Learning page
went from 1.74× to 1.68× a bare page (benchmarks/LOG.md, "Inline SVG charts through a
component"). ``st.html`` would sanitise the SVG away. Stock mode (``svgplot`` off) draws the
chart as a plotly figure (``svgfigure``), whose modebar has plotly's own PNG button; here
``png.js`` gives the chart one. Tests read the chart back from the page
(``tests.helpers.svg_charts``).
"""

from __future__ import annotations

import streamlit as st

from gptviz.app.speedups import stock
from gptviz.app.speedups.component import component
from gptviz.app.speedups.mount import mount, plotly_chart
from gptviz.app.speedups.svgfigure import figure
from gptviz.app.speedups.svgplot import SvgChart
from gptviz.i18n import _

NAME = "gptviz.svg"
HTML = '<div class="gv-svgbox"></div>'


def draw(chart: SvgChart, key: str | None = None, container=st) -> None:
    """Draw ``chart`` at full width in ``container``."""
    if stock.off("svgplot"):
        plotly_chart(figure(chart), key, container)
        return
    element = component(NAME, html=HTML, js=("png.js", "svgbox.js"), css="png.css")
    mount(element, {"html": chart.html, "png": _("Download as PNG")}, key, container)
