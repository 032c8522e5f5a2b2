"""The top-k candidates of one step, as data and as HTML bars.

The Generation page draws them as HTML: a bar is a ``<div>`` whose width is its share of
the axis, so the page's default view needs no chart library, and a "Next token" click
changes a few widths instead of remounting a chart (Streamlit gives a plotly chart a new
identity whenever its data change). The Lesson and its offline handout draw the same
``candidates`` with plotly (``figures.topk_bars``).
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

import numpy as np

from gptviz.app.shared.heatmaps import as_float32, axis_labels
from gptviz.app.shared.tex import html_subscripts, percent
from gptviz.i18n import _, number

BAR, CHOSEN, SAMPLED = "#4c78a8", "#f58518", "#54a24b"
TICK_CHARS = 16  # characters of a token a tick label shows
MONO_PX = 7.83  # px of one column of the 13 px monospace tick labels (Chromium, measured)


def mono_columns(text: str) -> int:
    """Columns ``text`` takes in a monospace font: 2 for a wide (CJK) character, 0 for a
    combining mark.

    >>> mono_columns("ab"), mono_columns("日本"), mono_columns("e\u0301")
    (2, 4, 1)
    """
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else
               0 if unicodedata.combining(c) else 1 for c in text)


def top_ids(probs, k: int) -> np.ndarray:
    """The k most probable ids, best first (ties by id).

    >>> top_ids([0.1, 0.6, 0.3], 2).tolist()
    [1, 2]
    """
    p = as_float32(probs)  # (|V|,)
    return np.argsort(-p, kind="stable")[: max(1, min(k, p.size))]


def tick_names(labels: Sequence[str], ids) -> list[str]:
    """The tokens ``ids`` as tick labels, cut to ``TICK_CHARS`` (GPT-2 has a token of 64
    dashes: whole, it would take the chart's width).

    >>> tick_names(["a b", "-" * 64], [1, 0])
    ['----------------…', 'a·b']
    """
    return [_cut(n) for n in axis_labels([labels[i] for i in ids], len(ids))]


def _cut(name: str) -> str:
    return name if len(name) <= TICK_CHARS else name[:TICK_CHARS] + "…"


@dataclass(frozen=True)
class Candidates:
    """The bars of a top-k chart, best first: ids, their tick labels, P and y (NaN when
    the logits are not given), and the right end of the probability axis."""

    ids: list[int]
    ticks: list[str]  # the token, cut to TICK_CHARS, with "◀ chosen" on the chosen one
    names: list[str]  # the token, cut to TICK_CHARS
    full: list[str]  # the token, whole (what hovering a bar shows)
    p: np.ndarray  # (n,) float32
    y: np.ndarray  # (n,) float32
    right: float


def candidates(labels: Sequence[str], probs, chosen: int | None = None, logits=None,
               k: int = 10) -> Candidates:
    """The k most probable next tokens; a chosen token outside them gets a bar at the end.

    >>> c = candidates(["a", "b", "c"], [0.2, 0.7, 0.1], chosen=2, k=2)
    >>> c.ids, c.ticks
    ([1, 0, 2], ['b', 'a', 'c ◀ chosen'])
    """
    p = as_float32(probs)  # (|V|,)
    ids = [int(i) for i in top_ids(p, k)]
    if chosen is not None and chosen not in ids:
        ids.append(int(chosen))
    full = axis_labels([labels[i] for i in ids], len(ids))
    names = [_cut(n) for n in full]
    mark = _("{token} ◀ chosen")
    ticks = [mark.format(token=n) if i == chosen else n for i, n in zip(ids, names, strict=True)]
    y = as_float32(logits)[ids] if logits is not None else np.full(len(ids), np.nan, np.float32)
    return Candidates(ids, ticks, names, full, p[ids], y,
                      min(1.0, float(p[ids].max()) * 1.25 + .02))


def tick_step(right: float) -> float:
    """The distance between the axis's ticks: 1, 2 or 5 times a power of ten, giving 3 to 6
    ticks from 0 to ``right``.

    >>> tick_step(0.9), tick_step(0.3), tick_step(0.023)
    (0.2, 0.1, 0.005)
    """
    raw = right / 5
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    return float(f"{step:.1g}")


BARS_CSS = """<style>
.gv-topk{font-size:14px;line-height:1.2;color:inherit}
.gv-topk-title{font-weight:600;margin:0 0 8px 2px}
.gv-topk-row{display:grid;grid-template-columns:min(var(--gv-label),45%) 1fr;column-gap:8px;
align-items:center;height:30px}
.gv-topk-label{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:13px;
text-align:right;white-space:pre;overflow:hidden}
.gv-topk-scale{display:flex;align-items:center;height:100%;width:calc(100% - 56px);
border-left:1px solid #a3a8b8;background-size:var(--gv-grid) 100%;
background-image:linear-gradient(to right,rgba(49,51,63,.12) 1px,transparent 1px)}
.gv-topk-bar{height:22px;flex:none}
.gv-topk-val{font-size:12px;margin-left:4px;white-space:nowrap}
.gv-topk-axis{position:relative;height:18px;width:calc(100% - 56px);font-size:12px;
opacity:.75;border-top:1px solid #a3a8b8;container-type:inline-size}
.gv-topk-axis span{position:absolute;transform:translateX(-50%);top:2px}
@container (max-width:200px){.gv-topk-axis span:nth-child(even){display:none}}
@container (max-width:100px){.gv-topk-axis span:not(:first-child){display:none}}
.gv-topk-name{width:calc(100% - 56px);text-align:center;font-size:13px;opacity:.8;
margin-top:4px}
</style>"""


def topk_html(c: Candidates, chosen: int | None = None, title: str = "") -> str:
    """``c`` as horizontal bars: the label, a bar as wide as P on an axis from 0 to
    ``c.right``, and P in percent; ``chosen`` in orange. Hovering a bar shows the token,
    its id, its logit y and P; each row carries P and the id as ``data-`` attributes.

    >>> h = topk_html(candidates(["a", "<b>"], [0.25, 0.75], chosen=0), chosen=0)
    >>> h.count('data-id='), "&lt;b&gt;" in h, 'data-id="0"' in h
    (2, True, True)
    """
    step = tick_step(c.right)
    width = max(mono_columns(t) for t in c.ticks) * MONO_PX + 6  # the label column (px)
    rows = []
    for i, tick, name, p, y in zip(c.ids, c.ticks, c.full, c.p.tolist(), c.y.tolist(),
                                   strict=True):
        logit = "" if math.isnan(y) else f"&#10;y = {number(y, 3)}"
        rows.append(
            f'<div class="gv-topk-row" data-id="{i}" data-p="{p!r}" '
            f'title="{escape(name)} (id {i}){logit}&#10;P = {percent(p, 3)}">'
            f'<div class="gv-topk-label">{escape(tick)}</div><div class="gv-topk-scale">'
            f'<div class="gv-topk-bar" style="width:{100 * p / c.right:.3f}%;background:'
            f'{CHOSEN if i == chosen else BAR}"></div>'
            f'<span class="gv-topk-val">{escape(percent(p))}</span></div></div>')
    ticks = "".join(f'<span style="left:{100 * v / c.right:.3f}%">'
                    f'{number(100 * v, _decimals(step))}%</span>'
                    for v in np.arange(0, c.right + 1e-9, step))
    return (f'{BARS_CSS}<div class="gv-topk" style="--gv-label:{width:.0f}px;'
            f'--gv-grid:{100 * step / c.right:.4f}%">'
            + (f'<div class="gv-topk-title">{html_subscripts(title)}</div>' if title else "")
            + "".join(rows)
            + f'<div class="gv-topk-row" style="height:auto"><div></div><div>'
              f'<div class="gv-topk-axis">{ticks}</div>'
              f'<div class="gv-topk-name">{escape(_("probability"))}</div></div></div></div>')


def _decimals(step: float) -> int:
    """Decimals of a percent tick at this step: 0 for 5 %, 1 for 0.5 %."""
    return max(0, -math.floor(math.log10(100 * step) + 1e-9))
