"""Trees of texts: the branches the user grew (each edge with its probability) and the
beams of a beam search (each node with its cumulative log-probability).

Pure builders: plain lists in, plotly figure out. x is the step (0 = the prompt); a
tree's rows are its leaves (branches) or its beams' ranks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from gptviz.app.shared.tex import percent

CURRENT, BEST, KEPT, PRUNED = "#f58518", "#f58518", "#4c78a8", "#c7c7c7"
LABELS_UP_TO = 90  # nodes drawn with their token written beside them (more: on hover only)

Path = tuple[int, ...]


def _edges(pairs: Sequence[tuple[tuple[float, float], tuple[float, float]]], color: str,
           width: float, name: str) -> go.Scatter:
    """Line segments (a None between two) as one trace."""
    xs, ys = [], []
    for (x0, y0), (x1, y1) in pairs:
        xs += [x0, x1, None]
        ys += [y0, y1, None]
    return go.Scatter(x=xs, y=ys, mode="lines", line=dict(color=color, width=width),
                      hoverinfo="skip", name=name)


def branch_tree(xy: Mapping[Path, tuple[int, int]], labels: Mapping[Path, str],
                probs: Mapping[Path, float], current: Path, keys: Mapping[Path, str],
                title: str = "") -> go.Figure:
    """The tree of branches: a node per token (the root is the prompt), an edge per step
    labelled with P(token | the text before it); the current text in orange.

    ``xy`` is ``tree.layout``; ``keys`` names each node for a click (customdata).

    >>> xy = {(): (0, 0), (4,): (1, 0), (5,): (1, 1)}
    >>> fig = branch_tree(xy, {(4,): "a", (5,): "b"}, {(4,): .6, (5,): .3}, (5,),
    ...                   {(): "", (4,): "4", (5,): "5"})
    >>> fig.data[-1].customdata[:, 0].tolist(), list(fig.data[2].text)
    (['', '4', '5'], ['60.0%', '30.0%'])
    """
    on_path = {current[:k] for k in range(len(current) + 1)}
    nodes = list(xy)
    kept = [(xy[p[:-1]], xy[p]) for p in nodes if p and p not in on_path]
    path = [(xy[p[:-1]], xy[p]) for p in nodes if p and p in on_path]
    traces = [_edges(kept, PRUNED, 1.5, "other branches"), _edges(path, CURRENT, 3.5,
                                                                  "the current text")]
    edges = [p for p in nodes if p]
    mid = np.array([[(xy[p[:-1]][0] + xy[p][0]) / 2, (xy[p[:-1]][1] + xy[p][1]) / 2]
                    for p in edges]).reshape(-1, 2)
    traces.append(go.Scatter(
        x=mid[:, 0], y=mid[:, 1] - 0.18, mode="text", hoverinfo="skip", showlegend=False,
        text=[percent(probs[p]) for p in edges] if len(nodes) <= LABELS_UP_TO else None,
        textfont=dict(size=10, color="#6b7280")))
    names = ["prompt" if not p else labels[p] for p in nodes]
    hover = ["the prompt (step 0)" if not p else
             f"step {len(p)} · {labels[p]} · P = {probs[p]:.4f}" for p in nodes]
    traces.append(go.Scatter(
        x=[xy[p][0] for p in nodes], y=[xy[p][1] for p in nodes],
        mode="markers+text" if len(nodes) <= LABELS_UP_TO else "markers",
        text=names, textposition="top center", textfont=dict(family="monospace", size=12),
        marker=dict(size=[15 if p == current else 10 for p in nodes],
                    color=[CURRENT if p in on_path else KEPT for p in nodes],
                    line=dict(color="white", width=1)),
        customdata=np.array([[keys[p], h] for p, h in zip(nodes, hover, strict=True)],
                            dtype=object).reshape(-1, 2),
        hovertemplate="%{customdata[1]}<extra>click: make this the text</extra>",
        unselected=dict(marker=dict(opacity=1)), showlegend=False))
    rows = max((y for _, y in xy.values()), default=0) + 1
    fig = go.Figure(traces)
    fig.update_xaxes(title="step (tokens after the prompt)", zeroline=False,
                     range=[-0.5, max(x for x, _ in xy.values()) + 0.7], dtick=1 if
                     max(x for x, _ in xy.values()) <= 30 else None)
    fig.update_yaxes(visible=False, autorange="reversed", range=None)
    fig.update_layout(title=title, height=min(150 + 70 * rows, 760), clickmode="event+select",
                      dragmode="pan", margin=dict(l=10, r=10, t=50, b=40),
                      legend=dict(orientation="h", y=1.02, x=1, xanchor="right",
                                  yanchor="bottom"))
    return fig


def beam_tree(tokens: Sequence[Sequence[str]], parents: Sequence[Sequence[int]],
              logprobs: Sequence[Sequence[float]], scores: Sequence[Sequence[float]],
              lineage: Sequence[Sequence[int]], title: str = "") -> go.Figure:
    """The beams at every step: node (t, b) is beam b (rank b, 0 = best) after step t, joined
    to the beam it extends. ``lineage[j]`` lists the ranks (step by step) of final beam j's
    ancestors: the best's in orange, the other survivors' in blue, pruned beams in grey.

    >>> fig = beam_tree([["a", "b"], ["c", "d"]], [[0, 0], [1, 0]], [[-.1, -.2], [-.3, -.4]],
    ...                 [[-.1, -.2], [-.5, -.5]], [[1, 0], [0, 1]])
    >>> [t.name for t in fig.data][:3], fig.data[-1].marker.color[:2]
    (['pruned', 'kept to the end', 'the best text'], ('#f58518', '#4c78a8'))
    """
    n_steps = len(tokens)
    best = {(t + 1, b) for t, b in enumerate(lineage[0])} if lineage else set()
    alive = {(t + 1, b) for ranks in lineage for t, b in enumerate(ranks)}
    groups: dict[str, list] = {"pruned": [], "kept to the end": [], "the best text": []}
    for t in range(n_steps):
        for b, parent in enumerate(parents[t]):
            a = (t, parent) if t else (0, 0)
            key = ("the best text" if (t + 1, b) in best else
                   "kept to the end" if (t + 1, b) in alive else "pruned")
            groups[key].append((a, (t + 1, b)))
    style = {"pruned": (PRUNED, 1.2), "kept to the end": (KEPT, 2.5),
             "the best text": (BEST, 4.0)}
    traces = [_edges(pairs, *style[name], name) for name, pairs in groups.items()]
    xs = [0] + [t + 1 for t in range(n_steps) for _ in tokens[t]]
    ys = [0] + [b for t in range(n_steps) for b in range(len(tokens[t]))]
    nodes = [(t + 1, b) for t in range(n_steps) for b in range(len(tokens[t]))]
    text = ["prompt"] + [tokens[t][b] for t, b in ((x - 1, y) for x, y in nodes)]
    hover = ["the prompt: score 0"] + [
        f"step {t} · beam {b} · {tokens[t - 1][b]}<br>log P(token | its beam) = "
        f"{logprobs[t - 1][b]:.3f}<br>score = {scores[t - 1][b]:.3f}" for t, b in nodes]
    color = [BEST] + [BEST if n in best else KEPT if n in alive else PRUNED for n in nodes]
    many = len(nodes) > LABELS_UP_TO * 2
    traces.append(go.Scatter(
        x=xs, y=ys, mode="markers" if many else "markers+text", text=text,
        textposition="top center", textfont=dict(family="monospace", size=11),
        marker=dict(size=9, color=color, line=dict(color="white", width=1)),
        hovertext=hover, hoverinfo="text", showlegend=False))
    width = max((len(row) for row in tokens), default=1)
    fig = go.Figure(traces)
    fig.update_xaxes(title="step", dtick=1 if n_steps <= 30 else None, zeroline=False,
                     range=[-0.5, n_steps + 0.6])
    fig.update_yaxes(title="beam (0 = most probable)", autorange="reversed", dtick=1,
                     zeroline=False)
    fig.update_layout(title=title, height=170 + 55 * width, margin=dict(l=10, r=10, t=60, b=40),
                      legend=dict(orientation="h", y=1.02, x=1, xanchor="right",
                                  yanchor="bottom"))
    return fig
