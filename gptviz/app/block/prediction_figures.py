"""Figures of "Who wrote the prediction": the direct-logit-attribution waterfall and the
commitment strip over the prompt."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from gptviz.app.shared.heatmaps import axis_labels, label_px

UP, DOWN, TOTAL = "#59a14f", "#e15759", "#4c78a8"  # raises, lowers, the sum
MAX_BAR_TEXT = 40  # bars up to this many carry their value as text; more: hover only
HEIGHT, TOP, BOTTOM = 460, 70, 10  # the figure's height and margins (px)
TEXT_PX, PAD_PX = 15, 3  # a value label's height and its distance from the bar (plotly's)
LINE_PX = 2  # room kept clear around the dashed line (px)
# Value labels are 12 px and never shrunk to their bar (plotly's default scaled GPT-2's 40
# bars' labels down to ~7 px). A bar narrower than its label at 12 px gets it turned
# upright (a bar of a PLOT_W_PX wide plot takes BAR_SHARE of its slot).
BAR_TEXT_PX, PLOT_W_PX, BAR_SHARE = 12, 760, 0.8


def _plot_px(labels: Sequence[str], rotated: bool) -> float:
    """At most the height (px) of the plot area: the figure less its margins and the room
    the x tick labels take (rotated −45°: 0.71 of the longest one; level: one line)."""
    ticks = 0.71 * label_px(labels) + 16 if rotated else 24
    return HEIGHT - TOP - BOTTOM - ticks


def label_extent_px(texts: Sequence[str], n_bars: int) -> tuple[float, bool]:
    """How far (px, along y) a value label reaches, and whether the labels stand upright:
    level, a line of 12 px text (TEXT_PX); upright where the widest label would not fit its
    bar's width, its length.

    >>> label_extent_px(["+0.12"], 5), label_extent_px(["+0.12"], 41)
    ((15, False), (34.1, True))
    """
    wide = label_px(texts, BAR_TEXT_PX) + 4
    if PLOT_W_PX / max(n_bars, 1) * BAR_SHARE >= wide:
        return TEXT_PX, False
    return round(wide, 1), True


def _label_boxes(start: float, end: float, unit: float, text_px: float = TEXT_PX
                 ) -> dict[str, tuple[float, float]]:
    """The y extent (data units) of a bar's value label in each place it can go, for a bar
    from ``start`` to ``end`` and ``unit`` data units per pixel: beyond its end
    ("outside", plotly's place), inside its end ("inside", only when the bar is tall
    enough), or beyond its start ("base", drawn as an annotation)."""
    up = end >= start
    s = 1.0 if up else -1.0
    pad, text = PAD_PX * unit, text_px * unit
    boxes = {"outside": (end + s * pad, end + s * (pad + text)),
             "base": (start - s * pad, start - s * (pad + text))}
    if abs(end - start) >= (2 * PAD_PX + text_px) * unit:
        boxes["inside"] = (end - s * pad, end - s * (pad + text))
    return {k: (min(a, b), max(a, b)) for k, (a, b) in boxes.items()}


def label_places(starts: Sequence[float], ends: Sequence[float], line: float,
                 unit: float, text_px: float = TEXT_PX) -> list[str]:
    """Where each bar's value label goes so that the dashed line at ``line`` does not cross
    it: "outside" (beyond the bar's end) unless the line passes there, then "inside" the bar
    when it is tall enough, else "base" (beyond its start, which the line then cannot reach:
    the bar is shorter than a label).

    >>> label_places([0.0, 2.0], [2.0, 2.5], line=2.6, unit=0.01)  # +0.5's label: on the line
    ['outside', 'inside']
    >>> label_places([2.4], [2.5], line=2.6, unit=0.01)  # too short for its label: below it
    ['base']
    """
    clear = LINE_PX * unit
    out = []
    for a, b in zip(starts, ends, strict=True):
        boxes = _label_boxes(a, b, unit, text_px)
        out.append(next((k for k in ("outside", "inside", "base") if k in boxes and not (
            boxes[k][0] - clear < line < boxes[k][1] + clear)), "outside"))
    return out


def logit_waterfall(labels: Sequence[str], values: Sequence[float], real: float,
                    title: str) -> go.Figure:
    """One bar per component, each starting where the previous one ended, then the sum Σ;
    a dashed line marks the model's own logit ``real``, named in a key above the plot.

    The bars' ``y`` are float64: a reader can add them up to the last digit. The y axis is
    fixed (the bars, the line and room for a label at either end) so that the value labels'
    place is known here: a label the dashed line would cross goes inside its bar, or beyond
    the bar's start (``label_places``).

    >>> fig = logit_waterfall(["E", "FFN"], [1.5, -0.5], 1.0, "t")
    >>> list(fig.data[0].measure), list(fig.data[0].x)
    (['relative', 'relative', 'total'], ['E', 'FFN', 'Σ'])
    """
    y = np.asarray(values, dtype=np.float64)  # (C,)
    total = float(y.sum())
    n = len(y)
    ends = np.append(np.cumsum(y), total)  # (C + 1,) where each bar ends; Σ from 0
    starts = np.append(ends[:-1] - y, 0.0)
    rotated = n > 12
    names = [*labels, "Σ"]
    plot_px = _plot_px(names, rotated)
    lo = min(0.0, float(ends.min()), real)
    hi = max(0.0, float(ends.max()), real)
    span = max(hi - lo, 1e-9)
    text = [f"{v:+.2f}" for v in y] + [f"{total:.2f}"] if n <= MAX_BAR_TEXT else None
    text_px, upright = label_extent_px(text, n + 1) if text else (TEXT_PX, False)
    room = PAD_PX + text_px + LINE_PX  # px kept at either end for a label beyond a bar
    span_all = span / (1 - 2 * room / plot_px)
    unit = span_all / plot_px  # data units per px (at least: the plot may be taller)
    places = label_places(starts, ends, real, unit, text_px) if text else ["outside"] * (n + 1)
    fig = go.Figure(go.Waterfall(
        x=names, y=np.append(y, 0.0), measure=["relative"] * n + ["total"],
        text=text, textposition=[p if p != "base" else "none" for p in places],
        textangle=-90 if upright else 0, textfont=dict(size=BAR_TEXT_PX),
        constraintext="none", cliponaxis=False, increasing=dict(marker_color=UP),
        decreasing=dict(marker_color=DOWN),
        totals=dict(marker_color=TOTAL), connector=dict(line=dict(color="#999", width=1)),
        hovertemplate="%{x}: %{y:+.4f}<extra></extra>"))
    for i, place in enumerate(places):
        if text and place == "base":  # beyond the bar's start, clear of the line
            up = ends[i] >= starts[i]
            fig.add_annotation(x=names[i], y=float(starts[i]), text=text[i], showarrow=False,
                               yanchor="top" if up else "bottom", yshift=-PAD_PX if up else
                               PAD_PX, font=dict(size=BAR_TEXT_PX), name="value label",
                               textangle=-90 if upright else 0)
    fig.add_hline(y=real, line_dash="dash", line_color="#333")
    fig.add_annotation(xref="paper", yref="paper", x=0, y=1, xanchor="left", yanchor="bottom",
                       yshift=2, showarrow=False, name="logit key",
                       text=f"<b>- - -</b> model's logit {real:.4f}", font=dict(size=12))
    fig.update_xaxes(type="category", tickangle=-45 if rotated else 0)
    fig.update_yaxes(range=[lo - room * unit, hi + room * unit])
    fig.update_layout(title=title, yaxis_title="added to the logit", showlegend=False,
                      margin=dict(l=10, r=10, t=TOP, b=BOTTOM), height=HEIGHT,
                      meta={"label_px": text_px})  # how far a value label reaches (y, px)
    return fig


def commitment_strip(layers: Sequence[int], tokens: Sequence[str], predicted: Sequence[str],
                     n_layer: int) -> go.Figure:
    """One cell per position: the first block after which the logit lens already shows the
    final top-1 (−1: the embeddings already do), on a discrete colour scale.

    >>> fig = commitment_strip([0, -1], ["a", "b"], ["b", "b"], 2)
    >>> fig.data[0].z.tolist(), list(fig.data[0].text[0])
    ([[0.0, -1.0]], ['0', 'E'])
    """
    z = np.asarray(layers, dtype=np.float32)[None, :]  # (1, T)
    names = axis_labels(tokens, z.shape[1])
    said = axis_labels(predicted, z.shape[1])
    text = np.array([[_stage(v) for v in z[0]]], dtype=object)
    where = ["in the embeddings" if v < 0 else f"after block {int(v)}" for v in z[0]]
    custom = np.array([[f"{t} ({i}) → next: {p}<br>top-1 first equals it {w}"
                        for i, (t, p, w) in enumerate(zip(names, said, where, strict=True))]],
                      dtype=object)
    ticks = [v - 1 for v in band_starts(n_layer + 1)]  # each shade's first block
    fig = go.Figure(go.Heatmap(
        z=z, text=text, texttemplate="%{text}" if z.shape[1] <= 64 else None,
        customdata=custom, hovertemplate="%{customdata}<extra></extra>",
        colorscale=_steps(n_layer + 1), zmin=-1.5, zmax=n_layer - 0.5, xgap=1,
        colorbar=dict(title=dict(text="block", side="top"), orientation="h", thickness=10,
                      len=min(1.0, 0.08 * (n_layer + 1)), x=1.0, xanchor="right", y=1.02,
                      yanchor="bottom", tickvals=ticks, ticktext=[_stage(v) for v in ticks])))
    pos = list(range(z.shape[1]))
    fig.update_xaxes(tickmode="array", tickvals=pos, ticktext=names)
    fig.update_yaxes(showticklabels=False)
    fig.update_layout(title="commitment: the first block whose logit-lens top-1 is the final one",
                      margin=dict(l=10, r=10, t=90, b=10), height=250)
    return fig


def _stage(layer: float) -> str:
    """A commitment layer as the strip writes it: "E" for the embeddings, else the block.

    >>> _stage(-1), _stage(2.0)
    ('E', '2')
    """
    return "E" if layer < 0 else str(int(layer))


MAX_SHADES = 12  # shades of the commitment scale: neighbours a visible step apart


def band_starts(n: int) -> list[int]:
    """The first of the ``n`` values (0 … n−1) that each shade of ``_steps(n)`` colours.

    >>> band_starts(3), band_starts(49)[:4], len(band_starts(49))
    ([0, 1, 2], [0, 5, 9, 13], 12)
    """
    bands = min(n, MAX_SHADES)
    return [-(-b * n // bands) for b in range(bands)]


def _steps(n: int) -> list[list]:
    """A colour scale of ``n`` flat steps, light (early) to dark (late), in at most
    ``MAX_SHADES`` shades: 49 stages (GPT-2 XL's embeddings and 48 blocks) in 49 shades
    would differ by 2 % from one to the next, so up to 12 neighbouring stages share a
    shade (the colour bar names each shade's first block; a cell's hover and text, its
    own).

    >>> _steps(2)
    [[0.0, '#c6dbef'], [0.5, '#c6dbef'], [0.5, '#08306b'], [1.0, '#08306b']]
    """
    light, dark = np.array([0xC6, 0xDB, 0xEF]), np.array([0x08, 0x30, 0x6B])
    bands = min(n, MAX_SHADES)
    scale = []
    for k in range(n):
        shade = k * bands // n  # the band of value k: band_starts' inverse
        rgb = light + (dark - light) * (shade / max(bands - 1, 1))
        colour = "#" + "".join(f"{int(round(c)):02x}" for c in rgb)
        scale += [[k / n, colour], [(k + 1) / n, colour]]
    return scale
