"""Figures of the circuits views: a head's d × d circuits, the terms of its scores, the OV
circuit's tokens, the taxonomy's scores, and one (T, T) panel per layer."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from gptviz.app.shared.heatmaps import BLANK, as_float32, axis_labels
from gptviz.i18n import _

MAX_PANEL_HOVER_CELLS = 40_000  # hover names the tokens only below this (JSON size)
MAX_TERM_HOVER_CELLS = 4_000  # the same for the score terms, redrawn on every choice of (i, j)
PANELS_PER_ROW = 4


def circuit_matrix(m, title: str, height: int = 430) -> go.Figure:
    """A d × d circuit (W_QK or W_OV) as a signed heatmap: rows and columns are dimensions.

    >>> circuit_matrix(np.eye(3), "W_QK").layout.yaxis.autorange
    'reversed'
    """
    z = as_float32(m)  # (d, d)
    bound = float(np.abs(z).max()) or 1.0
    fig = go.Figure(go.Heatmap(z=z, colorscale="RdBu_r", zmin=-bound, zmax=bound, zmid=0.0,
                               hovertemplate=_("row %{y}, column %{x}: %{z:.4f}")
                               + "<extra></extra>"))
    fig.update_layout(title=title, height=height, margin=dict(l=10, r=10, t=40, b=10))
    fig.update_xaxes(title=_("dimension (column)"), showgrid=False, zeroline=False)
    fig.update_yaxes(title=_("dimension (row)"), autorange="reversed", showgrid=False,
                     zeroline=False, scaleanchor="x")
    return fig


def score_term_panels(terms: Mapping[str, np.ndarray], titles: Mapping[str, str],
                      tokens: Sequence[str]) -> go.Figure:
    """The terms of s_ij side by side on one signed colour scale (their sizes compare).

    >>> fig = score_term_panels({"a": np.eye(2), "b": np.ones((2, 2))}, {"a": "A", "b": "B"},
    ...                         ["x", "y"])
    >>> [a.text for a in fig.layout.annotations], fig.layout.coloraxis.cmax
    (['A', 'B'], 1.0)
    """
    mats = {k: as_float32(v) for k, v in terms.items()}  # each (T, T)
    t = next(iter(mats.values())).shape[-1]
    bound = max(float(np.abs(m).max()) for m in mats.values()) or 1.0
    fig = make_subplots(rows=1, cols=len(mats), subplot_titles=[titles[k] for k in mats],
                        horizontal_spacing=0.02, shared_yaxes=True)
    pairs = _pairs(axis_labels(tokens, t)) if t * t * len(mats) <= MAX_TERM_HOVER_CELLS else None
    where = "%{text}" if pairs is not None else _("query %{y} → key %{x}")
    for col, (k, m) in enumerate(mats.items(), start=1):
        fig.add_trace(go.Heatmap(z=m, coloraxis="coloraxis", text=pairs, name=titles[k],
                                 hovertemplate=f"{where}<br>%{{z:.4f}}<extra></extra>"),
                      row=1, col=col)
    fig.update_xaxes(showticklabels=False, showgrid=False, zeroline=False)
    fig.update_yaxes(showticklabels=False, showgrid=False, zeroline=False, autorange="reversed")
    fig.update_annotations(font_size=12)
    fig.update_layout(coloraxis=dict(colorscale="RdBu_r", cmin=-bound, cmax=bound),
                      height=330, margin=dict(l=10, r=10, t=40, b=10))
    return fig


def _pairs(labels: list[str]) -> np.ndarray:
    """(T, T) hover text "query (i) → key (j)"."""
    t = len(labels)
    return np.array([[f"{labels[i]} ({i}) → {labels[j]} ({j})" for j in range(t)]
                     for i in range(t)], dtype=object)


def ov_bars(up: Sequence[str], up_values, down: Sequence[str], down_values, title: str,
            names: tuple[str, str] | None = None, x_title: str | None = None) -> go.Figure:
    """Horizontal bars: the output tokens a head pushes up most (blue) and down most (red);
    an empty group is left out.

    >>> fig = ov_bars(["a"], [2.0], ["b"], [-1.0], "t"); [t.name for t in fig.data]
    ['pushed up', 'pushed down']
    """
    names = names or (_("pushed up"), _("pushed down"))
    x_title = _("logit change ℓ<sub>t</sub>") if x_title is None else x_title
    fig = go.Figure()
    for name, labels, values, colour in [(names[0], up, up_values, "#4c78a8"),
                                         (names[1], down, down_values, "#e45756")]:
        x = as_float32(values)  # (k,)
        if not len(x):
            continue
        shown = axis_labels(labels, len(x))
        fig.add_trace(go.Bar(x=x, y=[f"{s} " for s in shown], orientation="h", name=name,
                             marker_color=colour,
                             hovertemplate="%{y}: %{x:.3f}<extra>" + name + "</extra>"))
    fig.update_layout(title=title, height=max(260, 22 * (len(up) + len(down)) + 80),
                      xaxis_title=x_title, margin=dict(l=10, r=10, t=40, b=10),
                      showlegend=len(fig.data) > 1,
                      legend=dict(orientation="h", y=1.0, yanchor="bottom", x=1.0,
                                  xanchor="right"))
    fig.update_yaxes(autorange="reversed", type="category")
    return fig


def taxonomy_scores(scores: Mapping[str, np.ndarray], labels: Sequence[Sequence[str]]
                    ) -> go.Figure:
    """Every head (rows) against every kind (columns), each score in its cell; a score not
    measured (NaN) stays grey and reads "n/a".

    >>> fig = taxonomy_scores({"self": np.ones((1, 2))}, [["self", "self"]])
    >>> list(fig.data[0].y), fig.layout.xaxis.ticktext  # every kind named
    (['L0 H0: self', 'L0 H1: self'], ('self',))
    """
    kinds = list(scores)
    z = np.stack([as_float32(scores[k]).reshape(-1) for k in kinds], axis=1)  # (L·H, kinds)
    rows = [f"L{ly} H{h}: {lab}" for ly, heads in enumerate(labels) for h, lab in enumerate(heads)]
    text = np.where(np.isnan(z), _("n/a"), np.char.mod("%.2f", np.nan_to_num(z)))
    fig = go.Figure(go.Heatmap(z=z, x=kinds, y=rows, text=text, texttemplate="%{text}",
                               colorscale="Blues", zmin=0.0, zmax=1.0, hoverongaps=True,
                               hovertemplate="%{y}<br>%{x}: %{text}<extra></extra>"))
    fig.update_layout(height=max(220, 24 * len(rows) + 70), plot_bgcolor=BLANK,
                      margin=dict(l=10, r=10, t=30, b=10))
    # every kind named, even when long row names leave the columns narrow (plotly would
    # label every other one)
    fig.update_xaxes(side="top", tickmode="array", tickvals=kinds, ticktext=kinds)
    fig.update_yaxes(autorange="reversed")
    return fig


def layer_panels(mats, tokens: Sequence[str], cmax: float, title: str,
                 panel_titles: Sequence[str], cell_px: int = 300) -> go.Figure:
    """One (T, T) matrix per layer, up to four a row, on one white-to-blue scale 0 .. cmax.

    >>> fig = layer_panels(np.ones((2, 3, 3)), ["a", "b", "c"], 1.0, "t", ["L0", "L1"])
    >>> len(fig.data), fig.layout.coloraxis.cmax
    (2, 1.0)
    """
    m = as_float32(mats)  # (L, T, T)
    n, t = m.shape[0], m.shape[-1]
    cols = min(n, PANELS_PER_ROW)
    rows = math.ceil(n / cols)
    labels = axis_labels(tokens, t)
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=list(panel_titles),
                        horizontal_spacing=0.03, vertical_spacing=0.3 / rows)
    pairs = _pairs(labels) if m.size <= MAX_PANEL_HOVER_CELLS else None  # (T, T)
    where = "%{text}" if pairs is not None else _("query %{y} → key %{x}")
    for k in range(n):
        fig.add_trace(go.Heatmap(z=m[k], coloraxis="coloraxis", text=pairs,
                                 name=panel_titles[k],
                                 hovertemplate=f"{panel_titles[k]}<br>{where}<br>%{{z:.3f}}"
                                               "<extra></extra>"),
                      row=k // cols + 1, col=k % cols + 1)
    fig.update_xaxes(showticklabels=False, showgrid=False, zeroline=False)
    fig.update_yaxes(showticklabels=False, showgrid=False, zeroline=False, autorange="reversed")
    fig.update_layout(title=title, coloraxis=dict(colorscale="Blues", cmin=0.0, cmax=cmax),
                      height=rows * cell_px + 60, margin=dict(l=10, r=10, t=60, b=10))
    return fig
