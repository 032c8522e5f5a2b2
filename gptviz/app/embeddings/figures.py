"""Embedding figures: the input tokens' rows of E, and the whole vocabulary in PCA space."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from gptviz.app.shared.heatmaps import (
    as_float32,
    axis_labels,
    boxes_overlap,
    heatmap,
    label_px,
)
from gptviz.i18n import _, number

HIGHLIGHT, BACKGROUND = "#d62728", "rgba(110, 120, 140, 0.5)"
WEBGL_ABOVE = 5000  # points; WebGL keeps big vocabularies responsive
MAX_POINTS = 5000  # vocabulary rows drawn; a bigger vocabulary is sampled (see drawn_rows)
LONG_ID_TICKS = 10  # id labels of four digits or more that fit across the one-hot panel


def drawn_rows(n: int, most: int = MAX_POINTS) -> np.ndarray:
    """The rows of a vocabulary of ``n`` that a PCA scatter draws: all of them, or a fixed
    random sample of ``most`` (seed 0, the same on every page and run), in id order.

    >>> len(drawn_rows(65)), len(drawn_rows(50_257)), drawn_rows(50_257)[:2].tolist()
    (65, 5000, [9, 10])
    """
    if n <= most:
        return np.arange(n)
    return np.sort(np.random.default_rng(0).choice(n, most, replace=False))


def embedding_rows(X, tokens: Sequence[str], title: str | None = None) -> go.Figure:
    """The input tokens' embedding rows X (T, d): tokens down, dimensions across.

    >>> embedding_rows(np.zeros((2, 4)), ["a", "b"]).data[0].z.shape
    (2, 4)
    """
    return heatmap(X, None, tokens, kind="signed",
                   title=title or _("E[ids]: one row per input token"), x_title=_("dimension"),
                   y_title=_("token"))


def one_hot_figure(one_hot, tokens: Sequence[str], ids: Sequence[int]) -> go.Figure:
    """Only the vocabulary columns the input uses, so the 1s stay visible (T, n_used).

    >>> one_hot_figure(np.eye(3)[[2, 0]], ["c", "a"], [2, 0]).layout.xaxis.ticktext
    ('0', '2')
    >>> ids = list(range(10_000, 10_021))  # 21 five-digit ids: every third is labelled
    >>> one_hot_figure(np.ones((21, 10_021)), ["t"] * 21, ids).layout.xaxis.ticktext[:2]
    ('10000', '10003')
    """
    used = sorted(set(int(i) for i in ids))
    oh = as_float32(one_hot)[:, used]  # (T, n_used)
    long = len(str(used[-1])) >= 4  # GPT-2's ids: turned on end, they need the title's room
    fig = heatmap(oh, [str(i) for i in used], tokens, kind="prob",
                  title=_("one-hot rows OH (columns: the ids used)"),
                  x_title="" if long else _("token id"), y_title=_("token"))
    if long and len(used) > LONG_ID_TICKS:  # every k-th id (hover names every column)
        step, axis = -(-len(used) // LONG_ID_TICKS), fig.layout.xaxis
        fig.update_xaxes(tickvals=axis.tickvals[::step], ticktext=axis.ticktext[::step])
    return fig


def pca_scatter(coords, labels: Sequence[str], highlight: Sequence[int] = (),
                explained=None, title: str | None = None) -> go.Figure:
    """Every vocabulary row as a point (n, 2) or (n, 3), or ``drawn_rows``' sample of a big
    vocabulary; ``highlight`` ids (always drawn) in red. In 2-D the axes are fixed and a
    highlighted token is labelled only where its label overlaps no other label, no red point
    and stays in the plot (``place_labels``); the legend says how many are labelled.

    >>> fig = pca_scatter(np.zeros((3, 2)), ["a", "b", "c"], [1]); [t.name for t in fig.data]
    ['vocabulary', 'input tokens']
    """
    c = as_float32(coords)  # (n, k), k = 2 or 3
    if c.ndim != 2 or c.shape[1] not in (2, 3):
        raise ValueError(f"coords must be (n, 2) or (n, 3), got {c.shape}.")
    names = np.array(axis_labels(labels, c.shape[0]), dtype=object)
    chosen = np.array(sorted(set(int(i) for i in highlight)), dtype=np.int64)
    rows = drawn_rows(c.shape[0])
    axes = _axis_titles(c.shape[1], explained)
    vocabulary, inputs = _("vocabulary"), _("input tokens")
    if c.shape[1] == 3:  # labels only for a few tokens: in 3-D they cannot be kept apart
        few = len(chosen) <= LABELS_3D
        fig = go.Figure([
            _points(c[rows], names[rows], vocabulary, dict(size=4, color=BACKGROUND),
                    "markers"),
            _points(c[chosen], names[chosen], inputs if few else
                    _("input tokens (hover for their names)"), dict(size=9, color=HIGHLIGHT),
                    "markers+text" if few else "markers")])
        fig.update_layout(scene=dict(xaxis_title=axes[0], yaxis_title=axes[1],
                                     zaxis_title=axes[2], camera=dict(eye=CAMERA_EYE)),
                          legend=dict(orientation="h", y=1.0, yanchor="bottom"),
                          height=HEIGHT_3D)
    else:
        x_range, y_range = _range(c[rows, 0], c[chosen, 0]), _range(c[rows, 1], c[chosen, 1])
        where = place_labels(c[chosen], names[chosen].tolist(), x_range, y_range)
        shown = sum(w is not None for w in where)
        name = inputs if shown == len(chosen) else (
            _("input tokens ({shown} of {n} labelled)").format(shown=shown, n=len(chosen)))
        fig = go.Figure([
            _points(c[rows], names[rows], vocabulary, dict(size=4, color=BACKGROUND),
                    "markers"),
            go.Scatter(x=c[chosen, 0], y=c[chosen, 1], mode="markers+text", name=name,
                       marker=dict(size=MARKER_PX, color=HIGHLIGHT),
                       text=[t if w else "" for t, w in zip(names[chosen], where, strict=True)],
                       textposition=[w or "top center" for w in where],
                       textfont=dict(size=TEXT_SIZE), customdata=names[chosen].tolist(),
                       hovertemplate=f"%{{customdata}}<extra>{inputs}</extra>")])
        fig.update_xaxes(title=axes[0], range=list(x_range), autorange=False)
        fig.update_yaxes(title=axes[1], range=list(y_range), autorange=False)
        fig.update_layout(legend=dict(orientation="h"), height=HEIGHT)
    fig.update_layout(title=title or _("vocabulary, PCA of E"),
                      margin=dict(l=10, r=10, t=TOP_PX, b=10))
    return fig


HEIGHT, TOP_PX = 520, 70  # the 2-D scatter's height and top margin (title and legend)
HEIGHT_3D, CAMERA_EYE = 640, dict(x=1.6, y=1.6, z=1.1)  # the 3-D scene whole, axis titles too
LABELS_3D = 8  # input tokens named beside their points in 3-D; more only on hover
MIN_PLOT_W = 400  # px: the narrowest plot area the labels are placed for (wider only helps)
PLOT_H = HEIGHT - TOP_PX - 10 - 60  # px: at most the plot area's height (x ticks and title)
MARKER_PX, TEXT_SIZE, GAP_PX = 9, 12, 2  # red point diameter, label font size, label gap
TEXT_H = 1.3 * TEXT_SIZE  # a label's line height (px)
PLACES = ("top center", "bottom center", "middle right", "middle left")


def _range(*values: np.ndarray) -> tuple[float, float]:
    """The finite values' span widened by 6 % each side (a single value: ±1)."""
    v = np.concatenate([np.asarray(a, np.float64).ravel() for a in values])
    v = v[np.isfinite(v)]
    if v.size == 0:
        return (-1.0, 1.0)
    lo, hi = float(v.min()), float(v.max())
    pad = 0.06 * (hi - lo) if hi > lo else 1.0
    return (lo - pad, hi + pad)


def label_box(x: float, y: float, width: float, place: str) -> tuple[float, float, float, float]:
    """(left, top, right, bottom) px of a label ``width`` px wide at ``place`` around the
    point at px (x, y), y downwards, as plotly puts ``textposition`` text."""
    r = MARKER_PX / 2 + GAP_PX
    if place == "top center":
        return (x - width / 2, y - r - TEXT_H, x + width / 2, y - r)
    if place == "bottom center":
        return (x - width / 2, y + r, x + width / 2, y + r + TEXT_H)
    if place == "middle right":
        return (x + r, y - TEXT_H / 2, x + r + width, y + TEXT_H / 2)
    return (x - r - width, y - TEXT_H / 2, x - r, y + TEXT_H / 2)  # middle left


def to_px(points: np.ndarray, x_range: Sequence[float], y_range: Sequence[float],
          width: float = MIN_PLOT_W, height: float = PLOT_H) -> np.ndarray:
    """Data (n, 2) → px (n, 2) in a plot area ``width`` × ``height``, y downwards."""
    p = np.asarray(points, np.float64)
    x = (p[:, 0] - x_range[0]) / (x_range[1] - x_range[0]) * width
    y = (y_range[1] - p[:, 1]) / (y_range[1] - y_range[0]) * height
    return np.stack([x, y], axis=1)


def place_labels(points: np.ndarray, texts: Sequence[str], x_range: Sequence[float],
                 y_range: Sequence[float], height: float = PLOT_H) -> list[str | None]:
    """A ``textposition`` for each point's label, or None to leave it unlabelled: in order,
    the first place (``PLACES``) whose box stays in the plot and overlaps no label placed
    before and no point. Boxes are measured in the narrowest plot (``MIN_PLOT_W`` ×
    ``height``, the plot area's height): a wider or taller one only moves the points apart.

    >>> place_labels(np.array([[0.0, 0.0], [0.0, 0.0]]), ["a", "b"], (-1, 1), (-1, 1))
    ['top center', 'bottom center']
    """
    px = to_px(points, x_range, y_range, height=height)
    r = MARKER_PX / 2
    dots = [(x - r, y - r, x + r, y + r) for x, y in px if np.isfinite(x) and np.isfinite(y)]
    placed: list[tuple[float, float, float, float]] = []
    out: list[str | None] = []
    for (x, y), text in zip(px, texts, strict=True):
        where = None
        if np.isfinite(x) and np.isfinite(y) and text:
            w = label_px([text], TEXT_SIZE)
            for place in PLACES:
                box = label_box(x, y, w, place)
                inside = box[0] >= 0 and box[1] >= 0 and box[2] <= MIN_PLOT_W and (
                    box[3] <= height)
                if inside and not any(boxes_overlap(box, o) for o in placed + dots):
                    where = place
                    placed.append(box)
                    break
        out.append(where)
    return out


def _points(c: np.ndarray, names: np.ndarray, name: str, marker: dict, mode: str):
    common = dict(mode=mode, name=name, marker=marker, text=names.tolist(),
                  textposition="top center", hovertemplate="%{text}<extra>" + name + "</extra>")
    if c.shape[1] == 3:
        return go.Scatter3d(x=c[:, 0], y=c[:, 1], z=c[:, 2], **common)
    cls = go.Scattergl if len(c) > WEBGL_ABOVE else go.Scatter
    return cls(x=c[:, 0], y=c[:, 1], **common)


def _axis_titles(k: int, explained) -> list[str]:
    if explained is None:
        return [f"PC{i + 1}" for i in range(k)]
    return [_("PC{i} ({share} % of variance)").format(i=i + 1, share=number(100 * float(r), 1))
            for i, r in enumerate(explained)]


def neighbour_bars(labels: Sequence[str], similarities, token: str = "") -> go.Figure:
    """Cosine similarity of the nearest neighbours, most similar on top.

    >>> neighbour_bars(["b", "c"], [0.75, 0.5], "a").data[0].x.tolist()
    [0.75, 0.5]
    """
    sims = as_float32(similarities)  # (k,)
    names = axis_labels(labels, len(sims))
    pos = np.arange(len(sims))
    fig = go.Figure(go.Bar(x=sims, y=pos, orientation="h", customdata=names,
                           marker_color="#4c78a8",
                           hovertemplate="%{customdata}: cos = %{x:.3f}<extra></extra>"))
    fig.update_yaxes(tickmode="array", tickvals=pos, ticktext=names, autorange="reversed")
    fig.update_layout(title=_("nearest neighbours of {token}").format(
                          token=repr(axis_labels([token], 1)[0])),
                      xaxis=dict(title=_("cosine similarity"), range=[-1, 1]),
                      margin=dict(l=10, r=10, t=40, b=10), height=80 + 28 * len(sims))
    return fig
