"""An ``svgplot`` chart as a plotly figure: what stock mode draws with ``st.plotly_chart``.

The same series, values, colours, hover texts, axis titles, log axes, fixed y range and
vertical lines as the SVG; plotly lays it out in its own way (ticks, margins, legend).
"""

from __future__ import annotations

import math

import plotly.graph_objects as go

from gptviz.app.shared.tex import html_subscripts
from gptviz.app.speedups.svgplot import Series, SvgChart

DASH = {"solid": "solid", "dash": "dash", "dot": "dot"}


def _y(values: tuple) -> list[float | None]:
    """A series' y values for plotly: a missing or non-finite one is a gap."""
    return [v if v is not None and math.isfinite(v) else None for v in values]


def _trace(s: Series, bars: bool, log: bool) -> go.Bar | go.Scatter:
    xs = [str(x) for x in s.x] if bars else list(s.x)
    tips = [s.tip(i, str(x) if bars else f"{x:g}") for i, x in enumerate(s.x)]
    common = dict(x=xs, y=_y(s.y), name=s.name, showlegend=bool(s.name),
                  hovertext=tips, hoverinfo="text")
    colours = list(s.colours) if s.colours else s.colour
    if bars:
        y = [v if v is not None and v > 0 or not log else None for v in common.pop("y")]
        return go.Bar(y=y, marker_color=colours, **common)
    mode = {"line": "lines+markers" if s.marker else "lines", "markers": "markers"}[s.kind]
    return go.Scatter(mode=mode, line=dict(color=s.colour, width=s.width, dash=DASH[s.dash]),
                      marker=dict(symbol=s.marker or "circle", color=colours, size=8),
                      connectgaps=False, **common)


def figure(chart: SvgChart) -> go.Figure:
    """``chart`` (built by ``svgplot.bar_chart`` or ``line_chart``) as a plotly figure.

    >>> from gptviz.app.speedups.svgplot import bar_chart
    >>> fig = figure(bar_chart(["a", "b"], [Series("s", "bar", ["a", "b"], [1.0, 2.0])],
    ...                        title="t", y_title="v", log_y=True))
    >>> fig.data[0].type, list(fig.data[0].y), fig.layout.yaxis.type
    ('bar', [1.0, 2.0], 'log')
    """
    a = chart.axes
    bars = a.get("kind") == "bar"
    fig = go.Figure([_trace(s, bars, bars and a.get("log_y", False)) for s in chart.series])
    named = sum(bool(s.name) for s in chart.series)
    fig.update_layout(title=html_subscripts(chart.title), height=a.get("height"),
                      showlegend=a.get("legend", True) and named > 1, barmode="group",
                      legend=dict(orientation="h", y=-0.2, x=0.5, xanchor="center"))
    fig.update_yaxes(title=a.get("y_title", ""))
    if bars:
        fig.update_xaxes(type="category", categoryorder="array",
                         categoryarray=list(a.get("categories", ())))
        if a.get("log_y"):
            fig.update_yaxes(type="log")
        fig.update_yaxes(zeroline=bool(a.get("zero_line")), zerolinecolor="#555")
        return fig
    fig.update_xaxes(title=a.get("x_title", ""), type="log" if a.get("log_x") else "linear")
    y_range = a.get("y_range")
    if y_range is not None and all(map(math.isfinite, y_range)) and y_range[0] < y_range[1]:
        fig.update_yaxes(range=list(y_range))
    for x, colour, label in a.get("vlines", ()):
        if a.get("log_x") and not x > 0:
            continue
        fig.add_vline(x=x, line_color=colour, line_width=2)  # a shape: data units
        fig.add_annotation(x=math.log10(x) if a.get("log_x") else x, y=1, yref="paper",
                           text=label, showarrow=False, yanchor="bottom")  # log10 units
    return fig
