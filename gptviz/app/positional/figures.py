"""Positional-encoding figures: the table PE, a few of its columns as curves, and P Pᵀ."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from gptviz.app.shared.clipping import clip_colours
from gptviz.app.shared.heatmaps import (
    as_float32,
    heatmap,
    legend_on_top,
    matrix_panels,
    title_room,
)
from gptviz.app.speedups.svgplot import Series, SvgChart, line_chart

CURVES = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf")


def pe_heatmap(P, title: str = "PE: positions × dimensions", what: str = "PE") -> go.Figure:
    """The (N, d) table, position i down, dimension across, over ±r of ``clipped_range``.

    >>> pe_heatmap(np.zeros((4, 2))).data[0].z.shape
    (4, 2)
    """
    return clip_colours(heatmap(P, None, None, kind="signed", title=title,
                                x_title="dimension", y_title="position i"), P, what)


def pe_curves(P, dims: Sequence[int], title: str = "chosen dimensions along the positions"
              ) -> SvgChart:
    """Column ``dim`` of PE against the position, one line per chosen dimension (an inline
    SVG chart: the page's other figures are heatmaps on a canvas, so it loads no chart
    library).

    For the sinusoidal table, column 2j is sin(i / 10000^(2j/d)) and 2j+1 its cosine:
    low dimensions swing fast, high ones slowly.

    >>> [s.name for s in pe_curves(np.zeros((4, 6)), [0, 5]).series]
    ['dim 0', 'dim 5']
    """
    p = as_float32(P)  # (N, d)
    bad = [d for d in dims if not 0 <= d < p.shape[1]]
    if bad:
        raise ValueError(f"dimension(s) {bad} out of range: PE has {p.shape[1]} dimensions.")
    i = list(range(p.shape[0]))
    series = [Series(f"dim {d}", "line", i, p[:, d].tolist(), colour=CURVES[k % len(CURVES)],
                     hover=[f"dim {d}, i = {n}: {v:.3f}" for n, v in enumerate(p[:, d])])
              for k, d in enumerate(dims)]
    return line_chart(series, title=title, x_title="position i", y_title="PE[i, dim]",
                      height=380)


PLOT_PX = 900  # the curves' plot width in a page column (a 1280 px window)
PX_PER_CROSSING = 20  # the curves are drawn over as many positions as keep this much room


def readable_positions(P, dims: Sequence[int], plot_px: int = PLOT_PX,
                       px_per_crossing: int = PX_PER_CROSSING) -> int:
    """How many positions (from 0) the curves of ``dims`` are drawn over: the most for which
    each curve crosses its column's mean at most ``plot_px / px_per_crossing`` times (once
    every 20 px of a 900 px plot: 45), all N when that fits, at least 16. At N = 1,024 the
    sinusoid of dimension 0 (period 2π) crosses its mean 326 times: drawn whole it is a
    solid band; drawn over positions 0 … 141 it is 45 readable half-waves.

    >>> P = np.sin(np.arange(1024)[:, None] / np.array([1.0, 10000.0]))  # fast and slow
    >>> readable_positions(P, [0]), readable_positions(P, [1]), readable_positions(P, [0, 1])
    (142, 1024, 142)
    """
    p = as_float32(P)  # (N, d)
    n = p.shape[0]
    most = plot_px // px_per_crossing  # crossings the plot can hold
    best = n
    for d in dims:
        centred = p[:, d].astype(np.float64) - float(p[:, d].mean())  # (N,)
        flips = np.flatnonzero(np.signbit(centred[1:]) != np.signbit(centred[:-1])) + 1
        if len(flips) > most:
            best = min(best, int(flips[most]))  # the position of the crossing past the limit
    return max(min(16, n), best)


def pe_similarity_heatmap(S, title: str = "position similarity PE · PEᵀ") -> go.Figure:
    """S (N, N): S[i, j] = PE_i · PE_j; for sinusoids it depends only on |i − j|
    (``gptviz.analysis.positions.sinusoidal_shift_check``). Red above 0, blue below (learned
    positions can point apart), over ±r of ``clipped_range``.

    >>> S = np.ones((20, 20)); S[0, 0] = 9.0
    >>> t = pe_similarity_heatmap(S).data[0]
    >>> t.zmin, t.zmax, t.zmid
    (-1.0, 1.0, 0.0)
    """
    return clip_colours(heatmap(S, None, None, kind="signed", title=title,
                                x_title="position j", y_title="position i"), S, "P Pᵀ")


def x_plus_pe_figure(X, PE, tokens: Sequence[str]) -> go.Figure:
    """E[ids], PE and their sum X + PE (each (T, d)) side by side: what block 0 receives.

    >>> fig = x_plus_pe_figure(np.ones((2, 3)), np.ones((2, 3)), ["a", "b"])
    >>> [a.text for a in fig.layout.annotations]
    ['E[ids]', 'PE', 'X = E[ids] + PE']
    """
    x, pe = as_float32(X), as_float32(PE)  # (T, d), (T, d)
    return matrix_panels({"E[ids]": x, "PE": pe, "X = E[ids] + PE": x + pe}, None, tokens,
                         kind="signed", title="what the first block receives")


def rope_angle_heatmap(angles, wrapped: bool) -> go.Figure:
    """The RoPE angles p·θ_m (N, d_k/2), raw in radians or wrapped to [0, 2π).

    >>> rope_angle_heatmap(np.ones((3, 2)), wrapped=False).data[0].z.shape
    (3, 2)
    """
    a = np.mod(angles, 2 * np.pi) if wrapped else np.asarray(angles)  # (N, d_k/2)
    what = "p·θ_m mod 2π" if wrapped else "p·θ_m (radians)"
    fig = heatmap(a, None, None, kind="seq", title=f"RoPE angles {what}",
                  x_title="pair m (dimensions 2m, 2m+1 of q and k)", y_title="position p")
    return title_room(fig)


KIND_COLOURS = {"sinusoidal": "#1f77b4", "learned": "#ff7f0e", "none": "#7f7f7f",
                "rope": "#2ca02c"}


def val_curves_figure(curves: Mapping[str, tuple[Sequence[int], Sequence[float]]],
                      baseline: float | None = None) -> go.Figure:
    """Validation loss against steps, one line per encoding: {kind: (steps, losses)}; a
    dotted line at ``baseline``, the loss of character frequencies alone.

    >>> val_curves_figure({"rope": ([0, 50], [4.7, 2.9])}).data[0].name
    'RoPE'
    """
    fig = go.Figure([go.Scatter(
        x=np.asarray(steps), y=np.asarray(losses, np.float64), mode="lines+markers",
        name=kind_name(kind), line=dict(color=KIND_COLOURS.get(kind)),
        hovertemplate=f"{kind_name(kind)}, step %{{x}}: %{{y:.4f}}<extra></extra>")
        for kind, (steps, losses) in curves.items()])
    if baseline is not None:
        fig.add_hline(y=baseline, line=dict(color="#555", dash="dot", width=1),
                      annotation_text=f"character frequencies alone: {baseline:.3f}",
                      annotation_position="top right")
    fig.update_layout(title="Validation loss while training (same data, seed and steps)",
                      xaxis_title="optimizer step", yaxis_title="validation loss (nats/char)",
                      margin=dict(l=10, r=10, t=80, b=10))
    return legend_on_top(fig)


def long_losses_figure(losses: Mapping[tuple[str, str], Sequence[float]],
                       labels: Mapping[tuple[str, str], str], n_ctx: int) -> go.Figure:
    """Loss at each position of long texts, one line per (kind, scheme); dotted lines mark
    the training context N and 2N.

    >>> fig = long_losses_figure({("rope", "whole"): [3.0, 2.0]}, {("rope", "whole"): "x"}, 1)
    >>> fig.data[0].name, len(fig.layout.shapes)
    ('x', 2)
    """
    fig = go.Figure()
    for (kind, scheme), y in losses.items():
        y = np.asarray(y, np.float64)
        fig.add_trace(go.Scatter(
            x=np.arange(len(y)), y=y, mode="lines", name=labels[kind, scheme],
            line=dict(color=KIND_COLOURS.get(kind), dash="solid" if scheme == "crop" or
                      kind == "rope" else "dot", width=2),
            hovertemplate=f"{labels[kind, scheme]}<br>position %{{x}}: %{{y:.3f}}<extra></extra>"))
    for x, text in ((n_ctx, "N"), (2 * n_ctx, "2N")):
        fig.add_vline(x=x - 0.5, line=dict(color="#555", dash="dash", width=1),
                      annotation_text=text, annotation_position="bottom right")
    fig.update_layout(title=f"Loss at each position of texts {len(y)} characters long "
                            f"(trained on N = {n_ctx})",
                      xaxis_title="position t (predicting character t + 1)",
                      yaxis_title="mean loss (nats/char)", margin=dict(l=10, r=10, t=110, b=10),
                      height=480)
    return legend_on_top(fig)


def kind_name(kind: str) -> str:
    """How the page names an encoding.

    >>> kind_name("rope"), kind_name("none")
    ('RoPE', 'none')
    """
    return {"rope": "RoPE"}.get(kind, kind)
