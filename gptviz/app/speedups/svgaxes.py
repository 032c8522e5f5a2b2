"""Axes for the SVG charts of ``svgplot``: nice tick values, tick text (the reader's decimal
sign), value → pixel maps and the SVG of gridlines, tick labels and axis titles. Numbers in,
numbers or SVG strings out; pixels are the chart's viewBox units."""

from __future__ import annotations

import html
import math
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from gptviz.i18n import separators

TICK, TITLE = 12, 13  # font sizes (px) of tick labels and axis titles
SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")
MINUS = "−"  # U+2212, as plotly writes a negative tick
# Advance widths in em of system-ui faces (DejaVu Sans, the widest, on Linux), each group
# rounded up; any other character counts as 0.62 em, wide East Asian ones as 1 em.
_EM = {**dict.fromkeys(" .,:;|!'`ijlI", 0.32), **dict.fromkeys("()[]{}-/\\ftr*\"", 0.42),
       **dict.fromkeys("mwMW%@", 0.92)}


def esc(text: str) -> str:
    """``text`` escaped for HTML text or a quoted attribute, on one line: Markdown ends an HTML
    block at a blank line, so a chart's HTML holds no newline.

    >>> esc('<a & "b"\\n')
    '&lt;a &amp; &quot;b&quot;&#10;'
    """
    return html.escape(text).replace("\n", "&#10;").replace("\r", "&#13;")


def real(v: float | None) -> bool:
    """Whether ``v`` is a finite number (not None, NaN or ±inf)."""
    return v is not None and math.isfinite(v)


def text_width(text: str, size: float = TICK) -> float:
    """An upper estimate of the width (px) of ``text`` at font size ``size``.

    >>> text_width("ab", 10), text_width("猫", 10)
    (12.4, 10.0)
    """
    def em(c: str) -> float:
        return 1.0 if unicodedata.east_asian_width(c) in "WF" else _EM.get(c, 0.62)
    return round(sum(em(c) for c in text) * size, 1)


def fit_text(text: str, width: float, size: float = TICK) -> str:
    """``text`` cut with "…" to fit ``width`` px (whole when it fits).

    >>> fit_text("transformer", 50), fit_text("abc", 50)
    ('transf…', 'abc')
    """
    if text_width(text, size) <= width:
        return text
    while text and text_width(text + "…", size) > width:
        text = text[:-1]
    return text + "…"


def fmt(v: float) -> str:
    """A coordinate rounded to 0.1 px, without a trailing ".0".

    >>> fmt(3.04), fmt(-0.04), fmt(12.25)
    ('3', '0', '12.2')
    """
    s = f"{v:.1f}".removesuffix(".0")
    return "0" if s == "-0" else s


def decimal(text: str) -> str:
    """A number Python wrote (no grouping) with the reader's decimal sign ("0,25" in es)."""
    return text.replace(".", separators()[0])


def nice_step(span: float, n: int) -> float:
    """The smallest 1-2-5 step that cuts ``span`` into at most ``n`` intervals (plotly's rule).

    >>> nice_step(1.0, 8), nice_step(1.53, 8), nice_step(730, 6)
    (0.2, 0.2, 200.0)
    """
    rough = span / n
    base = 10.0 ** math.floor(math.log10(rough))
    return next(m * base for m in (1, 2, 5, 10) if m * base >= rough * (1 - 1e-9))


def linear_ticks(lo: float, hi: float, n: int = 8) -> list[float]:
    """The multiples of ``nice_step(hi - lo, n)`` in [lo, hi].

    >>> linear_ticks(0, 1)
    [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    """
    step = nice_step(hi - lo, n)
    first, last = math.ceil(lo / step - 1e-9), math.floor(hi / step + 1e-9)
    digits = max(0, -math.floor(math.log10(step))) + 1
    return [round(k * step, digits) + 0.0 for k in range(first, last + 1)]


def power_text(v: float) -> str:
    """``v`` as a power of ten: "10⁻⁴", "2×10⁵".

    >>> power_text(1e-4), power_text(2e5), power_text(1.0)
    ('10⁻⁴', '2×10⁵', '10⁰')
    """
    e = math.floor(math.log10(abs(v)) + 1e-9)
    m = round(v / 10.0**e, 6)
    head = "" if m == 1 else decimal(f"{m:g}") + "×"
    return head + "10" + str(e).translate(SUPERSCRIPT)


def tick_text(v: float, step: float) -> str:
    """A linear tick's text with the decimals of its ``step`` ("%g"-like, "−" for minus).

    >>> tick_text(-0.6000000001, 0.2), tick_text(1.0, 0.2), tick_text(2e6, 1e6)
    ('−0.6', '1', '2×10⁶')
    """
    if v == 0:
        return "0"
    if abs(v) >= 1e6 or step < 1e-4:
        return power_text(float(f"{v:.6g}")).replace("-", MINUS)
    decimals = max(0, -math.floor(math.log10(step) + 1e-9))
    text = f"{v:.{decimals}f}"
    return decimal(text.rstrip("0").rstrip(".") if "." in text else text).replace("-", MINUS)


def log_ticks(lo: float, hi: float, n: int = 8) -> list[tuple[float, str]]:
    """(value, text) ticks of a log axis spanning 10**lo … 10**hi: decades (every k-th when
    more than ``n``), 2 and 5 between them when the span is under two decades. Plain numbers
    (0.01, 1, 100) when every tick lies in 10⁻² … 10³, powers of ten otherwise.

    >>> [t for _, t in log_ticks(-6, 20)]
    ['10⁻⁴', '10⁰', '10⁴', '10⁸', '10¹²', '10¹⁶', '10²⁰']
    >>> [t for _, t in log_ticks(-0.1, 2.2)]
    ['1', '10', '100']
    >>> [t for _, t in log_ticks(0.2, 1.1)]
    ['2', '5', '10']
    """
    first, last = math.ceil(lo - 1e-9), math.floor(hi + 1e-9)
    every = next(k for k in (1, 2, 3, 4, 5, 10, 20, 50, 100) if (last - first) // k + 1 <= n)
    values = [10.0**e for e in range(first, last + 1) if e % every == 0]
    if hi - lo < 2:
        values = [m * 10.0**e for e in range(first - 1, last + 1) for m in (1, 2, 5)
                  if lo - 1e-9 <= math.log10(m) + e <= hi + 1e-9]
    plain = all(1e-2 <= v <= 1e3 for v in values)
    return [(v, decimal(f"{v:g}") if plain else power_text(v)) for v in values]


@dataclass(frozen=True)
class Axis:
    """A map from data values to pixels: [lo, hi] (log10 units on a log axis) onto [a, b].

    >>> Axis(0, 10, 100, 200).px(5), Axis(0, 2, 300, 100, log=True).px(10.0)
    (150.0, 200.0)
    """

    lo: float
    hi: float
    a: float  # the pixel of lo
    b: float  # the pixel of hi
    log: bool = False

    def px(self, v: float) -> float:
        u = math.log10(v) if self.log else v
        return self.a + (u - self.lo) / (self.hi - self.lo) * (self.b - self.a)

    def inside(self, v: float) -> bool:
        """Whether ``v`` is finite, positive on a log axis, and within the range."""
        if not math.isfinite(v) or (self.log and v <= 0):
            return False
        u = math.log10(v) if self.log else v
        return self.lo - 1e-9 * abs(self.hi - self.lo) <= u <= self.hi + 1e-9 * abs(
            self.hi - self.lo)

    def ticks(self) -> list[tuple[float, str]]:
        """(value, text) ticks, about one per 40 px (x) … 30 px (y), 5 to 10 of them."""
        n = min(9, max(4, int(abs(self.b - self.a) / (30 if self.a > self.b else 80)))) + 1
        if self.log:
            return log_ticks(self.lo, self.hi, n)
        step = nice_step(self.hi - self.lo, n)
        return [(v, tick_text(v, step)) for v in linear_ticks(self.lo, self.hi, n)]


def data_range(values: Sequence[float], log: bool, pad: float) -> tuple[float, float]:
    """[lo, hi] of the finite (positive, on a log axis) ``values``, in log10 units on a log
    axis, widened by ``pad`` of the span each side; a single value gets a span of ±1 (±0.5
    decade); no value gives (0, 1).

    >>> data_range([1, 3], False, 0.05), data_range([10, 1000, -1], True, 0)
    ((0.9, 3.1), (1.0, 3.0))
    """
    us = [math.log10(v) if log else v for v in values if math.isfinite(v) and (v > 0 or not log)]
    if not us:
        return (0.0, 1.0)
    lo, hi = min(us), max(us)
    if hi - lo < 1e-12 * max(1.0, abs(hi)):
        half = 0.5 if log else max(1.0, abs(hi) * 0.1)
        return (lo - half, hi + half)
    return (lo - pad * (hi - lo), hi + pad * (hi - lo))


def y_axis_svg(axis: Axis, left: float, right: float, title: str) -> str:
    """Horizontal gridlines at ``axis``'s ticks, tick labels left of ``left`` and the rotated
    title at the chart's left edge."""
    parts = []
    for v, text in axis.ticks():
        y = fmt(axis.px(v))
        parts.append(f'<line class="gv-sp-grid" x1="{fmt(left)}" x2="{fmt(right)}" y1="{y}" '
                     f'y2="{y}"/><text class="gv-sp-tick" x="{fmt(left - 6)}" y="{y}" '
                     f'text-anchor="end" dy=".35em">{esc(text)}</text>')
    mid = fmt((axis.a + axis.b) / 2)
    parts.append(f'<text class="gv-sp-atitle" transform="rotate(-90 14 {mid})" x="14" '
                 f'y="{mid}" text-anchor="middle" dy=".35em">{esc(title)}</text>')
    return "".join(parts)


def x_axis_svg(axis: Axis, top: float, bottom: float, title: str, title_y: float) -> str:
    """Vertical gridlines at ``axis``'s ticks, tick labels under ``bottom`` and the title
    centred at ``title_y``."""
    parts = []
    for v, text in axis.ticks():
        x = fmt(axis.px(v))
        parts.append(f'<line class="gv-sp-grid" x1="{x}" x2="{x}" y1="{fmt(top)}" '
                     f'y2="{fmt(bottom)}"/><text class="gv-sp-tick" x="{x}" '
                     f'y="{fmt(bottom + 18)}" text-anchor="middle">{esc(text)}</text>')
    mid = fmt((axis.a + axis.b) / 2)
    parts.append(f'<text class="gv-sp-atitle" x="{mid}" y="{fmt(title_y)}" '
                 f'text-anchor="middle">{esc(title)}</text>')
    return "".join(parts)


def category_labels_svg(labels: Sequence[str], centres: Sequence[float], slot: float,
                        bottom: float, room: float) -> str:
    """Category names under ``bottom``: level when all fit their ``slot``, else rotated −45°
    and cut with "…" to ``room`` px; a cut name keeps its whole text as a tooltip."""
    level = labels_level(labels, slot)
    parts = []
    for s, x in zip(labels, centres, strict=True):
        shown = s if level else fit_text(s, room)
        tip = "" if shown == s else f"<title>{esc(s)}</title>"
        if level:
            parts.append(f'<text class="gv-sp-tick" x="{fmt(x)}" y="{fmt(bottom + 18)}" '
                         f'text-anchor="middle">{esc(shown)}{tip}</text>')
        else:
            x0, y0 = fmt(x + 4), fmt(bottom + 10)
            parts.append(f'<text class="gv-sp-tick" x="{x0}" y="{y0}" text-anchor="end" '
                         f'transform="rotate(-45 {x0} {y0})">{esc(shown)}{tip}</text>')
    return "".join(parts)


def labels_level(labels: Sequence[str], slot: float) -> bool:
    """Whether every category name fits its slot without rotating."""
    return all(text_width(s) <= slot - 4 for s in labels)


def left_margin(lo: float, hi: float, log: bool, length: float) -> float:
    """Room (px) left of the plot for the y tick labels of [lo, hi] and the axis title."""
    ticks = Axis(lo, hi, length, 0, log).ticks()
    return max(52.0, max(text_width(t) for _, t in ticks) + 34)


def clip_segment(p: tuple[float, float], q: tuple[float, float], top: float, bottom: float):
    """The part of segment p → q with top ≤ y ≤ bottom, or None (pixels, y downwards)."""
    (x0, y0), (x1, y1) = p, q
    t0, t1 = 0.0, 1.0
    if y0 == y1:
        return (p, q) if top <= y0 <= bottom else None
    for edge in (top, bottom):
        t = (edge - y0) / (y1 - y0)
        entering = (y1 > y0) == (edge == top)  # crossing this edge takes the line inside
        t0, t1 = (max(t0, t), t1) if entering else (t0, min(t1, t))
    if t0 > t1:
        return None
    return ((x0 + t0 * (x1 - x0), y0 + t0 * (y1 - y0)), (x0 + t1 * (x1 - x0), y0 + t1 * (y1 - y0)))


def path_data(points: Sequence[tuple[float, float] | None], top: float, bottom: float) -> str:
    """SVG path data through ``points`` clipped to top … bottom; ``None`` starts a new piece."""
    d, pen = [], None
    for p, q in zip(points, points[1:], strict=False):
        piece = None if p is None or q is None else clip_segment(p, q, top, bottom)
        if piece is None:
            continue
        a, b = (f"{fmt(v[0])} {fmt(v[1])}" for v in piece)
        d.append(f"L{b}" if a == pen else f"M{a}L{b}")
        pen = b
    return "".join(d)


def marker_shape(kind: str, x: float, y: float) -> tuple[str, str, str, str]:
    """(tag, class, geometry, paint) of a point's mark: a circle, a triangle or an ×, or (kind
    "") an invisible circle that shows under the pointer."""
    if kind == "triangle-up":
        return "path", "gv-sp-pt", f'd="M{fmt(x)} {fmt(y - 6.5)}l6 10.4h-12z"', "fill"
    if kind == "x":
        return ("path", "gv-sp-x", f'd="M{fmt(x - 5)} {fmt(y - 5)}l10 10m0-10l-10 10"',
                "stroke")
    cls = "gv-sp-pt" if kind else "gv-sp-pt gv-sp-hid"
    return "circle", cls, f'cx="{fmt(x)}" cy="{fmt(y)}" r="{4 if kind else 5}"', "fill"
