"""Figures of "Who wrote the prediction": the direct-logit-attribution waterfall and the
commitment strip over the prompt."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from gptviz.app.shared.heatmaps import axis_labels

UP, DOWN, TOTAL = "#59a14f", "#e15759", "#4c78a8"  # raises, lowers, the sum
MAX_BAR_TEXT = 40  # bars up to this many carry their value as text; more: hover only


def logit_waterfall(labels: Sequence[str], values: Sequence[float], real: float,
                    title: str) -> go.Figure:
    """One bar per component, each starting where the previous one ended, then the sum Σ;
    a dashed line marks the model's own logit ``real``.

    The bars' ``y`` are float64: a reader can add them up to the last digit.

    >>> fig = logit_waterfall(["E", "FFN"], [1.5, -0.5], 1.0, "t")
    >>> list(fig.data[0].measure), list(fig.data[0].x)
    (['relative', 'relative', 'total'], ['E', 'FFN', 'Σ'])
    """
    y = np.asarray(values, dtype=np.float64)  # (C,)
    total = float(y.sum())
    n = len(y)
    text = [f"{v:+.2f}" for v in y] + [f"{total:.2f}"] if n <= MAX_BAR_TEXT else None
    fig = go.Figure(go.Waterfall(
        x=[*labels, "Σ"], y=np.append(y, 0.0), measure=["relative"] * n + ["total"],
        text=text, textposition="outside", cliponaxis=False,
        increasing=dict(marker_color=UP), decreasing=dict(marker_color=DOWN),
        totals=dict(marker_color=TOTAL), connector=dict(line=dict(color="#999", width=1)),
        hovertemplate="%{x}: %{y:+.4f}<extra></extra>"))
    fig.add_hline(y=real, line_dash="dash", line_color="#333",
                  annotation_text=f"model's logit {real:.4f}", annotation_position="top left")
    fig.update_xaxes(type="category", tickangle=-45 if n > 12 else 0)
    fig.update_layout(title=title, yaxis_title="added to the logit", showlegend=False,
                      margin=dict(l=10, r=10, t=60, b=10), height=460)
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
    ticks = list(range(-1, n_layer, -(-(n_layer + 1) // 12)))  # at most 12 labels
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


def _steps(n: int) -> list[list]:
    """A colour scale of ``n`` flat steps, light (early) to dark (late).

    >>> _steps(2)
    [[0.0, '#c6dbef'], [0.5, '#c6dbef'], [0.5, '#08306b'], [1.0, '#08306b']]
    """
    light, dark = np.array([0xC6, 0xDB, 0xEF]), np.array([0x08, 0x30, 0x6B])
    scale = []
    for k in range(n):
        rgb = light + (dark - light) * (k / max(n - 1, 1))
        colour = "#" + "".join(f"{int(round(c)):02x}" for c in rgb)
        scale += [[k / n, colour], [(k + 1) / n, colour]]
    return scale
