"""Attention figures: one head large, every head as thumbnails, each step of a head,
the seeds' masking variants side by side, and head ablation's effect."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from gptviz.app.shared.heatmaps import (
    COLORBAR,
    COLORBAR_PX,
    as_float32,
    axis_labels,
    heatmap,
    matrix_panels,
)

TITLE_PX, GAP_PX = 18, 6  # the grid: room for a thumbnail's title above it, gap between heads
GRID_FONT_PX = 12  # a thumbnail's title, and the overview's layer and head numbers
GRID_WIDTH_PX = 900  # the width the grid is laid out for (the page column)
# How many heads one grid shows at a readable size: up to ONE_GRID_HEADS heads of at most
# ONE_GRID_ACROSS a layer (thumbnails of 900 / 8 ≥ 110 px). A larger model (GPT-2 small:
# 12 × 12) gets one layer's heads large (``layer_strip``, STRIP_ACROSS to a row) and every
# head as an overview labelled by its axes (``attention_grid(..., axis_names=True)``).
ONE_GRID_HEADS, ONE_GRID_ACROSS, STRIP_ACROSS = 48, 8, 6
# Which colour scale each step of a head gets, and its caption (the formula it shows).
HEAD_STEPS = {
    "Q": ("signed", "Q = LN₁(X) W_Q"), "K": ("signed", "K = LN₁(X) W_K"),
    "V": ("signed", "V = LN₁(X) W_V"), "scores": ("signed", "scores = Q Kᵀ / √d_k"),
    "M": ("signed", "mask M (−∞ above the diagonal)"),
    "masked scores": ("signed", "Q Kᵀ / √d_k + M"),
    "pattern": ("prob", "W_attn = softmax(Q Kᵀ / √d_k + M)"), "Z": ("signed", "Z = W_attn V"),
}


def attention_pattern(pattern, tokens: Sequence[str], title: str = "attention pattern",
                      height: int | None = 520) -> go.Figure:
    """One head's pattern (T, T) large: rows are queries, columns the keys they read.

    >>> attention_pattern(np.eye(2), ["a", "b"]).data[0].z.shape
    (2, 2)
    """
    return heatmap(pattern, tokens, tokens, kind="prob", title=title, x_title="key",
                   y_title="query", height=height)


def head_step_figures(steps: Mapping[str, np.ndarray], tokens: Sequence[str],
                      bias: bool = True, rope: bool = False) -> dict[str, go.Figure]:
    """One heatmap per step of a head (``attention_math.head_tensors`` output).

    (T, T) steps get tokens on both axes; Q, K, V and Z get tokens by dimension. With
    ``bias`` (the model's), the titles of Q, K and V add their bias: ``Q = LN₁(X) W_Q + b_Q``;
    with ``rope``, Q's and K's say that row i is turned by R_i (what the scores are made of).

    >>> figs = head_step_figures({"pattern": np.eye(2)}, ["a", "b"]); list(figs)
    ['pattern']
    >>> mask = np.triu(np.full((2, 2), -np.inf), 1)
    >>> head_step_figures({"M": mask}, ["a", "b"])["M"].data[0].showscale
    False
    """
    figs = {}
    for name, values in steps.items():
        kind, caption = HEAD_STEPS.get(name, ("signed", name))
        if bias and name in ("Q", "K", "V"):
            caption += f" + b_{name}"
        if rope and name in ("Q", "K"):
            caption = f"{name}ᵢ = Rᵢ({caption.split(' = ', 1)[1]})ᵢ"
        m = as_float32(values)  # (T, T) or (T, d_k)
        square = name in ("scores", "M", "masked scores", "pattern")
        figs[name] = heatmap(m, tokens if square else None, tokens, kind=kind, title=caption,
                             x_title="key" if square else "", y_title="token")
        if name == "M":  # two values, 0 and −∞ (the gaps, written in): a colour bar would
            figs[name].update_traces(showscale=False)  # show a range M does not have
        # (Q, K, V, Z: no x title, it would run into theirs; the caption says "dimensions")
    return figs


def one_grid(n_layer: int, n_head: int) -> bool:
    """Whether every head fits in one grid at a readable size (see ONE_GRID_HEADS).

    >>> one_grid(4, 4), one_grid(12, 12), one_grid(2, 12)
    (True, False, False)
    """
    return n_layer * n_head <= ONE_GRID_HEADS and n_head <= ONE_GRID_ACROSS


def attention_grid(patterns, tokens: Sequence[str] | None = None,
                   selected: tuple[int, int] | None = None, cell_px: int = 110,
                   titles: Sequence[str | None] | None = None, axis_names: bool = False,
                   hover: tuple[Callable[[int, int], str], Callable[[int, int], str]]
                   | None = None) -> go.Figure:
    """All patterns (n_layer, n_head, T, T) as small multiples: layers down, heads across.

    One heatmap trace holds every head, tiled with blank gaps between them (one trace and
    one pair of axes draw far faster than a subplot per head). Hover gives layer, head,
    query → key from the axes' labels; thumbnails show no ticks. The ``selected``
    (layer, head) gets a red frame. ``titles`` (one per head, layer by layer) replace the
    "L0 H0" ones; a None leaves its tile out (no title, no edge: a blank place). With
    ``axis_names`` the tiles have no titles: the heads are numbered once along the top and
    the layers down the left (an overview of many heads, each number at GRID_FONT_PX).
    ``hover`` = (row label, column label), each a function of (tile, position), replaces
    "L0, query …" and "H0, key …". ``layout.meta["grid"]`` records the tiling
    (``grid_tile`` reads it back). Its margins already hold the titles and the colour bar
    and its axes have no automargin, so plotly in Streamlit's theme draws it once, not twice.

    >>> fig = attention_grid(np.ones((2, 3, 4, 4)) / 4)
    >>> fig.layout.annotations[0].text, grid_tile(fig.data[0].z, fig.layout.meta, 1, 2).shape
    ('L0 H0', (4, 4))
    >>> list(attention_grid(np.ones((2, 3, 4, 4)) / 4, axis_names=True).layout.xaxis.ticktext)
    ['H0', 'H1', 'H2']
    """
    p = as_float32(patterns)  # (L, H, T, T)
    n_layer, n_head, t = p.shape[0], p.shape[1], p.shape[-1]
    labels = axis_labels(tokens, t)
    above = GAP_PX if axis_names else TITLE_PX  # px above a tile: its title, or a gap
    row_gap = max(1, math.ceil(t * above / cell_px))  # rows of blank above a tile
    col_gap = max(1, math.ceil(t * GAP_PX * n_head / GRID_WIDTH_PX))
    z = np.full((n_layer * (t + row_gap) - row_gap, n_head * (t + col_gap) - col_gap),
                np.nan, dtype=np.float32)  # (rows, cols): tiles and NaN gaps
    for ly in range(n_layer):
        for h in range(n_head):
            r, c = ly * (t + row_gap), h * (t + col_gap)
            z[r:r + t, c:c + t] = p[ly, h]
    row_label, col_label = hover or (lambda ly, i: f"L{ly}, query {labels[i]} ({i})",
                                     lambda h, j: f"H{h}, key {labels[j]} ({j})")
    x = _tile_labels(n_head, t, col_gap, col_label)
    y = _tile_labels(n_layer, t, row_gap, row_label)
    names = list(titles) if titles is not None else [
        f"L{ly} H{h}" for ly in range(n_layer) for h in range(n_head)]
    captions, edges = [], []  # a title above each tile and its edge, as plain layout dicts
    for n, name in enumerate(names):
        if name is None:
            continue
        ly, h = divmod(n, n_head)
        r, c = ly * (t + row_gap), h * (t + col_gap)
        if not axis_names:
            captions.append(dict(font=dict(size=GRID_FONT_PX), showarrow=False, text=name,
                                 x=c + (t - 1) / 2, y=r - 0.5, yanchor="bottom"))
        edges.append(dict(line=dict(color="#c8c8c8", width=1), type="rect", x0=c - 0.5,
                          x1=c + t - 0.5, y0=r - 0.5, y1=r + t - 0.5))
    if selected is not None:  # on the tile's own edge: a margin in cells was as wide as
        ly, h = selected  # a whole tile of one token, and lopsided where cells are not square
        r, c = ly * (t + row_gap), h * (t + col_gap)
        edges.append(dict(line=dict(color="#d62728", width=3), type="rect", x0=c - 0.5,
                          x1=c + t - 0.5, y0=r - 0.5, y1=r + t - 0.5))
    bare = dict(showticklabels=False, ticks="", showgrid=False, zeroline=False,
                automargin=False)  # no labels, no tick marks: nothing to make room for
    xaxis, yaxis, top, left = bare, bare | dict(autorange="reversed"), 10 + TITLE_PX, 5
    if axis_names:  # the numbers at the tiles' middles, once per axis
        mid = (t - 1) // 2
        xaxis = bare | dict(showticklabels=True, side="top", tickmode="array",
                            tickvals=[x[h * (t + col_gap) + mid] for h in range(n_head)],
                            ticktext=[f"H{h}" for h in range(n_head)],
                            tickfont=dict(size=GRID_FONT_PX))
        yaxis = yaxis | dict(showticklabels=True, tickmode="array",
                             tickvals=[y[ly * (t + row_gap) + mid] for ly in range(n_layer)],
                             ticktext=[f"L{ly}" for ly in range(n_layer)],
                             tickfont=dict(size=GRID_FONT_PX))
        top, left = 10 + 2 * GRID_FONT_PX, 10 + 3 * GRID_FONT_PX  # "H11" above, "L47" left
    # One layout, validated once: add_annotation and add_shape per head took ~90 ms of a
    # 2 x 4 grid's build, and grow with the square of the heads (4 s for 12 x 12).
    return go.Figure(go.Heatmap(
        z=z, x=x, y=y, coloraxis="coloraxis", name="every head", hoverongaps=False,
        hovertemplate="%{y}<br>%{x}<br>%{z:.3f}<extra></extra>"), layout=dict(
        annotations=captions, shapes=edges, xaxis=xaxis, yaxis=yaxis,
        coloraxis=dict(colorscale="Blues", cmin=0.0, cmax=1.0, colorbar=COLORBAR),
        plot_bgcolor="rgba(0,0,0,0)",
        meta={"grid": {"layers": n_layer, "heads": n_head, "tokens": t, "row_gap": row_gap,
                       "col_gap": col_gap}},
        height=max(160, (cell_px + above) * n_layer + top - TITLE_PX + 5),
        margin=dict(l=left, r=COLORBAR_PX["coloraxis"], t=top, b=5)))


def layer_strip(patterns, tokens: Sequence[str] | None, layer: int, head: int | None = None,
                across: int = STRIP_ACROSS, cell_px: int = 130) -> go.Figure:
    """One layer's heads (n_head, T, T) as thumbnails ``across`` to a row, each titled
    "L3 H7" (GPT-2 small: two rows of six), ``head`` framed in red: the larger view of a
    model whose heads are too many for one grid. Each row is an ``attention_grid`` of its
    own on its own pair of axes (``x2``/``y2`` for the second…), so that hover names the
    head, the query and the key; ``strip_tile`` reads a head back.

    >>> fig = layer_strip(np.ones((8, 3, 3)) / 3, None, 2, head=7, across=6)
    >>> [a.text for a in fig.layout.annotations][-2:], len(fig.data), fig.data[1].xaxis
    (['L2 H6', 'L2 H7'], 2, 'x2')
    >>> strip_tile(fig, 7).shape
    (3, 3)
    """
    p = as_float32(patterns)  # (H, T, T)
    n_head, t = p.shape[0], p.shape[-1]
    across = max(1, min(across, n_head))
    rows = -(-n_head // across)
    labels = axis_labels(tokens, t)
    plot_h = rows * cell_px + (rows - 1) * TITLE_PX  # the rows and the titles between them
    traces, captions, edges, axes = [], [], [], {}
    for r in range(rows):
        heads = list(range(r * across, min(n_head, (r + 1) * across)))
        tiles = np.full((1, across, t, t), np.nan, dtype=np.float32)
        tiles[0, :len(heads)] = p[heads]
        part = attention_grid(
            tiles, tokens, cell_px=cell_px,
            selected=(0, head - heads[0]) if head in heads else None,
            titles=[f"L{layer} H{h}" for h in heads] + [None] * (across - len(heads)),
            hover=(lambda _, i: f"query {labels[i]} ({i})",
                   lambda c, j, first=heads[0]: f"H{first + c}, key {labels[j]} ({j})"))
        k = "" if r == 0 else str(r + 1)  # plotly's axis names: x, x2, x3…
        top = r * (cell_px + TITLE_PX)
        domain = [1 - (top + cell_px) / plot_h, 1 - top / plot_h]
        traces.append(part.data[0].update(xaxis=f"x{k}", yaxis=f"y{k}"))
        captions += [a.update(xref=f"x{k}", yref=f"y{k}") for a in part.layout.annotations]
        edges += [e.update(xref=f"x{k}", yref=f"y{k}") for e in part.layout.shapes]
        axes[f"xaxis{k}"] = part.layout.xaxis.update(anchor=f"y{k}")
        axes[f"yaxis{k}"] = part.layout.yaxis.update(anchor=f"x{k}", domain=domain)
        grid = part.layout.meta["grid"]
    return go.Figure(traces, layout=dict(
        annotations=captions, shapes=edges, **axes,
        coloraxis=dict(colorscale="Blues", cmin=0.0, cmax=1.0, colorbar=COLORBAR),
        plot_bgcolor="rgba(0,0,0,0)",
        meta={"strip": {"layer": layer, "heads": n_head, "across": across, "tokens": t,
                        "col_gap": grid["col_gap"]}},
        height=plot_h + TITLE_PX + 15,
        margin=dict(l=5, r=COLORBAR_PX["coloraxis"], t=10 + TITLE_PX, b=5)))


def strip_tile(fig: go.Figure, head: int) -> np.ndarray:
    """The (T, T) pattern of ``head`` in a ``layer_strip`` figure."""
    g = fig.layout.meta["strip"]
    r, c = divmod(head, g["across"])
    t = g["tokens"]
    z = np.asarray(fig.data[r].z, dtype=np.float32)
    return z[:, c * (t + g["col_gap"]):c * (t + g["col_gap"]) + t]


def _tile_labels(n: int, t: int, gap: int, label) -> list[str]:
    """Category labels along one axis of the grid: ``label(tile, position)`` for the cells,
    "gap k" between tiles (every label distinct, so that plotly keeps each column)."""
    out: list[str] = []
    for k in range(n):
        if k:
            out += [f"gap {k}.{g}" for g in range(gap)]
        out += [label(k, i) for i in range(t)]
    return out


def grid_tile(z, meta: Mapping, layer: int, head: int) -> np.ndarray:
    """The (T, T) pattern of (``layer``, ``head``) in the tiled ``z`` of an
    ``attention_grid`` figure whose ``layout.meta`` is ``meta``."""
    g = meta["grid"]
    t = g["tokens"]
    r, c = layer * (t + g["row_gap"]), head * (t + g["col_gap"])
    return np.asarray(z, dtype=np.float32)[r:r + t, c:c + t]


def masking_comparison(simplified, renormalised, neg_inf, tokens: Sequence[str],
                       max_delta: float | None = None) -> go.Figure:
    """The seeds' weight-free pattern, then causal by renormalising and by −∞ masking.

    >>> fig = masking_comparison(np.eye(2), np.eye(2), np.eye(2), ["a", "b"], 0.0)
    >>> len(fig.data)
    3
    """
    title = "softmax(X Xᵀ) and its two causal forms"
    if max_delta is not None:
        title += f" — max |renormalised − (−∞)| = {max_delta:.1e}"
    return matrix_panels({"softmax(X Xᵀ)": simplified,
                          "softmax, zero the future, renormalise": renormalised,
                          "softmax(X Xᵀ + M)": neg_inf},
                         tokens, tokens, kind="prob", title=title)


def ablation_bars(labels: Sequence[str], before, after,
                  title: str = "next-token probability") -> go.Figure:
    """Grouped bars: P(token) with every head, and with the chosen heads switched off.

    >>> fig = ablation_bars(["a", "b"], [0.7, 0.3], [0.4, 0.6]); [t.name for t in fig.data]
    ['all heads', 'heads ablated']
    """
    x = axis_labels(labels, len(labels))
    pos = np.arange(len(x))  # numeric x: two tokens that look alike keep their own bars
    before, after = as_float32(before), as_float32(after)  # (k,), (k,)
    fig = go.Figure([
        go.Bar(x=pos, y=y, name=name, marker_color=colour, customdata=x,
               hovertemplate=f"%{{customdata}}: %{{y:.4f}}<extra>{name}</extra>")
        for name, y, colour in [("all heads", before, "#4c78a8"),
                                ("heads ablated", after, "#f58518")]
    ])
    fig.update_layout(barmode="group", title=title, yaxis=dict(title="P(next token)",
                      rangemode="tozero"), xaxis=dict(tickmode="array", tickvals=pos, ticktext=x),
                      margin=dict(l=10, r=10, t=40, b=10))
    return fig
