"""Trees of texts: the branches the user grew (each edge with its probability) and the
beams of a beam search (each node with its cumulative log-probability).

Pure builders: plain lists in, plotly figure out. x is the step (0 = the prompt); a
tree's rows are its leaves (branches) or its beams' ranks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from gptviz.app.shared.heatmaps import boxes_overlap
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
    last = max(x for x, _ in xy.values())
    short = edge_label_px(last) < EDGE_LABEL_PX  # "29.3%" would run into its neighbours
    traces.append(go.Scatter(
        x=mid[:, 0], y=mid[:, 1] - 0.45, mode="text", hoverinfo="skip", showlegend=False,
        text=[edge_label(probs[p], short) for p in edges] if len(nodes) <= LABELS_UP_TO
        else None, textfont=dict(size=EDGE_FONT, color="#6b7280")))
    names = [fit_label("prompt" if not p else labels[p], xy[p][0], last) for p in nodes]
    hover = ["the prompt (step 0)" if not p else
             f"step {len(p)} · {labels[p]} · P = {percent(probs[p], 3)}" for p in nodes]
    traces.append(go.Scatter(
        x=[xy[p][0] for p in nodes], y=[xy[p][1] for p in nodes],
        mode="markers+text" if len(nodes) <= LABELS_UP_TO else "markers",
        text=names, textposition=["top center" if xy[p][0] % 2 == 0 else "bottom center"
                                  for p in nodes],
        textfont=dict(family="monospace", size=BRANCH_FONT),
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
                     range=[-1, last + 1], dtick=1 if last <= 30 else None)
    fig.update_yaxes(visible=False, range=[rows - 0.4, -0.8])  # room above row 0: P, token
    fig.update_layout(title=title, height=min(170 + 70 * rows, 780), clickmode="event+select",
                      dragmode="pan", margin=dict(l=10, r=10, t=50, b=70),
                      legend=dict(orientation="h", y=0, x=0, xanchor="left",
                                  yanchor="bottom", yref="container"))  # clear of the title
    return fig


# The branch tree writes each token above its node at even steps and below at odd ones, so
# that a label has two steps of room; one longer than that is cut with "…" (hover has it).
BRANCH_FONT = 12  # px, monospace
BRANCH_PLOT_PX = 760  # the plot area's width the labels are cut for (a 1280-px window)


EDGE_FONT = 12  # px, an edge's P
EDGE_LABEL_PX = 40  # "29.3%" at 12 px, and a gap


def edge_label_px(last: int) -> float:
    """The room (px) of one edge's label in a tree whose last step is ``last``."""
    return BRANCH_PLOT_PX / (last + 2)  # the x range runs from −1 to last + 1


def edge_label(p: float, short: bool) -> str:
    """An edge's P as ``percent`` writes it; ``short``, in its compact form (one digit
    fewer), for trees whose steps are too narrow for "29.3%".

    >>> edge_label(0.2931, False), edge_label(0.2931, True), edge_label(0.0002, True)
    ('29.3%', '29%', '0.02%')
    >>> edge_label(2.1e-5, False), edge_label(2.1e-5, True)
    ('2.1e-5', '2e-5')
    """
    return percent(p, 1 if short else 2)


def fit_label(text: str, x: int, last: int) -> str:
    """``text`` cut to the room of a label at step ``x`` of a tree whose last step is
    ``last``: two steps wide, at the tree's edges what is left inside the plot.

    >>> fit_label("prompt", 0, 3), fit_label("·manifold", 24, 24), fit_label("·is", 5, 24)
    ('prompt', '·mani…', '·is')
    """
    step_px = edge_label_px(last)
    room = min(2 * step_px, 2 * (x + 1) * step_px, 2 * (last + 1 - x) * step_px)
    chars = max(3, int(room / (0.62 * BRANCH_FONT)) - 1)
    return text if len(text) <= chars else text[:chars - 1] + "…"


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
    width = max((len(row) for row in tokens), default=1)
    segments = [pair for pairs in groups.values() for pair in pairs]
    places = ["top center"] * len(xs) if many else tree_label_places(
        list(zip(xs, ys, strict=True)), text, segments, n_steps, width)
    traces.append(go.Scatter(
        x=xs, y=ys, mode="markers" if many else "markers+text", text=text,
        textposition=places, textfont=dict(family="monospace", size=TREE_FONT),
        marker=dict(size=TREE_MARKER, color=color, line=dict(color="white", width=1)),
        hovertext=hover, hoverinfo="text", showlegend=False))
    fig = go.Figure(traces)
    fig.update_xaxes(title="step", dtick=1 if n_steps <= 30 else None, zeroline=False,
                     range=list(_tree_x_range(n_steps)))
    fig.update_yaxes(title="beam (0 = most probable)", range=[width - 1 + ROW_PAD, -ROW_PAD],
                     autorange=False, dtick=1, zeroline=False)
    fig.update_layout(title=title, height=170 + 55 * width, margin=dict(l=10, r=10, t=60, b=40),
                      legend=dict(orientation="h", y=1.02, x=1, xanchor="right",
                                  yanchor="bottom"))
    return fig


# Where the beam tree writes its tokens. Each label goes to the first of PLACES whose box
# (px) meets no edge, no other node and no label placed before, in a plot area REF_WS[0] px
# wide and in one REF_WS[1] px wide (narrow: steep edges, columns close; wide: flat edges).
TREE_FONT, TREE_MARKER = 11, 9  # label font size (monospace), node diameter (px)
CHAR_PX = 0.62 * TREE_FONT  # a monospace character's advance, rounded up
TEXT_PX, GAP_PX = 1.3 * TREE_FONT, 2  # a label's line height; its gap to the node
REF_WS = (600, 900)  # px: plot-area widths the labels are placed for (1400 px window: ~870)
ROW_PAD = 0.6  # rows of room above the first and below the last beam (labels there)
PLACES = ("top center", "bottom center", "top left", "bottom left", "top right",
          "bottom right")


def _tree_x_range(n_steps: int) -> tuple[float, float]:
    return (-0.5, n_steps + 0.6)


def tree_scale(n_steps: int, rows: int, plot_w: float) -> tuple[float, float]:
    """px per step and per beam rank in the beam tree: in a plot area ``plot_w`` px wide,
    and at most the figure's fixed height less its margins and the x axis."""
    lo, hi = _tree_x_range(n_steps)
    plot_h = 170 + 55 * rows - 60 - 40 - 45
    return plot_w / (hi - lo), plot_h / (rows - 1 + 2 * ROW_PAD)


def tree_label_box(x: float, y: float, text: str, place: str) -> tuple[float, float, float,
                                                                        float]:
    """(left, top, right, bottom) px of ``text`` at ``place`` around a node at px (x, y)."""
    w, r = CHAR_PX * len(text), TREE_MARKER / 2 + GAP_PX
    top = y - r - TEXT_PX if place.startswith("top") else y + r
    left = {"center": x - w / 2, "left": x - r - w, "right": x + r}[place.split()[1]]
    if not place.endswith("center"):  # beside and above / below: plotly lifts it less
        top = y - TEXT_PX - GAP_PX if place.startswith("top") else y + GAP_PX
    return (left, top, left + w, top + TEXT_PX)


def crosses(box: Sequence[float], p: Sequence[float], q: Sequence[float]) -> bool:
    """Whether segment p → q (px) passes through the box (left, top, right, bottom)."""
    t0, t1 = 0.0, 1.0
    d = (q[0] - p[0], q[1] - p[1])
    for k, (lo, hi) in enumerate(((box[0], box[2]), (box[1], box[3]))):
        if d[k] == 0:
            if not lo < p[k] < hi:
                return False
            continue
        a, b = (lo - p[k]) / d[k], (hi - p[k]) / d[k]
        t0, t1 = max(t0, min(a, b)), min(t1, max(a, b))
    return t0 < t1


def _hits(scenes: list, i: int, text: str, place: str) -> int:
    """How many edges, nodes and placed labels node ``i``'s label at ``place`` meets, plus
    one per plot area it leaves."""
    n = 0
    for px, segs, dots, placed, area in scenes:
        box = tree_label_box(*px[i], text, place)
        n += sum(crosses(box, p, q) for p, q in segs)
        n += sum(boxes_overlap(box, o) for o in dots + placed)
        n += not (area[0] <= box[0] and area[1] <= box[1] and box[2] <= area[2]
                  and box[3] <= area[3])  # out of the plot: clipped
    return n


def tree_label_places(nodes: Sequence[tuple[float, float]], texts: Sequence[str],
                      edges: Sequence[tuple[tuple[float, float], tuple[float, float]]],
                      n_steps: int, rows: int) -> list[str]:
    """A ``textposition`` for each node (step, rank) of the beam tree: the first of PLACES
    clear of every edge, every other node and the labels placed before it and inside the
    plot, at both widths REF_WS; when none is, the one that meets fewest.

    >>> tree_label_places([(0, 0), (1, 1)], ["p", "a long label"], [((0, 0), (1, 1))], 1, 2)
    ['top center', 'bottom center']
    """
    r = TREE_MARKER / 2
    scenes = []  # per width: node px, edge px, node boxes
    for plot_w in REF_WS:
        sx, sy = tree_scale(n_steps, rows, plot_w)
        px = [(x * sx, y * sy) for x, y in nodes]
        segs = [((a[0] * sx, a[1] * sy), (b[0] * sx, b[1] * sy)) for a, b in edges]
        lo, hi = _tree_x_range(n_steps)
        area = (lo * sx, -ROW_PAD * sy, hi * sx, (rows - 1 + ROW_PAD) * sy)
        scenes.append((px, segs, [(x - r, y - r, x + r, y + r) for x, y in px], [], area))
    out = []
    for i, text in enumerate(texts):
        count = {place: _hits(scenes, i, text, place) for place in PLACES}
        best = min(PLACES, key=lambda place: (count[place] > 0, count[place]))
        for px, _, _, placed, _ in scenes:
            placed.append(tree_label_box(*px[i], text, best))
        out.append(best)
    return out
