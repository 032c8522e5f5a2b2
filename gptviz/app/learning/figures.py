"""Learning figures: the window as chips, ∂L/∂z as bars, gradient norms per layer and
component, and the loss after one SGD step against η.

Pure builders: numbers in, a plotly figure or HTML out.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from gptviz.app.shared.chips import CHIP_CSS, PALETTE, chip
from gptviz.app.shared.heatmaps import as_float32

TARGET, OTHER, FADED = "#d62728", "#1f77b4", "#9aa3b2"
# The bar chart's order: outside the blocks first and last, a block's parts in forward order.
COMPONENTS = ("E", "P", "LN₁", "W_Q", "W_K", "W_V", "W_O", "LN₂", "W₁", "W₂", "biases",
              "LN_f", "W_U")
# Margins (px) that already hold each chart's tick labels, axis titles and legend. Streamlit's
# theme turns plotly's automargin on: a margin short of them is widened once the chart is
# drawn, and the chart drawn a second time.
LOGIT_MARGIN = dict(l=72, r=0, t=50, b=40)
NORMS_MARGIN = dict(l=72, r=0, t=50, b=80)
STEP_MARGIN = dict(l=72, r=0, t=50, b=112)
LAYER_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2",
                 "#17becf", "#bcbd22")

WINDOW_CSS = """
<style>
.gv-chip.gv-target{outline:3px solid #d62728;outline-offset:-1px;font-weight:700}
.gv-chip.gv-later{opacity:.35}
.gv-window-key{font:12px ui-sans-serif,system-ui,sans-serif;color:#4d5565;margin-top:4px}
</style>
"""


def window_chips_html(labels: Sequence[str], position: int) -> str:
    """The N + 1 tokens of a window: x_0 … x_t read by the prediction, the target y = x_{t+1}
    outlined, later tokens faded (the causal mask hides them from this prediction).

    >>> html = window_chips_html(["a", "b", "c", "d"], 1)
    >>> html.count("gv-target"), html.count("gv-later")
    (2, 2)
    """
    parts = [CHIP_CSS, WINDOW_CSS, '<div class="gv-chips">']
    for i, label in enumerate(labels):
        if i <= position:
            classes, under, tip = "", i, f"x_{i}: read by the prediction"
        elif i == position + 1:
            classes, under, tip = "gv-target", "y", f"y = x_{i}: the token to predict"
        else:
            classes, under, tip = "gv-later", i, "after the target: not seen by this prediction"
        parts.append(chip(label, under, PALETTE[i % len(PALETTE)], tip, classes))
    parts.append("</div>")
    parts.append(f'<div class="gv-window-key">The model reads positions 0 to {position} '
                 f"and is scored on the outlined token y; the faded tokens come later.</div>")
    return "".join(parts)


def shown_ids(probs: np.ndarray, target: int, k: int = 10) -> list[int]:
    """The ``k`` most probable ids, then the target when it is not among them.

    >>> shown_ids(np.array([0.1, 0.6, 0.3]), target=0, k=2)
    [1, 2, 0]
    """
    top = [int(i) for i in np.argsort(-probs, kind="stable")[:k]]
    return top if target in top else [*top, int(target)]


def logit_gradient_figure(ids: Sequence[int], labels: Sequence[str], grad: np.ndarray,
                          target: int) -> go.Figure:
    """Bars of ∂L/∂z_i = P_i − [i = y] for the shown ids; the target's bar is P(y) − 1 < 0.

    >>> fig = logit_gradient_figure([1, 0], ["b", "a"], np.array([-0.9, 0.6]), 0)
    >>> fig.data[0].marker.color
    ('#1f77b4', '#d62728')
    """
    values = as_float32([grad[i] for i in ids])
    colours = tuple(TARGET if i == target else OTHER for i in ids)
    names = [f"{label} ({i})" + (" = y" if i == target else "") for i, label in zip(
        ids, labels, strict=True)]
    fig = go.Figure(go.Bar(x=names, y=values, marker_color=colours,
                           hovertemplate="%{x}<br>∂L/∂z = %{y:.4f}<extra></extra>"))
    fig.update_layout(title="∂L/∂z = P − e_y: the most probable tokens and the target y",
                      yaxis_title="∂L/∂z_i", height=340, margin=LOGIT_MARGIN,
                      xaxis_type="category")
    fig.add_hline(y=0, line_color="#555", line_width=1)
    return fig


def gradient_norms_figure(components: Sequence[str], layers: Sequence[int | None],
                          norms: np.ndarray) -> go.Figure:
    """‖∂L/∂θ‖ per component (x) and block (one colour each), on a log axis.

    >>> fig = gradient_norms_figure(["E", "W_Q", "W_Q"], [None, 0, 1], np.array([1., .1, .2]))
    >>> [t.name for t in fig.data]
    ['outside the blocks', 'block 0', 'block 1']
    """
    order = [c for c in COMPONENTS if c in components]
    fig = go.Figure()
    series = [None, *sorted({ly for ly in layers if ly is not None})]
    for layer in series:
        rows = [k for k, ly in enumerate(layers) if ly == layer]
        rows.sort(key=lambda k: order.index(components[k]))
        name = "outside the blocks" if layer is None else f"block {layer}"
        colour = "#7f7f7f" if layer is None else LAYER_COLOURS[layer % len(LAYER_COLOURS)]
        fig.add_bar(x=[components[k] for k in rows], y=as_float32(norms[rows]), name=name,
                    marker_color=colour,
                    hovertemplate=f"{name}, %{{x}}<br>‖g‖ = %{{y:.3g}}<extra></extra>")
    fig.update_layout(title="‖∂L/∂θ‖ per block and component", barmode="group", height=380,
                      yaxis=dict(type="log", title="gradient norm (log scale)"),
                      xaxis=dict(type="category", categoryorder="array", categoryarray=order),
                      legend=dict(orientation="h", y=-0.15), margin=NORMS_MARGIN)
    return fig


def step_profile_figure(etas: Sequence[float], after: Sequence[float], rest: Sequence[float],
                        loss0: float, rest0: float, grad_sq: float, curvature: float,
                        chosen: float | None) -> go.Figure:
    """L(θ − η g) at position t and on the rest of the window, against η (log axis), with the
    first- and second-order predictions; ▲ marks a loss above the chart, × a NaN (overflow).

    >>> fig = step_profile_figure([1e-3, 1e12], [1.5, math.nan], [2.0, math.nan], 2.0, 2.0,
    ...                           400.0, 1e4, 1e-3)
    >>> [t.name for t in fig.data][:2]
    ['L at position t after the step', 'first order: L − η‖g‖²']
    """
    eta = np.asarray(etas, dtype=np.float64)
    after_a, rest_a = np.asarray(after, np.float64), np.asarray(rest, np.float64)
    top = 3.0 * max(loss0, rest0 if math.isfinite(rest0) else 0.0, 1.0)
    fig = go.Figure()
    fig.add_scatter(x=eta, y=np.where(np.isfinite(after_a), after_a, None),
                    name="L at position t after the step", mode="lines+markers",
                    line=dict(color=TARGET, width=3))
    fig.add_scatter(x=eta, y=loss0 - eta * grad_sq, name="first order: L − η‖g‖²",
                    mode="lines", line=dict(color="#444", dash="dash"))
    fig.add_scatter(x=eta, y=loss0 - eta * grad_sq + 0.5 * eta**2 * curvature,
                    name="second order: + ½η² gᵀHg", mode="lines",
                    line=dict(color="#444", dash="dot"))
    fig.add_scatter(x=eta, y=np.where(np.isfinite(rest_a), rest_a, None),
                    name="mean L of the other positions", mode="lines+markers",
                    line=dict(color=FADED, width=2))
    off = np.isfinite(after_a) & (after_a > top)
    if off.any():
        fig.add_scatter(x=eta[off], y=np.full(int(off.sum()), 0.97 * top), mode="markers",
                        name="above the chart", customdata=after_a[off],
                        marker=dict(symbol="triangle-up", size=11, color=TARGET),
                        hovertemplate="η = %{x:.0e}: L = %{customdata:.3g}<extra></extra>")
    bad = ~np.isfinite(after_a)
    if bad.any():
        fig.add_scatter(x=eta[bad], y=np.full(int(bad.sum()), 0.95 * top), mode="markers",
                        name="NaN: the step overflowed", marker=dict(symbol="x", size=11,
                                                                     color="black"))
    if chosen:
        fig.add_vline(x=chosen, line_color=OTHER, line_width=2,
                      annotation_text=html.escape(f"η = {chosen:g}"),
                      annotation_position="top left")
    fig.update_layout(title="The loss after one step θ − η g, for every η of the slider",
                      xaxis=dict(type="log", title="learning rate η (log scale)",
                                 exponentformat="power",
                                 tickvals=[10.0**k for k in (-6, -4, -2, 0, 2, 4, 8, 12, 16, 20)]),
                      yaxis=dict(range=[0, top], title="loss (nats)"), height=420,
                      legend=dict(orientation="h", y=-0.2), margin=STEP_MARGIN)
    return fig
