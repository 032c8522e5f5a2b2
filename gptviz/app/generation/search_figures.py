"""The beams of a beam search as a tree: each node a beam after a step, joined to the beam it
extends, with its token, its log-probability and score (the tree of branches the reader
grows is ``branch_figure.py``).

Pure builder: plain lists in, plotly figure out. x is the step (0 = the prompt), y the
beam's rank.
"""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

from gptviz.app.generation.branch_figure import CURRENT as BEST
from gptviz.app.generation.branch_figure import KEPT, LABELS_UP_TO, PRUNED, edges_trace
from gptviz.app.shared import labels as lb
from gptviz.i18n import N_, _, number, pgettext


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
    groups: dict[str, list] = {N_("pruned"): [], N_("kept to the end"): [],
                               N_("the best text"): []}  # the legend's names, in English
    for t in range(n_steps):
        for b, parent in enumerate(parents[t]):
            a = (t, parent) if t else (0, 0)
            key = ("the best text" if (t + 1, b) in best else
                   "kept to the end" if (t + 1, b) in alive else "pruned")
            groups[key].append((a, (t + 1, b)))
    style = {"pruned": (PRUNED, 1.2), "kept to the end": (KEPT, 2.5),
             "the best text": (BEST, 4.0)}
    traces = [edges_trace(pairs, *style[name], _(name)) for name, pairs in groups.items()]
    xs = [0] + [t + 1 for t in range(n_steps) for _ in tokens[t]]
    ys = [0] + [b for t in range(n_steps) for b in range(len(tokens[t]))]
    nodes = [(t + 1, b) for t in range(n_steps) for b in range(len(tokens[t]))]
    text = [_("prompt")] + [tokens[t][b] for t, b in ((x - 1, y) for x, y in nodes)]
    node = _("step {t} · beam {b} · {token}<br>log P(token | its beam) = {lp}<br>score = {score}")
    hover = [_("the prompt: score 0")] + [node.format(
        t=t, b=b, token=tokens[t - 1][b], lp=number(logprobs[t - 1][b], 3),
        score=number(scores[t - 1][b], 3)) for t, b in nodes]
    color = [BEST] + [BEST if n in best else KEPT if n in alive else PRUNED for n in nodes]
    many = len(nodes) > LABELS_UP_TO * 2
    width = max((len(row) for row in tokens), default=1)
    segments = [pair for pairs in groups.values() for pair in pairs]
    shown = [(t, "top center") for t in text] if many else tree_label_places(
        list(zip(xs, ys, strict=True)), text, segments, n_steps, width)
    traces.append(go.Scatter(
        x=xs, y=ys, mode="markers" if many else "markers+text", text=[t for t, _ in shown],
        textposition=[p for _, p in shown], textfont=dict(family=lb.FONT, size=TREE_FONT),
        marker=dict(size=TREE_MARKER, color=color, line=dict(color="white", width=1)),
        hovertext=hover, hoverinfo="text", showlegend=False))
    fig = go.Figure(traces)
    fig.update_xaxes(title=pgettext("run step", "step"), dtick=1 if n_steps <= 30 else None,
                     zeroline=False, range=list(_tree_x_range(n_steps)))
    fig.update_yaxes(title=_("beam (0 = most probable)"), range=[width - 1 + ROW_PAD, -ROW_PAD],
                     autorange=False, dtick=1, zeroline=False)
    fig.update_layout(title=title, height=170 + ROW_PX * width,
                      margin=dict(l=10, r=10, t=60, b=40),
                      meta=lb.geometry(REF_WS[0], _plot_h(width), _tree_x_range(n_steps),
                                       [width - 1 + ROW_PAD, -ROW_PAD]),
                      legend=dict(orientation="h", y=1.02, x=1, xanchor="right",
                                  yanchor="bottom"))
    return fig


# Where the beam tree writes its tokens (the rule of every tree: ``shared.labels``). Each
# label goes to the first of PLACES whose box (px) meets no other label, no node and stays in
# the plot, preferring one that crosses no edge, in a plot area REF_WS[0] px wide and in one
# REF_WS[1] px wide (narrow: steep edges, columns close; wide: flat edges); a token with no
# such place whole is cut with "…" (never below MIN_CHARS), else left to the hover.
TREE_FONT, TREE_MARKER = 14, 9  # label font size (monospace), node diameter (px)
ROW_PX = 60  # px per beam rank
REF_WS = (600, 900)  # px: plot-area widths the labels are placed for (1400 px window: ~870)
ROW_PAD = 0.6  # rows of room above the first and below the last beam (labels there)
PLACES = ("top center", "bottom center", "top left", "bottom left", "top right",
          "bottom right")
crosses = lb.crosses


def _tree_x_range(n_steps: int) -> tuple[float, float]:
    return (-0.5, n_steps + 0.6)


def _plot_h(rows: int) -> float:
    """The plot area's height: the figure's, less its margins and the x axis."""
    return 170 + ROW_PX * rows - 60 - 40 - 45


def tree_scale(n_steps: int, rows: int, plot_w: float) -> tuple[float, float]:
    """px per step and per beam rank in the beam tree, in a plot area ``plot_w`` px wide."""
    lo, hi = _tree_x_range(n_steps)
    return plot_w / (hi - lo), _plot_h(rows) / (rows - 1 + 2 * ROW_PAD)


def tree_label_box(x: float, y: float, text: str, place: str) -> lb.Box:
    """(left, top, right, bottom) px of ``text`` at ``place`` around a node at px (x, y)."""
    return lb.box(text, x, y, TREE_FONT, place, TREE_MARKER / 2)


def _hits(scenes: list, i: int, text: str, place: str) -> tuple[int, int]:
    """What node ``i``'s label at ``place`` meets at the widths: labels placed before, nodes
    and the plot's edge (never allowed), and edges (avoided where possible)."""
    hard = edges = 0
    for px, segs, dots, placed, area in scenes:
        b = tree_label_box(*px[i], text, place)
        edges += sum(lb.crosses(b, p, q) for p, q in segs)
        hard += sum(lb.overlap(b, o, lb.GAP_PX) for o in placed)
        hard += sum(lb.overlap(b, o) for o in dots) + (not lb.inside(b, area))
    return hard, edges


def tree_label_places(nodes: Sequence[tuple[float, float]], texts: Sequence[str],
                      edges: Sequence[tuple[tuple[float, float], tuple[float, float]]],
                      n_steps: int, rows: int) -> list[tuple[str, str]]:
    """The text and ``textposition`` of each node's (step, rank) label, at both widths
    REF_WS clear of the labels placed before, of the nodes and inside the plot: the first
    of PLACES that crosses no edge either, the token cut shorter if it needs to (never below
    ``MIN_CHARS``); else the whole token where it crosses the fewest; ("", "top center")
    when it has no clear place at all.

    >>> tree_label_places([(0, 0), (1, 1)], ["p", "a long label"], [((0, 0), (1, 1))], 1, 2)
    [('p', 'top center'), ('a long label', 'bottom center')]
    """
    r = TREE_MARKER / 2
    scenes = []  # per width: node px, edge px, node boxes, placed labels, the plot area
    for plot_w in REF_WS:
        sx, sy = tree_scale(n_steps, rows, plot_w)
        px = [(x * sx, y * sy) for x, y in nodes]
        segs = [((a[0] * sx, a[1] * sy), (b[0] * sx, b[1] * sy)) for a, b in edges]
        lo, hi = _tree_x_range(n_steps)
        area = (lo * sx, -ROW_PAD * sy, hi * sx, (rows - 1 + ROW_PAD) * sy)
        scenes.append((px, segs, [(x - r, y - r, x + r, y + r) for x, y in px], [], area))
    out = []
    for i, text in enumerate(texts):
        versions = [text, *(t for t in lb.shorter(text, lb.text_px(text, TREE_FONT),
                                                  TREE_FONT) if t != text)]
        fallback, best = None, None
        for shown in versions:
            count = {place: _hits(scenes, i, shown, place) for place in PLACES}
            clear = [place for place in PLACES if count[place][0] == 0]
            if clear and fallback is None:
                fallback = (shown, min(clear, key=lambda place: count[place][1]))
            if clear and count[min(clear, key=lambda place: count[place][1])][1] == 0:
                best = (shown, min(clear, key=lambda place: count[place][1]))
                break
        best = best or fallback
        if best is None:
            out.append(("", "top center"))
            continue
        for px, _segs, _dots, placed, _area in scenes:
            placed.append(tree_label_box(*px[i], *best))
        out.append(best)
    return out
