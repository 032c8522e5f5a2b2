"""Transformer-block figures: LayerNorm's row statistics, GELU vs ReLU, residual norms,
the logit lens and parameter counts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from gptviz.analysis.stages import Stage
from gptviz.app.shared import labels as lb
from gptviz.app.shared.heatmaps import as_float32, axis_labels
from gptviz.app.shared.ticks import thin_ticks

STAGE_COLOURS = {"before": "#9aa3b5", "standardised": "#4c78a8", "after": "#f58518"}
ROW_LABELS = 12  # token labels under each LayerNorm panel at most: ~20 px each in the lesson


def layernorm_rows(stats: Mapping[str, np.ndarray], tokens: Sequence[str]) -> go.Figure:
    """Per-token mean (left) and variance (right) before LayerNorm, standardised and after.

    ``stats`` is ``analysis.layernorm_stats`` output ("mean before", "var before", ...).

    Each panel is half the width, the lesson's a quarter of a projector's: its token labels
    stand upright, every k-th of them (``ROW_LABELS`` at most), and hover names every bar.

    >>> s = {"mean before": np.ones(2), "var before": np.ones(2)}
    >>> [t.name for t in layernorm_rows(s, ["a", "b"]).data]
    ['before', 'before']
    >>> s = {"mean before": np.ones(23), "var before": np.ones(23)}
    >>> fig = layernorm_rows(s, [f"t{i}" for i in range(23)])
    >>> len(fig.layout.xaxis2.tickvals), fig.layout.xaxis2.tickangle
    (12, -90)
    """
    names = axis_labels(tokens, len(next(iter(stats.values()))))
    pos = np.arange(len(names))
    fig = make_subplots(rows=1, cols=2, subplot_titles=["row mean", "row variance"])
    for col, stat in enumerate(("mean", "var"), start=1):
        for stage, colour in STAGE_COLOURS.items():
            key = f"{stat} {stage}"
            if key in stats:
                fig.add_trace(go.Bar(
                    x=pos, y=as_float32(stats[key]), name=stage, marker_color=colour,
                    legendgroup=stage, showlegend=col == 1, customdata=names,
                    hovertemplate=f"%{{customdata}}: {stat} {stage} = %{{y:.4f}}<extra></extra>"),
                    row=1, col=col)
    fig.update_xaxes(tickmode="array", tickvals=pos, ticktext=names,
                     tickangle=-90 if len(names) > ROW_LABELS // 2 else 0)
    thin_ticks(fig, ROW_LABELS)
    fig.add_hline(y=1.0, line_dash="dot", line_color="#666", row=1, col=2)
    fig.update_layout(barmode="group", title="LayerNorm on the real rows: mean → 0, variance → 1",
                      margin=dict(l=10, r=10, t=60, b=10))
    return fig


def activation_curves_figure(curves: Mapping[str, np.ndarray]) -> go.Figure:
    """GELU vs ReLU (``analysis.activation_curves`` output: "x" plus one array per curve).

    >>> [t.name for t in activation_curves_figure({"x": np.zeros(2), "ReLU": np.zeros(2)}).data]
    ['ReLU']
    """
    x = as_float32(curves["x"])  # (n,)
    fig = go.Figure([go.Scatter(x=x, y=as_float32(y), mode="lines", name=name,
                                line=dict(dash="dot") if "tanh" in name else None)
                     for name, y in curves.items() if name != "x"])
    fig.update_layout(title="GELU(x) = x Φ(x) vs ReLU(x) = max(x, 0)", xaxis_title="x",
                      yaxis_title="f(x)", margin=dict(l=10, r=10, t=40, b=10))
    return fig


def residual_norms_figure(norms, stages: Sequence[str], tokens: Sequence[str]) -> go.Figure:
    """‖x_t‖ at every stage of the residual stream (S, T): one thin line per token, and the mean.

    >>> fig = residual_norms_figure(np.ones((3, 2)), ["embed", "0.mid", "0.post"], ["a", "b"])
    >>> [t.name for t in fig.data]
    ['0: a', '1: b', 'mean']
    """
    n = as_float32(norms)  # (S, T)
    names = axis_labels(tokens, n.shape[1])
    traces = [go.Scatter(x=list(stages), y=n[:, t], mode="lines+markers", name=f"{t}: {name}",
                         line=dict(width=1), marker=dict(size=4), opacity=0.6)
              for t, name in enumerate(names)]
    traces.append(go.Scatter(x=list(stages), y=n.mean(axis=1), mode="lines+markers",
                             name="mean", line=dict(width=4, color="black")))
    fig = go.Figure(traces)
    fig.update_layout(title="residual-stream norm ‖x<sub>t</sub>‖₂ by layer", xaxis_title="stage",
                      yaxis_title="‖x<sub>t</sub>‖₂", margin=dict(l=10, r=10, t=40, b=10))
    return fig


def logit_lens_figure(row_labels: Sequence[str], guesses: Sequence[Sequence[str]], probs
                      ) -> go.Figure:
    """Layers down, rank across: each cell is a guessed token, coloured by its probability.

    >>> fig = logit_lens_figure(["after block 0"], [["a", "b"]], [[0.6, 0.3]])
    >>> fig.data[0].text.tolist()
    [['a', 'b']]
    """
    p = as_float32(probs)  # (rows, k)
    text = np.array([axis_labels(list(row), p.shape[1]) for row in guesses], dtype=object)
    fig = go.Figure(go.Heatmap(
        z=p, text=text, texttemplate="%{text}", colorscale="Blues", zmin=0.0, zmax=1.0,
        customdata=np.broadcast_to(np.array(row_labels, dtype=object)[:, None], p.shape),
        hovertemplate="%{customdata}, rank %{x}: %{text} (p = %{z:.3f})<extra></extra>"))
    fig.update_xaxes(tickmode="array", tickvals=list(range(p.shape[1])),
                     ticktext=[f"#{r + 1}" for r in range(p.shape[1])], side="top")
    fig.update_yaxes(tickmode="array", tickvals=list(range(p.shape[0])),
                     ticktext=list(row_labels), autorange="reversed")
    fig.update_layout(title="logit lens: softmax(LN<sub>final</sub>(x) W<sub>U</sub>) after every "
                            "block",
                      margin=dict(l=10, r=10, t=60, b=10), height=120 + 40 * p.shape[0])
    return fig


def parameter_bars(counts: Mapping[str, int], title: str = "parameters per component"
                   ) -> go.Figure:
    """Horizontal bars of ``analysis.parameter_table`` (the "total" row is left out).

    >>> parameter_bars({"E": 10, "total": 10}).data[0].y
    ('E',)
    """
    items = [(k, v) for k, v in counts.items() if k != "total"]
    fig = go.Figure(go.Bar(x=np.array([v for _, v in items], dtype=np.int64),
                           y=[k for k, _ in items], orientation="h", marker_color="#4c78a8",
                           hovertemplate="%{y}: %{x:,.0f}<extra></extra>"))
    total = counts.get("total", sum(v for _, v in items))
    fig.update_yaxes(autorange="reversed")
    fig.update_layout(title=f"{title} (total {total:,})", xaxis_title="parameters",
                      margin=dict(l=10, r=10, t=40, b=10), height=80 + 26 * len(items))
    return fig


COLS = 6  # stages per half
FLOW_PX = 860  # the Block page's plot area at a 1280-px window: the titles are fitted to it
NARROW_PX = 100  # a column narrower than this gives a stage's name three lines, not two


def title_lines(col_px: float) -> int:
    """Lines of a panel's title: the stage's name on two (three in a narrow column), then
    its shape."""
    return 3 if col_px >= NARROW_PX else 4


def flow_titles(stages: Sequence[Stage], col_px: float) -> list[str]:
    """Each panel's title in lines that fit its column (``shared.labels``): the stage's name,
    then the numbers of its shape ("23×128" of "N×d = 23×128").

    >>> flow_titles([Stage("attention out Z W_O + b_O", "N×d = 23×128", np.eye(2))], 110)
    ['<b>attention<br>out Z W_O +…</b><br>23×128']
    """
    out = []
    for stage in stages:
        name = "<br>".join(lb.wrap(stage.name, col_px, lb.MIN_FONT, title_lines(col_px) - 1))
        shape = lb.fit(stage.shape.split(" = ")[-1], col_px, lb.MIN_FONT) or ""
        out.append(f"<b>{name}</b><br>{shape}")
    return out


def block_flow(stages: Sequence[Stage], tokens: Sequence[str], height: int = 560,
               plot_px: float = FLOW_PX) -> go.Figure:
    """Two rows of thumbnails (attention half, FFN half), arrows between them, ⊕ at the sums;
    each title fitted to its column in a plot area ``plot_px`` wide (the narrowest it is
    drawn in), so no two meet.

    Each panel has its own colour range, centred on 0 (W_attn: 0..1); hover gives
    token, column and value.

    >>> s = [Stage(f"s{i}", "2×2", np.eye(2, dtype=np.float32)) for i in range(12)]
    >>> len(block_flow(s, ["a", "b"]).data)
    12
    """
    rows = (len(stages) + COLS - 1) // COLS
    spacing = 0.035
    col_px = plot_px * (1 - spacing * (COLS - 1)) / COLS
    title_px = title_lines(col_px) * lb.LINE_EM * lb.MIN_FONT  # above each panel
    plot_h = height - 20 - (title_px + 10)
    fig = make_subplots(rows=rows, cols=COLS, subplot_titles=flow_titles(stages, col_px),
                        horizontal_spacing=spacing,
                        vertical_spacing=min(0.5, (title_px + 24) / plot_h) if rows > 1 else 0)
    for k, stage in enumerate(stages):
        r, c = divmod(k, COLS)
        m = as_float32(stage.values)  # (T, cols)
        names = axis_labels(tokens, m.shape[0])
        prob = stage.columns == "key"
        bound = float(np.abs(m).max()) or 1.0
        fig.add_trace(go.Heatmap(
            z=m, colorscale="Blues" if prob else "RdBu_r", showscale=False,
            zmin=0.0 if prob else -bound, zmax=1.0 if prob else bound,
            customdata=np.broadcast_to(np.array(names, dtype=object)[:, None], m.shape),
            hovertemplate=(f"{stage.name}<br>%{{customdata}} (%{{y}}), {stage.columns} "
                           "%{x}: %{z:.3f}<extra></extra>")), row=r + 1, col=c + 1)
    fig.update_xaxes(showticklabels=False, showgrid=False, zeroline=False)
    fig.update_yaxes(showticklabels=False, showgrid=False, zeroline=False, autorange="reversed")
    fig.update_annotations(font=dict(family=lb.FONT, size=lb.MIN_FONT))
    _arrows(fig, len(stages))
    fig.update_layout(height=height, margin=dict(l=10, r=10, t=round(title_px + 10), b=20),
                      meta=lb.geometry(plot_px, plot_h, [0, 1], [0, 1]))
    return fig


def _arrows(fig: go.Figure, n: int) -> None:
    """An arrow between neighbours in a row; ⊕ before the residual sums (panels 6 and 12)."""
    for k in range(n - 1):
        if (k + 1) % COLS == 0:
            continue
        left, right = _domain(fig, k), _domain(fig, k + 1)
        x = (left["x"][1] + right["x"][0]) / 2
        y = sum(left["y"]) / 2
        text = "⊕" if (k + 2) % COLS == 0 else "→"
        fig.add_annotation(x=x, y=y, xref="paper", yref="paper", text=text, showarrow=False,
                           font=dict(size=18, color="#b42318" if text == "⊕" else "#444"))


def _domain(fig: go.Figure, k: int) -> dict[str, tuple[float, float]]:
    suffix = "" if k == 0 else str(k + 1)
    return {"x": fig.layout[f"xaxis{suffix}"].domain, "y": fig.layout[f"yaxis{suffix}"].domain}


def stage_table(stages: Sequence[Stage]) -> list[dict[str, object]]:
    """Rows for a table of the stages: name, shape, mean, std, min, max.

    >>> stage_table([Stage("X", "1×2", np.array([[1.0, 3.0]], np.float32))])[0]["mean"]
    2.0
    """
    return [{"stage": s.name, "shape": s.shape, "mean": float(s.values.mean()),
             "std": float(s.values.std()), "min": float(s.values.min()),
             "max": float(s.values.max())} for s in stages]
