"""The one layout rule of every tree and chain figure: labels never overlap, and a label cut
to fit keeps at least ``MIN_CHARS`` characters before its "…" (one that cannot is left out;
the figure's hover still has it), whatever the model and its tokens.

A label's extent is estimated from its characters at its font size (``text_px``: labels are
set in monospace, 0.62 em a character, wide East Asian ones and emoji 1.2 em, combining
marks nothing), and placed in pixels of the narrowest plot area the figure is laid out for:
where two labels are clear of each other there, they are at any greater width too (their
anchors only move apart). ``place`` gives each label, in order of importance, the first of
its candidate boxes that meets no label placed before and no obstacle; ``label_boxes``
reads the labels back from a built figure, which is how the tests check the rule.

Boxes are (left, top, right, bottom) in px, y down, as in an SVG.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

FONT = "monospace"  # the family of every label placed here (its width is predictable)
CHAR_EM, WIDE_EM = 0.62, 1.2  # a character's advance: DejaVu Sans Mono's 0.602, rounded up
LINE_EM = 1.25  # a line's height
MIN_CHARS = 2  # a cut label keeps at least this many characters before "…"
MIN_FONT = 14  # px: the least size a tree's or chain's labels are set in (read at 1280 px)
GAP_PX = 2  # the space kept between a label and its marker, and between two labels
ELLIPSIS = "…"

Box = tuple[float, float, float, float]


def char_em(c: str) -> float:
    """The advance of one character in ems.

    >>> char_em("a"), char_em("猫"), char_em("\u0301")
    (0.62, 1.2, 0.0)
    """
    if unicodedata.combining(c) or unicodedata.category(c) in ("Cf", "Mn", "Me"):
        return 0.0
    return WIDE_EM if unicodedata.east_asian_width(c) in "WF" else CHAR_EM


def text_px(text: str, size: float) -> float:
    """An upper estimate of the width (px) of ``text`` set in monospace at ``size`` px.

    >>> text_px("·whose", 10), text_px("猫", 10)
    (37.2, 12.0)
    """
    return round(sum(char_em(c) for c in text) * size, 2)


def fit(text: str, room: float, size: float, min_chars: int = MIN_CHARS) -> str | None:
    """``text`` whole if it fits ``room`` px, else cut with "…" to fit; None when fewer than
    ``min_chars`` characters would be left (a label is never cut to nothing).

    >>> fit("·manifold", 40, 10), fit("·is", 40, 10), fit("·manifold", 15, 10)
    ('·mani…', '·is', None)
    """
    if text_px(text, size) <= room:
        return text
    cut = text
    while cut and text_px(cut + ELLIPSIS, size) > room:
        cut = cut[:-1]
    return cut + ELLIPSIS if len(cut) >= min_chars else None


def shorter(text: str, room: float, size: float, min_chars: int = MIN_CHARS) -> list[str]:
    """Every version of ``text`` a label may show in ``room`` px, longest first: the fit,
    then one character less each time, down to ``min_chars`` and "…".

    >>> shorter("·manifold", 40, 10)
    ['·mani…', '·man…', '·ma…', '·m…']
    """
    first = fit(text, room, size, min_chars)
    if first is None:
        return []
    out = [first]
    kept = first.removesuffix(ELLIPSIS) if first != text else text
    while len(kept) > min_chars:
        kept = kept[:-1]
        out.append(kept + ELLIPSIS)
    return out


def wrap(text: str, room: float, size: float, max_lines: int = 2) -> list[str]:
    """``text`` broken at its spaces into lines of at most ``room`` px, at most ``max_lines``
    of them; a word too long for a line, or what does not fit the last one, is cut with "…"
    (never below ``MIN_CHARS``; a line that cannot keep them is left out).

    >>> wrap("attention out Z W_O + b_O", 80, 10), wrap("ab", 80, 10)
    (['attention', 'out Z W_O +…'], ['ab'])
    >>> wrap("x = extraordinarily long", 60, 10, 1)
    ['x = extr…']
    """
    lines: list[str] = []
    for word in text.split():
        if lines and text_px(f"{lines[-1]} {word}", size) <= room:
            lines[-1] = f"{lines[-1]} {word}"
        else:
            lines.append(word)
    if len(lines) > max_lines:
        lines = lines[:max_lines - 1] + [" ".join(lines[max_lines - 1:])]
    out = [fit(line, room, size) for line in lines]
    return [line for line in out if line]


def box(text: str, x: float, y: float, size: float, place: str = "middle center",
        clear: float = 0.0) -> Box:
    """The box of ``text`` drawn at ``place`` (a plotly ``textposition``) around a point at
    px (x, y) whose marker reaches ``clear`` px from it ("middle center": centred on it).

    >>> box("ab", 0, 0, 10), box("ab", 0, 0, 10, "top center", 5)
    ((-6.2, -6.25, 6.2, 6.25), (-6.2, -19.5, 6.2, -7.0))
    """
    w, h = text_px(text, size), LINE_EM * size
    vertical, horizontal = place.split()
    left = {"center": x - w / 2, "left": x - clear - GAP_PX - w,
            "right": x + clear + GAP_PX}[horizontal]
    if vertical == "middle":
        top = y - h / 2
    elif horizontal == "center":  # straight above or below: clear of the marker
        top = y - clear - GAP_PX - h if vertical == "top" else y + clear + GAP_PX
    else:  # beside and above / below: plotly lifts it less
        top = y - h - GAP_PX if vertical == "top" else y + GAP_PX
    return (round(left, 2), round(top, 2), round(left + w, 2), round(top + h, 2))


def overlap(a: Box, b: Box, gap: float = 0.0) -> bool:
    """Whether two boxes come closer than ``gap`` px (touching is not overlapping).

    >>> overlap((0, 0, 2, 2), (1, 1, 3, 3)), overlap((0, 0, 1, 1), (1, 0, 2, 1))
    (True, False)
    """
    return (a[0] < b[2] + gap and b[0] < a[2] + gap and a[1] < b[3] + gap
            and b[1] < a[3] + gap)


def crosses(b: Box, p: Sequence[float], q: Sequence[float]) -> bool:
    """Whether the segment p → q (px) passes through box ``b``.

    >>> crosses((0, 0, 2, 2), (-1, 1), (3, 1)), crosses((0, 0, 2, 2), (-1, 3), (3, 3))
    (True, False)
    """
    t0, t1 = 0.0, 1.0
    d = (q[0] - p[0], q[1] - p[1])
    for k, (lo, hi) in enumerate(((b[0], b[2]), (b[1], b[3]))):
        if d[k] == 0:
            if not lo < p[k] < hi:
                return False
            continue
        s, e = (lo - p[k]) / d[k], (hi - p[k]) / d[k]
        t0, t1 = max(t0, min(s, e)), min(t1, max(s, e))
    return t0 < t1


def inside(b: Box, area: Box) -> bool:
    """Whether box ``b`` lies within ``area``.

    >>> inside((1, 1, 2, 2), (0, 0, 3, 3)), inside((1, 1, 4, 2), (0, 0, 3, 3))
    (True, False)
    """
    return area[0] <= b[0] and area[1] <= b[1] and b[2] <= area[2] and b[3] <= area[3]


@dataclass(frozen=True)
class Candidate:
    """One way to draw a label: its text and where (``box`` of it), with what the figure
    needs to draw it there (``at``: e.g. data coordinates and a textposition)."""

    text: str
    box: Box
    at: Any = None


class _Index:
    """Boxes (or segments) filed by the ``COLUMN_PX``-px columns they span: a check reads
    only its neighbours (a tree of 90 nodes tries ~2,000 candidates on ~300 boxes)."""

    COLUMN_PX = 48

    def __init__(self) -> None:
        self.columns: dict[int, list] = {}

    def _span(self, left: float, right: float) -> range:
        return range(int(left // self.COLUMN_PX), int(right // self.COLUMN_PX) + 1)

    def add(self, item: Any, left: float, right: float) -> None:
        for k in self._span(left, right):
            self.columns.setdefault(k, []).append(item)

    def near(self, b: Box) -> list:
        seen: dict[int, Any] = {}
        for k in self._span(b[0] - GAP_PX, b[2] + GAP_PX):
            for item in self.columns.get(k, ()):
                seen[id(item)] = item
        return list(seen.values())


def place(labels: Iterable[Sequence[Candidate]], area: Box, obstacles: Sequence[Box] = (),
          segments: Sequence[tuple[Sequence[float], Sequence[float]]] = (),
          ) -> list[Candidate | None]:
    """For each label (its candidates, best first; labels in order of importance) the first
    candidate inside ``area`` that meets no label placed before and no obstacle box, and
    crosses no segment if any such candidate is clear of labels and obstacles; None when
    every candidate meets a label or an obstacle (the label is left out).

    >>> a = [Candidate("a", (0, 0, 10, 10))]
    >>> b = [Candidate("b", (5, 5, 15, 15)), Candidate("b", (12, 0, 22, 10))]
    >>> [c.box if c else None for c in place([a, b, a], (0, 0, 30, 30))]
    [(0, 0, 10, 10), (12, 0, 22, 10), None]
    """
    placed, blocked, lines = _Index(), _Index(), _Index()
    for o in obstacles:
        blocked.add(o, o[0], o[2])
    for p, q in segments:
        lines.add((p, q), min(p[0], q[0]), max(p[0], q[0]))
    out: list[Candidate | None] = []
    for candidates in labels:
        clear = [c for c in candidates if inside(c.box, area)
                 and not any(overlap(c.box, o, GAP_PX) for o in placed.near(c.box))
                 and not any(overlap(c.box, o) for o in blocked.near(c.box))]
        best = next((c for c in clear if not any(crosses(c.box, p, q)
                                                 for p, q in lines.near(c.box))),
                    clear[0] if clear else None)
        if best is not None:
            placed.add(best.box, best.box[0], best.box[2])
        out.append(best)
    return out


def geometry(plot_w: float, plot_h: float, x_range: Sequence[float],
             y_range: Sequence[float]) -> dict:
    """What ``label_boxes`` needs to map a figure's data to px: its narrowest plot area and
    its axes' ranges as plotly takes them ([left, right], [bottom, top]: a reversed y axis
    has its larger end first); for ``layout.meta``.

    >>> geometry(700, 300, [-1, 5], [2.6, -0.6])["labels"]["plot_w"]
    700
    """
    return {"labels": {"plot_w": plot_w, "plot_h": plot_h, "x": list(x_range),
                       "y": list(y_range)}}


def to_px(x: float, y: float, g: dict) -> tuple[float, float]:
    """Data (x, y) as px of the plot area ``geometry`` describes (y down).

    >>> to_px(2, 1, geometry(600, 300, [0, 6], [0, 3])["labels"])
    (200.0, 200.0)
    >>> to_px(2, 1, geometry(600, 300, [0, 6], [2, -1])["labels"])
    (200.0, 200.0)
    """
    (x0, x1), (bottom, top) = g["x"], g["y"]
    return (x - x0) / (x1 - x0) * g["plot_w"], (top - y) / (top - bottom) * g["plot_h"]


def label_boxes(fig: Any) -> list[tuple[str, Box, float]]:
    """(text, box, font size) of every label a figure built here draws: the text of its
    traces with text, placed as plotly places it, and its annotations in paper units (the
    titles over a grid's panels), in the px of ``layout.meta["labels"]``.

    >>> import plotly.graph_objects as go
    >>> fig = go.Figure(go.Scatter(x=[1], y=[1], mode="text", text=["ab"],
    ...                            textfont=dict(size=10)))
    >>> _ = fig.update_layout(meta=geometry(100, 100, [0, 2], [0, 2]))
    >>> label_boxes(fig)
    [('ab', (43.8, 43.75, 56.2, 56.25), 10)]
    """
    spec = fig if isinstance(fig, dict) else fig.to_plotly_json()
    g = spec["layout"]["meta"]["labels"]
    out = []
    for trace in spec["data"]:
        texts = trace.get("text")
        if "text" not in str(trace.get("mode", "")) or texts is None:
            continue
        n = len(trace["x"])
        texts = [texts] * n if isinstance(texts, str) else list(texts)
        places = trace.get("textposition") or "middle center"
        places = [places] * n if isinstance(places, str) else list(places)
        size = (trace.get("textfont") or {}).get("size")
        marker = (trace.get("marker") or {}).get("size", 0) if "markers" in trace["mode"] else 0
        marks = [marker] * n if not isinstance(marker, (list, tuple)) else list(marker)
        for x, y, text, where, m in zip(trace["x"], trace["y"], texts, places, marks,
                                        strict=True):
            if text:
                out.append((text, box(text, *to_px(x, y, g), size, where, m / 2), size))
    for note in spec["layout"].get("annotations", []):  # titles over panels, in paper units
        lines = [re.sub(r"<[^>]+>", "", t) for t in str(note.get("text") or "").split("<br>")]
        if note.get("xref") != "paper" or note.get("yref") != "paper" or not any(lines):
            continue
        size = (note.get("font") or {}).get("size") or spec["layout"].get("font", {}).get(
            "size", 12)
        w, h = max(text_px(line, size) for line in lines), LINE_EM * size * len(lines)
        x, y = note["x"] * g["plot_w"], (1 - note["y"]) * g["plot_h"]
        left = {"left": x, "right": x - w}.get(note.get("xanchor"), x - w / 2)
        top = {"bottom": y - h, "top": y}.get(note.get("yanchor"), y - h / 2)
        out.append(("\n".join(lines), (left, top, left + w, top + h), size))
    return out
