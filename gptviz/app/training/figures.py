"""Training figures: loss and perplexity curves, sliding windows, the loss formulas.

Pure builders: numbers in, a plotly figure, HTML, a table or LaTeX out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from gptviz.app.shared.chips import CHIP_CSS, PALETTE, chip, visible
from gptviz.app.shared.heatmaps import as_float32
from gptviz.i18n import N_, _, number, pgettext

TRAIN, SMOOTH, VAL, GUESS = "#9ecae9", "#1f77b4", "#f58518", "#7f7f7f"
LOG_TICKS = [m * 10 ** e for e in range(7) for m in (1, 2, 5)]  # 1, 2, 5, 10, … 5M


def smooth(values: Sequence[float], alpha: float = 0.1) -> np.ndarray:
    """Exponential moving average, started at the first value.

    >>> smooth([4.0, 2.0, 2.0], alpha=0.5).tolist()
    [4.0, 3.0, 2.5]
    """
    v = as_float32(values)
    out = np.empty_like(v)
    acc = float(v[0]) if v.size else 0.0
    for i, x in enumerate(v):
        acc = alpha * float(x) + (1 - alpha) * acc
        out[i] = acc if i else x
    return out


def thin(n: int, max_points: int) -> np.ndarray:
    """At most ``max_points`` evenly spread indices of 0..n-1, the last one included.

    >>> thin(10, 4).tolist()
    [0, 3, 6, 9]
    """
    return np.unique(np.linspace(0, n - 1, min(n, max_points)).round().astype(np.int64))


def loss_figure(losses: Sequence[tuple[int, float]], evals: Sequence[tuple[int, float, float]],
                vocab_size: int, total_steps: int, max_points: int = 400) -> go.Figure:
    """Cross-entropy (left) and perplexity e^L (right, log scale) against the step.

    ``losses`` holds (step, batch loss); ``evals`` holds (step, mean train loss,
    validation loss). Dashed lines mark the untrained model's ln|V| and |V|. The two
    panels are laid out by hand (no ``make_subplots``): the page redraws this figure
    twice a second beside a training thread, so building it must be cheap (~5 ms).

    >>> loss_figure([(1, 4.6), (2, 4.1)], [(0, float("nan"), 4.7)], 100, 10).data[0].name
    'training loss (each step)'
    """
    steps = np.array([s for s, _ in losses], dtype=np.int32)
    train = as_float32([v for _, v in losses])
    smoothed = smooth(train)
    keep = thin(steps.size, max_points)  # a light chart even after thousands of steps
    steps, train, smoothed = steps[keep], train[keep], smoothed[keep]
    ev_steps = np.array([e[0] for e in evals], dtype=np.int32)
    val = as_float32([e[2] for e in evals])
    ln_v, end = math.log(vocab_size), max(1, total_steps)
    data = []
    for axis, f in (("", lambda a: a), ("2", lambda a: np.exp(np.minimum(a, 80.0)))):
        first, on = axis == "", dict(xaxis="x" + axis, yaxis="y" + axis)
        data += [
            dict(type="scatter", x=steps, y=f(train), mode="lines", showlegend=first,
                 name=_("training loss (each step)"), line=dict(color=TRAIN, width=1),
                 legendgroup="train", **on),
            dict(type="scatter", x=steps, y=f(smoothed), mode="lines", showlegend=first,
                 name=_("training loss (smoothed)"), line=dict(color=SMOOTH, width=2),
                 legendgroup="smooth", **on),
            dict(type="scatter", x=ev_steps, y=f(val), mode="lines+markers", showlegend=first,
                 name=_("validation loss"), line=dict(color=VAL, width=2), legendgroup="val",
                 **on),
            # a trace, not add_hline: an annotation on a log axis would read 107 as 10^107
            dict(type="scatter", x=[0, end], y=[ln_v, ln_v] if first else [vocab_size] * 2,
                 mode="lines+text", showlegend=False, hoverinfo="skip",
                 text=["", (_("ln|V| = {x} (uniform guess)").format(x=number(ln_v, 2)) if first
                            else _("|V| = {x} (uniform guess)").format(
                                x=number(vocab_size, 0, grouping=True)))],
                 textposition="bottom left",  # under its
                 # line: the line runs along the chart's top, where a label above it was cut
                 textfont=dict(color=GUESS), line=dict(color=GUESS, dash="dash", width=1), **on),
        ]
    titles = [dict(text=t, x=x, y=1.0, xref="paper", yref="paper", xanchor="center",
                   yanchor="bottom", showarrow=False, font=dict(size=14))
              for t, x in ((_("Cross-entropy L (nats per token)"), 0.225),
                           (_("Perplexity e<sup>L</sup> (log scale)"), 0.775))]
    step_axis = dict(title=dict(text=pgettext("run step", "step")), range=[0, end])
    layout = dict(
        xaxis=dict(domain=[0, 0.45], anchor="y", **step_axis),
        xaxis2=dict(domain=[0.55, 1], anchor="y2", **step_axis),
        yaxis=dict(anchor="x", rangemode="tozero"),
        # 1, 2, 5 in every decade, written in full: plotly's default labels every digit
        # ("100 9 8 7 …" at this height), and its dtick="D2" writes 20 and 50 as "2" and "5"
        yaxis2=dict(anchor="x2", type="log", tickmode="array", tickvals=LOG_TICKS,
                    ticktext=[number(v, 0, grouping=True) for v in LOG_TICKS]),
        annotations=titles, height=360, margin=dict(l=10, r=10, t=40, b=10),
        hovermode="x unified", legend=dict(orientation="h", y=-0.22))
    return go.Figure(dict(data=data, layout=layout))


def windows_html(labels: Sequence[str], context_length: int, stride: int, n_windows: int = 3,
                 max_shown: int = 16) -> str:
    """The first windows x⁽k⁾ = t[ks : ks+N] over their targets y⁽k⁾ = t[ks+1 : ks+N+1].

    ``labels`` are the token strings of the start of the corpus. Each chip shows
    the token and its index i of t_i, and keeps the colour of that position, so
    the shift by one between x and y is visible.
    """
    rows = [CHIP_CSS, '<div style="display:grid;grid-template-columns:auto 1fr;gap:4px 10px;'
            'align-items:center;font-size:14px">']
    for k in range(n_windows):
        start = k * stride
        if start + context_length >= len(labels):
            break
        for name, offset in (("x", 0), ("y", 1)):
            chips = []
            for j in range(min(context_length, max_shown)):
                i = start + offset + j  # numbered like the formula's t_1, t_2, …
                chips.append(chip(visible(labels[i]) or "∅", i + 1, PALETTE[i % len(PALETTE)],
                                  f"{name}^({k})_{j + 1} = t_{i + 1}"))
            more = context_length - max_shown
            if more > 0:
                chips.append('<span style="color:#6b7280">' + escape(_("… {n} more").format(
                    n=more)) + "</span>")
            rows.append(f"<div><b>{name}</b><sup>({k})</sup></div>"
                        f'<div class="gv-chips">{"".join(chips)}</div>')
    rows.append("</div>")
    return "".join(rows)


def prediction_pairs(labels: Sequence[str], context_length: int, max_rows: int = 8
                     ) -> pd.DataFrame:
    """The N predictions one window trains at once: context t_1..t_i → target t_{i+1}.

    >>> prediction_pairs(["a", "b", "c"], 2)["target"].tolist()
    ['b', 'c']
    """
    n = min(context_length, len(labels) - 1, max_rows)
    return pd.DataFrame({  # English headers: a page shows them translated
        "i": range(1, n + 1),
        N_("the model sees x_1 … x_i"): ["".join(visible(t) for t in labels[:i])
                                         for i in range(1, n + 1)],
        N_("target"): [visible(labels[i]) for i in range(1, n + 1)],
    })



