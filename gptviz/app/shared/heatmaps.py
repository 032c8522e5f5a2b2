"""A labelled heatmap: the one figure most pages draw.

Axes are numeric positions whose tick labels are the tokens (plotly would merge
repeated tokens on a categorical axis). Cells that are −∞ (the causal mask) are
left blank, so the grey plot background shows through, and say "−∞ (masked)"
on hover.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from gptviz.app.shared.chips import Shown, visible

MASKED = "−∞ (masked)"
# kind -> (colour scale, fixed range or None); probabilities start at white = 0.
SCALES = {"prob": ("Blues", (0.0, 1.0)), "signed": ("RdBu_r", None), "seq": ("Viridis", None)}
BLANK = "#d4d4d4"  # what a masked (NaN) cell shows
MAX_LABELLED_SIDE = 32  # masked cells get a "−∞" label up to this many rows/columns
MAX_HOVER_CELLS = 60_000  # above this, hover shows numbers only (text arrays get heavy)
# Streamlit's theme turns plotly's automargin on: a margin short of the labels, titles or
# colour bar is widened after the chart is drawn, and the chart drawn a second time. The
# margins below hold them up front (measured in Chromium with the theme's Source Sans).
# A colour bar at the plot's right edge (plotly's x = 1.02 of the plot's width would need a
# margin that grows with the width) takes COLORBAR_PX with a 0 … 1 scale's tick labels: a
# trace's bar is 30 px wide with 10 px either side (76 px); the theme draws a coloraxis's
# bar apart, 16 px wide with 24 px either side and an 8 px outline (92 px).
COLORBAR, COLORBAR_PX = dict(x=1.0), {"trace": 80, "coloraxis": 96}
# What plotly adds to the extent of an axis's tick labels: 5 px ticks, their padding and a
# 14 px axis title with its standoff (20 px on x, 24 on y). Measured: 60.2 and 64.6 px.
AXIS_PX = {"x": 65, "y": 61}
LINE_EM = 1.4  # the height of a line of tick labels, in font sizes (16 px at 12)
# Advance widths of Source Sans in em, each group rounded up to its widest character; any
# other character (accents, arrows, CJK, emoji) counts as OTHER_EM, wider than all of them.
EM = {**dict.fromkeys(" |ij',.:;·lI", 0.27), **dict.fromkeys("!f()[]{}-tr/\\", 0.36),
      **dict.fromkeys("*s?z\"xcvyYJLFke#$+0123456789<=>^~_agXVESTZ`oAhunbdpq", 0.56),
      **dict.fromkeys("PRCKB&DG", 0.62), **dict.fromkeys("UNHOQ", 0.67),
      **dict.fromkeys("wMW%m@↵", 0.85)}
OTHER_EM = 1.05


def as_float32(values) -> np.ndarray:
    """Plotly gets float32 arrays (half the bytes of float64 on the wire).

    >>> as_float32([[1, 2]]).dtype
    dtype('float32')
    """
    if hasattr(values, "detach"):
        values = values.detach().float().cpu().numpy()
    return np.asarray(values, dtype=np.float32)


def shown_label(token: str, prefix: str = "", suffix: str = "") -> Shown:
    """A label that writes ``prefix`` and ``suffix`` as they are around ``token`` made visible.

    >>> shown_label("the", "0: "), shown_label(" the", "1: "), shown_label("a b", suffix=" (7)")
    ('0: the', '1: ·the', 'a·b (7)')
    """
    return Shown(f"{prefix}{visible(token)}{suffix}")


def axis_labels(labels: Sequence[str] | None, n: int) -> list[str]:
    """Visible tick labels, or the positions 0 .. n-1 as text; a ``Shown`` label is kept.

    >>> axis_labels(["a b", "\\n"], 2), axis_labels(None, 2)
    (['a·b', '↵'], ['0', '1'])
    """
    if labels is None:
        return [str(i) for i in range(n)]
    if len(labels) != n:
        raise ValueError(f"{len(labels)} labels for an axis of {n} cells.")
    return [str(visible(s if isinstance(s, str) else str(s))) for s in labels]


def hover_text(z: np.ndarray, x: list[str], y: list[str], decimals: int = 3) -> np.ndarray:
    """Per-cell hover text ``row → column: value``; −∞ cells read "−∞ (masked)".

    >>> hover_text(np.array([[0.5, -np.inf]]), ["a", "b"], ["q"])[0, 1]
    'q (0) → b (1)<br>−∞ (masked)'
    """
    text = np.empty(z.shape, dtype=object)
    for i, row in enumerate(z):
        for j, v in enumerate(row):
            value = MASKED if np.isneginf(v) else f"{v:.{decimals}f}"
            text[i, j] = f"{y[i]} ({i}) → {x[j]} ({j})<br>{value}"
    return text


def hover_recipe(z: np.ndarray, x: list[str], y: list[str], decimals: int = 3) -> dict:
    """How ``hover_text`` wrote a trace's customdata, so the canvas (``heatcanvas``) can write
    the same text in the browser instead of receiving one string per cell; no recipe (an
    empty ``meta``) for a matrix that holds NaN or +∞ (hover_text writes "nan", "inf"
    there, and the canvas would say −∞).

    >>> hover_recipe(np.zeros((1, 1)), ["a"], ["q"])
    {'hover': {'x': ['a'], 'y': ['q'], 'decimals': 3, 'masked': '−∞ (masked)'}}
    """
    if np.isnan(z).any() or np.isposinf(z).any():
        return {}
    return {"hover": {"x": list(x), "y": list(y), "decimals": decimals, "masked": MASKED}}


def heatmap(z, x_labels: Sequence[str] | None = None, y_labels: Sequence[str] | None = None,
            *, kind: str = "signed", title: str = "", x_title: str = "", y_title: str = "",
            decimals: int = 3, height: int | None = None) -> go.Figure:
    """A (rows, cols) matrix as a heatmap, row 0 at the top.

    ``kind``: "prob" (0..1, white to blue), "signed" (red/blue around 0) or "seq".

    >>> fig = heatmap([[1.0, 0.0], [0.4, 0.6]], ["the", "cat"], ["the", "cat"], kind="prob")
    >>> list(fig.layout.xaxis.ticktext)
    ['the', 'cat']
    """
    raw = as_float32(z)  # (rows, cols)
    if raw.ndim != 2:
        raise ValueError(f"heatmap needs a 2-D matrix, got shape {raw.shape}.")
    x, y = axis_labels(x_labels, raw.shape[1]), axis_labels(y_labels, raw.shape[0])
    shown = np.where(np.isfinite(raw), raw, np.float32("nan"))  # (rows, cols), −∞ -> gap
    scale, zrange = SCALES[kind]
    trace = go.Heatmap(z=shown, colorscale=scale, hoverongaps=True,
                       zmin=zrange[0] if zrange else None, zmax=zrange[1] if zrange else None,
                       zmid=0.0 if kind == "signed" else None)
    if raw.size <= MAX_HOVER_CELLS:
        trace.update(customdata=hover_text(raw, x, y, decimals), **_masked_labels(raw),
                     hovertemplate="%{customdata}<extra></extra>", meta=hover_recipe(raw, x, y,
                                                                                     decimals))
    else:
        trace.update(hovertemplate="row %{y}, col %{x}: %{z:.3f}<extra></extra>")
    fig = go.Figure(trace)
    fig.update_layout(title=title, plot_bgcolor=BLANK, height=height,
                      margin=dict(l=10, r=10, t=40 if title else 10, b=10))
    fig.update_xaxes(title=x_title, **_ticks(x_labels, x), side="top")
    fig.update_yaxes(title=y_title, **_ticks(y_labels, y), autorange="reversed")
    return fig


def _masked_labels(raw: np.ndarray) -> dict:
    """Write "−∞" into the masked cells of small matrices, so the gaps explain themselves."""
    masked = np.isneginf(raw)
    if not masked.any() or max(raw.shape) > MAX_LABELLED_SIDE:
        return {}
    return {"text": np.where(masked, "−∞", "").astype(object), "texttemplate": "%{text}"}


def _ticks(given: Sequence[str] | None, labels: list[str]) -> dict:
    """Token ticks at every position; numeric axes keep plotly's own ticks."""
    if given is None:
        return {"showgrid": False, "zeroline": False}
    return {"tickmode": "array", "tickvals": list(range(len(labels))), "ticktext": labels,
            "tickfont": {"size": 12}, "showgrid": False, "zeroline": False}


def matrix_panels(panels: dict[str, np.ndarray], x_labels: Sequence[str] | None = None,
                  y_labels: Sequence[str] | None = None, kind: str = "signed",
                  title: str = "") -> go.Figure:
    """Several same-shaped matrices side by side on one colour scale (e.g. E[ids], PE, X+PE).

    >>> matrix_panels({"A": np.eye(2), "B": np.eye(2)}).layout.annotations[0].text
    'A'
    """
    from plotly.subplots import make_subplots

    mats = {name: as_float32(m) for name, m in panels.items()}  # each (rows, cols)
    fig = make_subplots(rows=1, cols=len(mats), subplot_titles=list(mats),
                        horizontal_spacing=0.04, shared_yaxes=True)
    scale, (lo, hi) = SCALES[kind][0], _shared_range(list(mats.values()), kind)
    for col, (name, m) in enumerate(mats.items(), start=1):
        x, y = axis_labels(x_labels, m.shape[1]), axis_labels(y_labels, m.shape[0])
        fig.add_trace(go.Heatmap(z=np.where(np.isfinite(m), m, np.float32("nan")),
                                 coloraxis="coloraxis", name=name,
                                 customdata=hover_text(m, x, y), meta=hover_recipe(m, x, y),
                                 hovertemplate="%{customdata}<extra></extra>"),
                      row=1, col=col)
        fig.update_xaxes(**_ticks(x_labels, x), row=1, col=col)
        fig.update_yaxes(autorange="reversed", **_ticks(y_labels, y), row=1, col=col)
    fig.update_layout(title=title, plot_bgcolor=BLANK,
                      coloraxis=dict(colorscale=scale, cmin=lo, cmax=hi),
                      margin=dict(l=10, r=10, t=60, b=10))
    return fig


def _shared_range(mats: list[np.ndarray], kind: str) -> tuple[float, float]:
    """One colour range for several panels: fixed for "prob", symmetric for "signed"."""
    if SCALES[kind][1] is not None:
        return SCALES[kind][1]
    finite = np.concatenate([m[np.isfinite(m)] for m in mats])
    if finite.size == 0:
        return (-1.0, 1.0)
    if kind == "signed":
        bound = float(np.abs(finite).max()) or 1.0
        return (-bound, bound)
    return (float(finite.min()), float(finite.max()))


def title_room(fig: go.Figure, top: int = 86) -> go.Figure:
    """Room for the title above a top x-axis, so title, ticks and axis title do not overlap.

    >>> title_room(heatmap([[1.0]], title="t")).layout.margin.t
    86
    """
    fig.update_layout(margin=dict(t=top),
                      title=dict(yref="container", y=1.0, yanchor="top", pad=dict(t=10)))
    return fig


def legend_on_top(fig: go.Figure) -> go.Figure:
    """A horizontal legend above the plot, clear of the x-axis title below it.

    >>> legend_on_top(go.Figure()).layout.legend.yanchor
    'bottom'
    """
    fig.update_layout(legend=dict(orientation="h", y=1.0, yanchor="bottom", x=1.0,
                                  xanchor="right"))
    return fig


def label_px(labels: Sequence[str], size: float = 12) -> float:
    """At least the width (px) of the widest label in Source Sans at font ``size``.

    >>> label_px(["·the", "W"], 10)  # measured in Chromium: 16.3 and 7.9 px
    17.5
    """
    return size * max((sum(EM.get(ch, OTHER_EM) for ch in s) for s in labels), default=0.0)


def boxes_overlap(a: Sequence[float], b: Sequence[float]) -> bool:
    """Whether two boxes (left, top, right, bottom) share any area: labels placed by hand.

    >>> boxes_overlap((0, 0, 2, 2), (1, 1, 3, 3)), boxes_overlap((0, 0, 1, 1), (1, 0, 2, 1))
    (True, False)
    """
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def fit_margins(fig: go.Figure, colorbar_px: int | None = None) -> go.Figure:
    """Margins that already hold a ``heatmap``'s tick labels, axis titles and colour bar
    (moved to the plot's edge), so plotly's automargin has nothing to add and draws the
    chart once. Automargin stays on: a label wider than ``label_px`` says (another font)
    still gets its room, with the second draw. Call it after ``ticks.thin_ticks``. The colour
    bar's room is ``colorbar_px``, by default ``COLORBAR_PX`` of its kind.

    >>> fig = fit_margins(heatmap(np.eye(2), ["a", "b"], ["a", "b"], x_title="k", y_title="q"))
    >>> fig.layout.margin.l, fig.layout.margin.t, fig.layout.margin.r
    (68, 83, 80)
    """
    m = fig.layout.margin
    if colorbar_px is None:
        shared = any(getattr(trace, "coloraxis", None) for trace in fig.data)
        colorbar_px = COLORBAR_PX["coloraxis" if shared else "trace"]
    room = {"l": m.l or 0, "r": max(m.r or 0, colorbar_px), "t": m.t or 0, "b": m.b or 0}
    for name, axis in (("x", fig.layout.xaxis), ("y", fig.layout.yaxis)):
        if axis.showticklabels is False or not axis.ticktext:
            continue
        size = axis.tickfont.size or 12
        w, h = label_px(axis.ticktext, size), LINE_EM * size
        if name == "x":  # plotly turns crowded labels by 30° or 90°: the most any takes
            w = max(w, w / 2 + 0.87 * h, h)
        side = {"top": "t", "bottom": "b", "left": "l", "right": "r"}[
            axis.side or ("bottom" if name == "x" else "left")]
        room[side] = max(room[side], math.ceil(w + AXIS_PX[name]))
    for trace in fig.data:
        if getattr(trace, "showscale", None) is not False and hasattr(trace, "colorbar"):
            trace.colorbar.update(COLORBAR)
    fig.update_layout(margin=room, coloraxis_colorbar=COLORBAR)
    return fig
