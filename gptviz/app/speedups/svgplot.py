"""Small charts drawn on the server as inline SVG: grouped bars on a category axis and
lines on a linear or log axis, each with a tooltip per mark.

It replaces plotly.js for the bar and line charts: three such charts cost a page 1.05× a
bare page's load, the same three in plotly 2.07× (benchmarks/LOG.md, the 09:43 run of
2026-11-24). ``svgbox`` puts a chart in the page; in stock mode it is drawn by plotly
(``svgfigure``). Every mark carries ``data-series``, ``data-x``, ``data-y``: ``read_marks``
reads back exactly what is drawn. Pure Python, no Streamlit; the style is ``svgplot.css``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from gptviz.app.shared.tex import html_subscripts
from gptviz.app.speedups import svgaxes as ax
from gptviz.app.speedups.svgaxes import esc, fmt
from gptviz.i18n import _

WIDTH = 1000  # viewBox width: the SVG scales to the column, this is its width at scale 1
TITLE_PX, LEGEND_PX = 44, 28  # what the HTML title and legend row above/below the SVG take
ROOM = 110  # the longest rotated category name (px); longer ones are cut with "…"
DASHES = ("solid", "dash", "dot")
MARKERS = (None, "circle", "triangle-up", "x")
# The chart's style, on one line: a chart's HTML holds no newline (see ``svgaxes.esc``).
CSS = "<style>" + "".join(re.sub(r"/\*.*?\*/", "", (Path(__file__).parent / "svgplot.css")
                                 .read_text("utf-8"), flags=re.S).splitlines()) + "</style>"


@dataclass(frozen=True)
class Series:
    """One named set of marks: bars, a line (``None`` y breaks it), or markers alone.

    >>> Series("a", "line", [1, 2], [0.5, None]).y
    (0.5, None)
    """

    name: str
    kind: str  # "bar" | "line" | "markers"
    x: tuple  # categories (bars) or numbers
    y: tuple  # float | None per point
    colour: str = "#1f77b4"
    colours: tuple[str, ...] | None = None  # per point, over colour
    dash: str = "solid"  # "solid" | "dash" | "dot"
    marker: str | None = None  # None | "circle" | "triangle-up" | "x"
    width: float = 2.0  # line width (px)
    hover: tuple[str, ...] = ()  # per point; empty: "name, x: y"

    def __post_init__(self):
        fix = object.__setattr__
        fix(self, "x", tuple(self.x))
        fix(self, "y", tuple(None if v is None else float(v) for v in self.y))
        fix(self, "hover", tuple(self.hover))
        fix(self, "colours", None if self.colours is None else tuple(self.colours))
        if {len(self.y), len(self.colours or self.x), len(self.hover or self.x)} != {len(self.x)}:
            raise ValueError(f"series {self.name!r}: {len(self.x)} x values and a y, colours "
                             "or hover of another length.")
        if self.kind not in ("bar", "line", "markers") or self.dash not in DASHES or (
                self.marker not in MARKERS):
            raise ValueError(f"series {self.name!r}: unknown kind, dash or marker.")

    def tip(self, i: int, x: str) -> str:
        """Point ``i``'s hover text, given its x as text."""
        named = f"{self.name}, " if self.name else ""
        return self.hover[i] if self.hover else f"{named}{x}: {ax.decimal(f'{self.y[i]:.4g}')}"

    def fill(self, i: int) -> str:  # point i's colour
        return self.colours[i] if self.colours else self.colour


@dataclass(frozen=True)
class SvgChart:
    """A chart built by ``bar_chart`` or ``line_chart``: its series, its HTML, and the
    arguments it was built with (``axes``: what stock mode's plotly figure needs), to draw
    with ``widgets.chart``."""

    title: str
    series: tuple[Series, ...]
    html: str
    axes: dict[str, Any] = field(default_factory=dict, compare=False)


def _mark(tag: str, cls: str, geometry: str, colour: str, series: str, x: str, y: float | None,
          tip: str, paint: str = "fill") -> str:
    y_text = "nan" if y is None else repr(float(y))
    return (f'<{tag} class="{cls}" {geometry} {paint}="{esc(colour)}" data-series="{esc(series)}"'
            f' data-x="{esc(x)}" data-y="{y_text}"><title>{esc(tip)}</title></{tag}>')


def _svg_height(height: float, series: Sequence[Series], legend: bool) -> float:
    """The SVG's share of ``height``: less the HTML title, and the legend row when drawn."""
    return height - TITLE_PX - (LEGEND_PX if legend and sum(bool(s.name) for s in series) > 1
                                else 0)


def _chart(title: str, series: tuple[Series, ...], width: int, svg_h: float, legend: bool,
           parts: Sequence[str] | None, axes: dict[str, Any]) -> SvgChart:
    """The chart around the SVG ``parts``; ``None`` draws an empty frame saying "no data"."""
    if parts is None:
        parts = [f'<rect class="gv-sp-frame" x="8" y="8" width="{width - 16}" '
                 f'height="{fmt(svg_h - 16)}"/><text class="gv-sp-empty" x="{width / 2:g}" '
                 f'y="{fmt(svg_h / 2)}" text-anchor="middle">{esc(_("no data"))}</text>']
    keys = [s for s in series if s.name] if legend else []
    row = "".join(f'<span class="gv-sp-key">{_swatch(s)}{esc(s.name)}</span>' for s in keys)
    row = f'<div class="gv-sp-legend">{row}</div>' if len(keys) > 1 else ""
    return SvgChart(title, series, (
        f'<div class="gv-svgplot" data-title="{esc(title)}">{CSS}'
        f'<div class="gv-sp-title">{html_subscripts(title)}</div><svg viewBox="0 0 {width} '
        f'{fmt(svg_h)}" width="100%" role="img" aria-label="{esc(title)}">{"".join(parts)}'
        f"</svg>{row}</div>"), axes)


def _swatch(s: Series) -> str:
    """A 26 × 12 legend key drawn like the series."""
    if s.kind == "bar":
        inner = f'<rect x="6" y="0" width="14" height="12" fill="{esc(s.colour)}"/>'
    else:
        inner = "" if s.kind == "markers" else (
            f'<path class="gv-sp-line gv-sp-{s.dash}" d="M1 6H25" stroke="{esc(s.colour)}" '
            f'stroke-width="{min(s.width, 4):g}"/>')
        if s.marker or s.kind == "markers":
            tag, cls, geometry, paint = ax.marker_shape(s.marker or "circle", 13, 6)
            inner += f'<{tag} class="{cls}" {geometry} {paint}="{esc(s.colour)}"/>'
    return f'<svg viewBox="0 0 26 12" width="26" height="12">{inner}</svg>'


def bar_chart(categories: Sequence[str], series: Sequence[Series], *, title: str, y_title: str,
              log_y: bool = False, zero_line: bool = False, height: float = 340,
              legend: bool = True, width: int = WIDTH) -> SvgChart:
    """Bars on a category axis, the series side by side in each category; a category missing
    from a series (or a value ≤ 0 on a log axis, or NaN) has no bar there.

    >>> chart = bar_chart(["a", "b"], [Series("", "bar", ["b"], [-0.5])], title="t", y_title="v")
    >>> [(m["x"], m["y"]) for m in read_marks(chart.html)]
    [('b', -0.5)]
    """
    series = tuple(series)
    if any(s.kind != "bar" for s in series):
        raise ValueError("bar_chart draws bars; lines and markers go to line_chart.")
    cats = list(dict.fromkeys([*map(str, categories), *(str(x) for s in series for x in s.x)]))
    axes = dict(kind="bar", categories=tuple(cats), y_title=y_title, log_y=log_y,
                zero_line=zero_line, height=height, legend=legend)
    keep = [[(i, str(x)) for i, (x, v) in enumerate(zip(s.x, s.y, strict=True))
             if ax.real(v) and (v > 0 or not log_y)] for s in series]
    values = [s.y[i] for s, kept in zip(series, keep, strict=True) for i, _ in kept]
    svg_h = _svg_height(height, series, legend)
    if not values:
        return _chart(title, series, width, svg_h, legend, None, axes)
    lo, hi = ax.data_range(values if log_y else [*values, 0.0], log_y, 0.05)
    if not log_y:  # bars of one sign start at the axis's end, as in plotly
        lo, hi = (0.0 if min(values) >= 0 else lo), (0.0 if max(values) <= 0 else hi)
        if hi <= lo:  # every bar is 0: an axis of height 1 above it
            hi = lo + 1.0
    top, right = 10.0, 12.0
    left = ax.left_margin(lo, hi, log_y, svg_h - 60)
    slot = (width - left - right) / len(cats)
    level = ax.labels_level(cats, slot)
    bottom = svg_h - (30 if level else 0.71 * min(ROOM, max(map(ax.text_width, cats))) + 22)
    axis = ax.Axis(lo, hi, bottom, top, log_y)
    base = bottom if log_y else axis.px(0.0)
    drawn = [k for k, kept in enumerate(keep) if kept]  # series that take a place in a group
    group = 0.8 * slot
    bar_w = group / len(drawn)
    gap = min(1.0, 0.1 * bar_w)  # a hairline between neighbouring bars of a group
    parts = [ax.y_axis_svg(axis, left, width - right, y_title)]
    centres = [left + (c + 0.5) * slot for c in range(len(cats))]
    for place, k in enumerate(drawn):
        s = series[k]
        for i, x in keep[k]:
            x0 = centres[cats.index(x)] - group / 2 + place * bar_w + gap / 2
            py = axis.px(s.y[i])
            geometry = (f'x="{fmt(x0)}" y="{fmt(min(py, base))}" width="{fmt(bar_w - gap)}" '
                        f'height="{fmt(abs(base - py))}"')
            parts.append(_mark("rect", "gv-sp-bar", geometry, s.fill(i), s.name, x, s.y[i],
                               s.tip(i, x)))
    if zero_line and not log_y:
        parts.append(f'<line class="gv-sp-zero" x1="{fmt(left)}" x2="{fmt(width - right)}" '
                     f'y1="{fmt(base)}" y2="{fmt(base)}"/>')
    parts.append(ax.category_labels_svg(cats, centres, slot, bottom, ROOM))
    return _chart(title, series, width, svg_h, legend, parts, axes)


def line_chart(series: Sequence[Series], *, title: str, x_title: str, y_title: str,
               log_x: bool = False, y_range: tuple[float, float] | None = None,
               vlines: Sequence[tuple[float, str, str]] = (), height: float = 420,
               legend: bool = True, width: int = WIDTH) -> SvgChart:
    """Lines and markers on a numeric x axis (log10 when ``log_x``). A None or NaN y breaks a
    line; an x ≤ 0 on a log axis is left out; ``y_range`` fixes the y axis and the points
    outside it are not drawn. ``vlines`` are (x, colour, label).

    >>> chart = line_chart([Series("L", "line", [1, 2, 3], [1.0, None, 2.0], marker="circle")],
    ...                    title="t", x_title="x", y_title="y")
    >>> [(m["x"], m["y"]) for m in read_marks(chart.html) if m["tag"] == "circle"]
    [(1.0, 1.0), (3.0, 2.0)]
    """
    series = tuple(series)
    if any(s.kind == "bar" for s in series):
        raise ValueError("line_chart draws lines and markers; bars go to bar_chart.")
    def placed(x: float) -> bool:  # an x the axis can place
        return math.isfinite(x) and (x > 0 or not log_x)

    axes = dict(kind="line", x_title=x_title, y_title=y_title, log_x=log_x, y_range=y_range,
                vlines=tuple(vlines), height=height, legend=legend)
    xs = [x for s in series for x in s.x if placed(x)]
    ys = [y for s in series for x, y in zip(s.x, s.y, strict=True) if placed(x) and ax.real(y)]
    svg_h = _svg_height(height, series, legend)
    if not ys:
        return _chart(title, series, width, svg_h, legend, None, axes)
    usable = y_range is not None and all(map(ax.real, y_range)) and y_range[0] < y_range[1]
    lo, hi = y_range if usable else ax.data_range(ys, False, 0.05)  # a bad range: the data's
    top, right = (26.0 if vlines else 10.0), 16.0
    left = ax.left_margin(lo, hi, False, svg_h - 60)
    bottom = svg_h - 44
    x_axis = ax.Axis(*ax.data_range(xs, log_x, 0.0), left, width - right, log_x)
    y_axis = ax.Axis(lo, hi, bottom, top)
    parts = [ax.y_axis_svg(y_axis, left, width - right, y_title),
             ax.x_axis_svg(x_axis, top, bottom, x_title, svg_h - 6)]
    points = []
    for s in series:
        pts = [(x_axis.px(x), y_axis.px(y)) if placed(x) and ax.real(y) else None
               for x, y in zip(s.x, s.y, strict=True)]
        if s.kind == "line":
            d = ax.path_data(pts, top, bottom)
            parts.append(f'<path class="gv-sp-line gv-sp-{s.dash}" d="{d}" '
                         f'stroke="{esc(s.colour)}" stroke-width="{s.width:g}" '
                         f'data-series="{esc(s.name)}"/>')
        kind = s.marker or ("circle" if s.kind == "markers" else "")
        for i, p in enumerate(pts):
            if p is not None and y_axis.inside(s.y[i]):
                x_text = repr(float(s.x[i]))
                tag, cls, geometry, paint = ax.marker_shape(kind, *p)
                points.append(_mark(tag, cls, geometry, s.fill(i), s.name, x_text, s.y[i],
                                    s.tip(i, ax.decimal(f"{s.x[i]:g}")), paint))
    for x, colour, label in vlines:
        if x_axis.inside(x):
            px = fmt(x_axis.px(x))
            dx = -4 if x_axis.px(x) - 4 - ax.text_width(label) >= 0 else 4  # room on the left?
            parts.append(f'<line class="gv-sp-vline" x1="{px}" x2="{px}" y1="{fmt(top)}" '
                         f'y2="{fmt(bottom)}" stroke="{esc(colour)}" data-x="{x!r}"/><text '
                         f'class="gv-sp-vlabel" x="{fmt(x_axis.px(x) + dx)}" y="{fmt(top - 8)}" '
                         f'text-anchor="{"end" if dx < 0 else "start"}">{esc(label)}</text>')
    return _chart(title, series, width, svg_h, legend, parts + points, axes)


class _MarkReader(HTMLParser):
    """Collects the elements carrying ``data-series`` or ``data-x``, with their <title>."""

    def __init__(self):
        super().__init__()
        self.marks: list[dict] = []
        self.open: dict | None = None  # the mark whose <title> may follow

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.open = None if tag != "title" else self.open  # a mark's <title> is its first child
        if "data-series" in a or "data-x" in a:
            x, bar = a.get("data-x"), "gv-sp-bar" in (a.get("class") or "")
            self.open = {"tag": tag, "class": a.get("class"), "series": a.get("data-series"),
                         "x": x if bar or x is None else float(x),
                         "y": None if "data-y" not in a else float(a["data-y"]), "title": "",
                         "attrs": {k: _number(v) for k, v in a.items() if k[:5] != "data-"}}
            self.marks.append(self.open)

    def handle_data(self, data):
        if self.lasttag == "title" and self.open is not None:
            self.open["title"] += data


def _number(v: str | None):
    try:
        return float(v)
    except (TypeError, ValueError):
        return v


def read_marks(html: str) -> list[dict]:
    """The drawn marks of a chart's HTML, in drawing order: ``tag``, ``class``, ``series``,
    ``x`` (a bar's category, else a float), ``y`` (float, nan when missing), ``title`` (the
    hover text) and ``attrs`` (the other attributes, numbers as floats).

    >>> m = read_marks('<rect class="gv-sp-bar" height="2.5" data-series="s" data-x="&lt;a" '
    ...                'data-y="0.1"><title>a &amp; b</title></rect>')[0]
    >>> m["x"], m["y"], m["title"], m["attrs"]["height"]
    ('<a', 0.1, 'a & b', 2.5)
    """
    reader = _MarkReader()
    reader.feed(html)
    reader.close()
    return reader.marks
