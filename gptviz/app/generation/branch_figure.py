"""The tree of branches the reader grew on the Generation page: a node per token (the root is
the prompt), an edge per step labelled with P(token | the text before it), the current text
in orange.

Its labels follow the rule of every tree and chain figure (``shared.labels``): laid out in
the px of the narrowest plot area it is drawn in (a 1280-px window), each token above or
below its node and each probability above or below its edge's middle, the first place
clear of the labels placed before and of the nodes; a token too long for its room is cut
with "…", and a label with no clear place is left to the hover. Pure builder.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import plotly.graph_objects as go

from gptviz.app.shared import labels as lb
from gptviz.app.shared.tex import percent
from gptviz.i18n import _

CURRENT, KEPT, PRUNED = "#f58518", "#4c78a8", "#c7c7c7"
LABELS_UP_TO = 90  # nodes drawn with their labels (more: on hover only)
TOKEN_FONT, EDGE_FONT = 15, 14  # px, monospace: read at a 1280-px window
PLOT_PX = 760  # the plot area's width the labels are laid out for (a 1280-px window)
ROW_PX = 96  # px a row of branches gets, the tree's height allowing
MAX_PLOT_PX = 780  # the plot area's height at most (a tall tree's rows get less)
PAD = 0.6  # rows of room above the first row and below the last (labels there)
MARGIN = dict(l=10, r=10, t=50, b=70)

Path = tuple[int, ...]


def edges_trace(pairs, color: str, width: float, name: str) -> go.Scatter:
    """Line segments (a None between two) as one trace."""
    xs, ys = [], []
    for (x0, y0), (x1, y1) in pairs:
        xs += [x0, x1, None]
        ys += [y0, y1, None]
    return go.Scatter(x=xs, y=ys, mode="lines", line=dict(color=color, width=width),
                      hoverinfo="skip", name=name)


def edge_label(p: float) -> str:
    """An edge's P in ``percent``'s compact form, so that a small one still says how small
    (the hover has three digits).

    >>> edge_label(0.2931), edge_label(0.004), edge_label(2.1e-5), edge_label(1.0)
    ('29%', '0.4%', '2e-5', '100%')
    """
    return percent(p, 1)


def plot_height(rows: int) -> float:
    """The plot area's height (px) for a tree of ``rows`` rows."""
    return min(ROW_PX * (rows - 1 + 2 * PAD), MAX_PLOT_PX)


def _candidates(text: str, x: float, y: float, room: float, size: float, clear: float,
                above_first: bool, whole: bool = False) -> list[lb.Candidate]:
    """``text`` (then shorter, unless ``whole``) centred above and below the point at px
    (x, y), clear of a marker reaching ``clear`` px from it."""
    out = []
    h = lb.LINE_EM * size
    versions = lb.shorter(text, room, size)
    if whole:  # all of it or nothing
        versions = versions[:1] if versions[:1] == [text] else []
    for shown in versions:
        w = lb.text_px(shown, size)
        ys = [y - clear - lb.GAP_PX - h / 2, y + clear + lb.GAP_PX + h / 2]
        for yc in ys if above_first else ys[::-1]:
            out.append(lb.Candidate(shown, (x - w / 2, yc - h / 2, x + w / 2, yc + h / 2),
                                    (x, yc)))
    return out


def tree_labels(xy: Mapping[Path, tuple[int, int]], names: Mapping[Path, str],
                probs: Mapping[Path, float], current: Path
                ) -> tuple[list[tuple[Path, lb.Candidate]], list[tuple[Path, lb.Candidate]]]:
    """The token labels and the edge labels that have a clear place, each with its node,
    in px of a ``PLOT_PX``-wide plot area.

    >>> xy = {(): (0, 0), (4,): (1, 0), (5,): (1, 1)}
    >>> toks, edges = tree_labels(xy, {(4,): "a", (5,): "b"}, {(4,): .6, (5,): .3}, (4,))
    >>> [c.text for _, c in toks], [c.text for _, c in edges]
    (['prompt', 'a', 'b'], ['60%', '30%'])
    """
    last = max(x for x, _ in xy.values())
    rows = max(y for _, y in xy.values()) + 1
    sx, sy = PLOT_PX / (last + 2), plot_height(rows) / (rows - 1 + 2 * PAD)

    def px(p: Path) -> tuple[float, float]:
        return (xy[p][0] + 1) * sx, (xy[p][1] + PAD) * sy

    on_path = {current[:k] for k in range(len(current) + 1)}
    radius = {p: (7.5 if p == current else 5.0) for p in xy}
    nodes = sorted(xy, key=lambda p: (p not in on_path, len(p)))  # the text first
    tokens = [_candidates(_("prompt") if not p else names[p], *px(p), 2 * sx - lb.GAP_PX,
                          TOKEN_FONT, radius[p], xy[p][0] % 2 == 0) for p in nodes]
    edges = []
    for p in (p for p in nodes if p):
        (x0, y0), (x1, y1) = px(p[:-1]), px(p)
        edges.append(_candidates(edge_label(probs[p]), (x0 + x1) / 2, (y0 + y1) / 2,
                                 sx - lb.GAP_PX, EDGE_FONT, 0, True, whole=True))
    marks = [(x - radius[p], y - radius[p], x + radius[p], y + radius[p])
             for p in xy for x, y in [px(p)]]
    segments = [(px(p[:-1]), px(p)) for p in xy if p]
    area = (0.0, 0.0, PLOT_PX, plot_height(rows))
    chosen = lb.place([*tokens, *edges], area, marks, segments)
    edge_nodes = [p for p in nodes if p]
    return ([(p, c) for p, c in zip(nodes, chosen[:len(nodes)], strict=True) if c],
            [(p, c) for p, c in zip(edge_nodes, chosen[len(nodes):], strict=True) if c])


def branch_tree(xy: Mapping[Path, tuple[int, int]], labels: Mapping[Path, str],
                probs: Mapping[Path, float], current: Path, keys: Mapping[Path, str],
                title: str = "") -> go.Figure:
    """The tree; ``xy`` is ``tree.layout``, ``keys`` names each node for a click (the last
    trace's customdata).

    >>> xy = {(): (0, 0), (4,): (1, 0), (5,): (1, 1)}
    >>> fig = branch_tree(xy, {(4,): "a", (5,): "b"}, {(4,): .6, (5,): .3}, (5,),
    ...                   {(): "", (4,): "4", (5,): "5"})
    >>> fig.data[-1].customdata[:, 0].tolist(), sorted(fig.data[2].text)
    (['', '4', '5'], ['30%', '60%'])
    """
    on_path = {current[:k] for k in range(len(current) + 1)}
    nodes = list(xy)
    kept = [(xy[p[:-1]], xy[p]) for p in nodes if p and p not in on_path]
    path = [(xy[p[:-1]], xy[p]) for p in nodes if p and p in on_path]
    last = max(x for x, _ in xy.values())
    rows = max((y for _, y in xy.values()), default=0) + 1
    sx, sy = PLOT_PX / (last + 2), plot_height(rows) / (rows - 1 + 2 * PAD)
    tokens, edges = tree_labels(xy, labels, probs, current) if len(
        nodes) <= LABELS_UP_TO else ([], [])
    traces = [edges_trace(kept, PRUNED, 1.5, _("other branches")),
              edges_trace(path, CURRENT, 3.5, _("the current text"))]
    for name, placed, size, color in ((_("P of each edge"), edges, EDGE_FONT, "#6b7280"),
                                      (_("tokens"), tokens, TOKEN_FONT, "#1d2129")):
        traces.append(go.Scatter(
            x=[c.at[0] / sx - 1 for _, c in placed], y=[c.at[1] / sy - PAD for _, c in placed],
            text=[c.text for _, c in placed], mode="text", textposition="middle center",
            textfont=dict(family=lb.FONT, size=size, color=color), hoverinfo="skip",
            showlegend=False, name=name))
    node = _("step {i} · {token} · P = {p}")
    hover = [_("the prompt (step 0)") if not p else
             node.format(i=len(p), token=labels[p], p=percent(probs[p], 3)) for p in nodes]
    traces.append(go.Scatter(
        x=[xy[p][0] for p in nodes], y=[xy[p][1] for p in nodes], mode="markers",
        marker=dict(size=[15 if p == current else 10 for p in nodes],
                    color=[CURRENT if p in on_path else KEPT for p in nodes],
                    line=dict(color="white", width=1)),
        customdata=np.array([[keys[p], h] for p, h in zip(nodes, hover, strict=True)],
                            dtype=object).reshape(-1, 2),
        hovertemplate="%{customdata[1]}<extra>" + _("click: make this the text") + "</extra>",
        unselected=dict(marker=dict(opacity=1)), showlegend=False))
    y_range = [rows - 1 + PAD, -PAD]
    fig = go.Figure(traces)
    fig.update_xaxes(title=_("step (tokens after the prompt)"), zeroline=False,
                     range=[-1, last + 1], dtick=1 if last <= 30 else None)
    fig.update_yaxes(visible=False, range=y_range)
    fig.update_layout(title=title, height=plot_height(rows) + MARGIN["t"] + MARGIN["b"],
                      clickmode="event+select", dragmode="pan", margin=MARGIN,
                      meta=lb.geometry(PLOT_PX, plot_height(rows), [-1, last + 1], y_range),
                      legend=dict(orientation="h", y=0, x=0, xanchor="left",
                                  yanchor="bottom", yref="container"))  # clear of the title
    return fig
