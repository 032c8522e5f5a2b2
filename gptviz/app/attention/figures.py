"""Attention figures: one head large, every head as thumbnails, each step of a head,
the seeds' masking variants side by side, and head ablation's effect."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from gptviz.app.shared.heatmaps import as_float32, axis_labels, heatmap, matrix_panels

MAX_GRID_HOVER_CELLS = 40_000  # token names on hover only for small grids (JSON size)
# Which colour scale each step of a head gets, and its caption (the formula it shows).
HEAD_STEPS = {
    "Q": ("signed", "Q = LN(X) W_Q"), "K": ("signed", "K = LN(X) W_K"),
    "V": ("signed", "V = LN(X) W_V"), "scores": ("signed", "scores = Q Kᵀ / √d_k"),
    "M": ("signed", "mask M (−∞ above the diagonal)"),
    "masked scores": ("signed", "Q Kᵀ / √d_k + M"),
    "pattern": ("prob", "W_attn = softmax(Q Kᵀ / √d_k + M)"), "Z": ("signed", "Z = W_attn V"),
}


def attention_pattern(pattern, tokens: Sequence[str], title: str = "attention pattern",
                      height: int | None = 520) -> go.Figure:
    """One head's pattern (T, T) large: rows are queries, columns the keys they read.

    >>> attention_pattern(np.eye(2), ["a", "b"]).data[0].z.shape
    (2, 2)
    """
    return heatmap(pattern, tokens, tokens, kind="prob", title=title, x_title="key",
                   y_title="query", height=height)


def head_step_figures(steps: Mapping[str, np.ndarray], tokens: Sequence[str],
                      bias: bool = True) -> dict[str, go.Figure]:
    """One heatmap per step of a head (``attention_math.head_tensors`` output).

    (T, T) steps get tokens on both axes; Q, K, V and Z get tokens by dimension. With
    ``bias`` (the model's), the titles of Q, K and V add their bias: ``Q = LN(X) W_Q + b_Q``.

    >>> figs = head_step_figures({"pattern": np.eye(2)}, ["a", "b"]); list(figs)
    ['pattern']
    """
    figs = {}
    for name, values in steps.items():
        kind, caption = HEAD_STEPS.get(name, ("signed", name))
        if bias and name in ("Q", "K", "V"):
            caption += f" + b_{name}"
        m = as_float32(values)  # (T, T) or (T, d_k)
        square = name in ("scores", "M", "masked scores", "pattern")
        figs[name] = heatmap(m, tokens if square else None, tokens, kind=kind, title=caption,
                             x_title="key" if square else "", y_title="token")
        # (Q, K, V, Z: no x title, it would run into theirs; the caption says "dimensions")
    return figs


def attention_grid(patterns, tokens: Sequence[str] | None = None,
                   selected: tuple[int, int] | None = None, cell_px: int = 110,
                   titles: Sequence[str] | None = None) -> go.Figure:
    """All patterns (n_layer, n_head, T, T) as small multiples: layers down, heads across.

    Thumbnails carry no tick labels; hover gives layer, head, query → key. The
    ``selected`` (layer, head) gets a frame. ``titles`` (one per head, layer by layer)
    replace the "L0 H0" ones.

    >>> attention_grid(np.ones((2, 3, 4, 4)) / 4).layout.annotations[0].text
    'L0 H0'
    """
    p = as_float32(patterns)  # (L, H, T, T)
    n_layer, n_head, t = p.shape[0], p.shape[1], p.shape[-1]
    labels = axis_labels(tokens, t)
    fig = make_subplots(rows=n_layer, cols=n_head,
                        horizontal_spacing=min(0.01, 0.5 / max(n_head - 1, 1)),
                        vertical_spacing=min(0.04, 0.5 / max(n_layer - 1, 1)),
                        subplot_titles=list(titles) if titles is not None else
                        [f"L{ly} H{h}" for ly in range(n_layer) for h in range(n_head)])
    small = p.size <= MAX_GRID_HOVER_CELLS
    pairs = _pair_text(labels) if small else None  # (T, T) "query → key" for the hover
    for ly in range(n_layer):
        for h in range(n_head):
            where = "%{text}" if small else "query %{y} → key %{x}"
            fig.add_trace(go.Heatmap(
                z=p[ly, h], coloraxis="coloraxis", name=f"L{ly} H{h}", text=pairs,
                hovertemplate=f"L{ly} H{h}<br>{where}<br>%{{z:.3f}}<extra></extra>"),
                row=ly + 1, col=h + 1)
    fig.update_xaxes(showticklabels=False, showgrid=False)
    fig.update_yaxes(showticklabels=False, showgrid=False, autorange="reversed")
    fig.update_annotations(font_size=10)
    fig.update_layout(coloraxis=dict(colorscale="Blues", cmin=0.0, cmax=1.0),
                      height=max(160, cell_px * n_layer + 40), margin=dict(l=5, r=5, t=25, b=5))
    if selected is not None:
        _frame(fig, *selected, n_head)
    return fig


def _pair_text(labels: list[str]) -> np.ndarray:
    t = len(labels)
    return np.array([[f"{labels[i]} ({i}) → {labels[j]} ({j})" for j in range(t)]
                     for i in range(t)], dtype=object)  # (T, T)


def _frame(fig: go.Figure, layer: int, head: int, n_head: int) -> None:
    n = layer * n_head + head + 1  # subplot number, row by row
    suffix = "" if n == 1 else str(n)
    fig.add_shape(type="rect", xref=f"x{suffix} domain", yref=f"y{suffix} domain",
                  x0=-0.02, x1=1.02, y0=-0.02, y1=1.02, line=dict(color="#d62728", width=3))


def masking_comparison(simplified, renormalised, neg_inf, tokens: Sequence[str],
                       max_delta: float | None = None) -> go.Figure:
    """The seeds' weight-free pattern, then causal by renormalising and by −∞ masking.

    >>> fig = masking_comparison(np.eye(2), np.eye(2), np.eye(2), ["a", "b"], 0.0)
    >>> len(fig.data)
    3
    """
    title = "softmax(X Xᵀ) and its two causal forms"
    if max_delta is not None:
        title += f" — max |renormalised − (−∞)| = {max_delta:.1e}"
    return matrix_panels({"softmax(X Xᵀ)": simplified,
                          "softmax, zero the future, renormalise": renormalised,
                          "softmax(X Xᵀ + M)": neg_inf},
                         tokens, tokens, kind="prob", title=title)


def ablation_bars(labels: Sequence[str], before, after,
                  title: str = "next-token probability") -> go.Figure:
    """Grouped bars: P(token) with every head, and with the chosen heads switched off.

    >>> fig = ablation_bars(["a", "b"], [0.7, 0.3], [0.4, 0.6]); [t.name for t in fig.data]
    ['all heads', 'heads ablated']
    """
    x = axis_labels(labels, len(labels))
    pos = np.arange(len(x))  # numeric x: two tokens that look alike keep their own bars
    before, after = as_float32(before), as_float32(after)  # (k,), (k,)
    fig = go.Figure([
        go.Bar(x=pos, y=y, name=name, marker_color=colour, customdata=x,
               hovertemplate=f"%{{customdata}}: %{{y:.4f}}<extra>{name}</extra>")
        for name, y, colour in [("all heads", before, "#4c78a8"),
                                ("heads ablated", after, "#f58518")]
    ])
    fig.update_layout(barmode="group", title=title, yaxis=dict(title="P(next token)",
                      rangemode="tozero"), xaxis=dict(tickmode="array", tickvals=pos, ticktext=x),
                      margin=dict(l=10, r=10, t=40, b=10))
    return fig
