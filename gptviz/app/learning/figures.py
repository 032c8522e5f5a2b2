"""Learning figures: the window as chips, ∂L/∂z as bars, gradient norms per layer and
component, and the loss after one SGD step against η.

Pure builders: numbers in, HTML out. The charts are inline SVG (``svgplot``): the page's
default view loads no chart library.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from gptviz.app.shared.chips import CHIP_CSS, PALETTE, chip
from gptviz.app.shared.heatmaps import as_float32
from gptviz.app.speedups.svgplot import Series, SvgChart, bar_chart, line_chart

TARGET, OTHER, FADED = "#d62728", "#1f77b4", "#9aa3b2"
# The bar chart's order: outside the blocks first and last, a block's parts in forward order.
COMPONENTS = ("E", "P", "LN₁", "W_Q", "W_K", "W_V", "W_O", "LN₂", "W₁", "W₂", "biases",
              "LN_f", "W_U")
LAYER_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2",
                 "#17becf", "#bcbd22")  # a block each, while the blocks are at most this many
# More blocks than colours (GPT-2 small has 12, GPT-2 XL 48): the blocks go along the axis,
# each labelled, and the colours name the components of a block (at most 10 of them).
OUTSIDE = "#7f7f7f"
COMPONENT_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
                     "#e377c2", "#17becf", "#bcbd22", "#393b79")

WINDOW_CSS = """
<style>
.gv-chip.gv-target{outline:3px solid #d62728;outline-offset:-1px;font-weight:700}
.gv-chip.gv-later{opacity:.35}
.gv-window-key{font:12px 'Source Sans',ui-sans-serif,system-ui,sans-serif;
color:#4d5565;margin-top:4px}
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
                          target: int) -> SvgChart:
    """Bars of ∂L/∂z_i = P_i − [i = y] for the shown ids; the target's bar is P(y) − 1 < 0.

    >>> fig = logit_gradient_figure([1, 0], ["b", "a"], np.array([-0.9, 0.6]), 0)
    >>> fig.series[0].colours, fig.series[0].y
    (('#1f77b4', '#d62728'), (0.6000000238418579, -0.8999999761581421))
    """
    values = as_float32([grad[i] for i in ids])
    colours = tuple(TARGET if i == target else OTHER for i in ids)
    names = [f"{label} ({i})" + (" = y" if i == target else "") for i, label in zip(
        ids, labels, strict=True)]
    hover = tuple(f"{n}\n∂L/∂z = {float(v):.4f}" for n, v in zip(names, values, strict=True))
    bars = Series("∂L/∂z", "bar", tuple(names), tuple(float(v) for v in values),
                  colour=OTHER, colours=colours, hover=hover)
    return bar_chart(names, [bars], title="∂L/∂z = P − e_y: the most probable tokens and "
                     "the target y", y_title="∂L/∂zᵢ", zero_line=True, height=340,
                     legend=False)


def gradient_norms_figure(components: Sequence[str], layers: Sequence[int | None],
                          norms: np.ndarray) -> SvgChart:
    """‖∂L/∂θ‖ per component and block, on a log axis. Up to ``len(LAYER_COLOURS)`` blocks:
    the components along the axis, a colour per block. More blocks (GPT-2 small has 12):
    the blocks along the axis, each labelled "block k", a colour per component of a block
    (``blocks_by_component``), so that no two blocks ever share a colour.

    >>> fig = gradient_norms_figure(["E", "W_Q", "W_Q"], [None, 0, 1], np.array([1., .1, .2]))
    >>> [s.name for s in fig.series]
    ['outside the blocks', 'block 0', 'block 1']
    """
    blocks = sorted({ly for ly in layers if ly is not None})
    if len(blocks) > len(LAYER_COLOURS):
        return blocks_by_component(components, layers, norms)
    order = [c for c in COMPONENTS if c in components]
    order += [c for c in dict.fromkeys(components) if c not in order]
    series = []
    for layer in [None, *blocks]:
        rows = [k for k, ly in enumerate(layers) if ly == layer]
        rows.sort(key=lambda k: order.index(components[k]))
        name = "outside the blocks" if layer is None else f"block {layer}"
        colour = OUTSIDE if layer is None else LAYER_COLOURS[blocks.index(layer)]
        values = [float(v) for v in as_float32(norms[rows])]
        series.append(Series(name, "bar", tuple(components[k] for k in rows), tuple(values),
                             colour=colour, hover=tuple(
                                 f"{name}, {components[k]}\n‖g‖ = {v:.3g}"
                                 for k, v in zip(rows, values, strict=True))))
    return bar_chart(order, series, title="‖∂L/∂θ‖ per block and component",
                     y_title="gradient norm (log scale)", log_y=True, height=380)


def blocks_by_component(components: Sequence[str], layers: Sequence[int | None],
                        norms: np.ndarray) -> SvgChart:
    """The gradient norms of a deep model: the categories are the parts outside the blocks
    (E and P first, LN_f and W_U last, in grey) and the blocks, "block 0" … "block L−1";
    each component of a block (W_Q, W₁, …) is a series with its own colour, the same in
    every block.

    >>> fig = blocks_by_component(["E", "W_Q", "W_1", "W_Q", "W_1"], [None, 0, 0, 1, 1],
    ...                           np.array([1., .1, .2, .3, .4]))
    >>> [s.name for s in fig.series], fig.series[1].x
    (['outside the blocks', 'W_Q', 'W_1'], ('block 0', 'block 1'))
    """
    order = [c for c in COMPONENTS if c in components]
    order += [c for c in dict.fromkeys(components) if c not in order]
    outside = sorted((k for k, ly in enumerate(layers) if ly is None),
                     key=lambda k: order.index(components[k]))
    first = [components[k] for k in outside if order.index(components[k]) < order.index(
        "LN₁")] if "LN₁" in order else [components[k] for k in outside]
    last = [components[k] for k in outside if components[k] not in first]
    blocks = sorted({ly for ly in layers if ly is not None})
    inside = [c for c in order if any(components[k] == c and layers[k] is not None
                                      for k in range(len(components)))]
    if len(inside) > len(COMPONENT_COLOURS):
        raise ValueError(f"{len(inside)} components in a block; at most "
                         f"{len(COMPONENT_COLOURS)} have a colour of their own.")

    def bars(name: str, rows: list[int], xs: list[str], colour: str) -> Series:
        values = tuple(float(v) for v in as_float32(norms[rows]))
        return Series(name, "bar", tuple(xs), values, colour=colour, hover=tuple(
            f"{x}, {components[k]}\n‖g‖ = {v:.3g}" for k, x, v in zip(rows, xs, values,
                                                                     strict=True)))

    series = [bars("outside the blocks", outside, [components[k] for k in outside], OUTSIDE)]
    for colour, part in zip(COMPONENT_COLOURS, inside, strict=False):
        rows = sorted((k for k, c in enumerate(components)
                       if c == part and layers[k] is not None), key=lambda k: layers[k])
        series.append(bars(part, rows, [f"block {layers[k]}" for k in rows], colour))
    return bar_chart([*first, *(f"block {b}" for b in blocks), *last], series,
                     title="‖∂L/∂θ‖ per block (along the axis) and component (colour)",
                     y_title="gradient norm (log scale)", log_y=True, height=420)


def step_profile_figure(etas: Sequence[float], after: Sequence[float], rest: Sequence[float],
                        loss0: float, rest0: float, grad_sq: float, curvature: float,
                        chosen: float | None) -> SvgChart:
    """L(θ − η g) at position t and on the rest of the window, against η (log axis), with the
    first- and second-order predictions; ▲ marks a loss above the chart, × a NaN (overflow).

    >>> fig = step_profile_figure([1e-3, 1e12], [1.5, math.nan], [2.0, math.nan], 2.0, 2.0,
    ...                           400.0, 1e4, 1e-3)
    >>> [s.name for s in fig.series][:2]
    ['L at position t after the step', 'first order: L − η‖g‖²']
    """
    eta = np.asarray(etas, dtype=np.float64)
    after_a, rest_a = np.asarray(after, np.float64), np.asarray(rest, np.float64)
    top = 3.0 * max(loss0, rest0 if math.isfinite(rest0) else 0.0, 1.0)
    x = tuple(float(v) for v in eta)

    def ys(values: np.ndarray) -> tuple:
        return tuple(float(v) if math.isfinite(v) else None for v in values)

    def hover(what: str, values: np.ndarray) -> tuple[str, ...]:
        return tuple(f"{what}\nη = {e:.0e}: {v:.4g}" for e, v in zip(eta, values, strict=True))

    first = loss0 - eta * grad_sq
    second = first + 0.5 * eta**2 * curvature
    series = [
        Series("L at position t after the step", "line", x, ys(after_a), colour=TARGET,
               width=3, marker="circle", hover=hover("L at position t", after_a)),
        Series("first order: L − η‖g‖²", "line", x, ys(first), colour="#444", dash="dash",
               hover=hover("first order", first)),
        Series("second order: + ½η² gᵀHg", "line", x, ys(second), colour="#444", dash="dot",
               hover=hover("second order", second)),
        Series("mean L of the other positions", "line", x, ys(rest_a), colour=FADED,
               marker="circle", hover=hover("other positions", rest_a)),
    ]
    off = np.isfinite(after_a) & (after_a > top)
    if off.any():
        series.append(Series("above the chart", "markers", tuple(float(v) for v in eta[off]),
                             (0.97 * top,) * int(off.sum()), colour=TARGET,
                             marker="triangle-up", hover=tuple(
                                 f"η = {e:.0e}: L = {v:.3g}"
                                 for e, v in zip(eta[off], after_a[off], strict=True))))
    bad = ~np.isfinite(after_a)
    if bad.any():
        series.append(Series("NaN: the step overflowed", "markers",
                             tuple(float(v) for v in eta[bad]), (0.95 * top,) * int(bad.sum()),
                             colour="black", marker="x", hover=tuple(
                                 f"η = {e:.0e}: L is NaN" for e in eta[bad])))
    vlines = ((float(chosen), OTHER, f"η = {chosen:g}"),) if chosen else ()
    return line_chart(series, title="The loss after one step θ − η g, for every η of the slider",
                      x_title="learning rate η (log scale)", y_title="loss (nats)",
                      log_x=True, y_range=(0.0, top), vlines=vlines, height=420)
