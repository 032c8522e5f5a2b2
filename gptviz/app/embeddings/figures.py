"""Embedding figures: the input tokens' rows of E, and the whole vocabulary in PCA space."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from gptviz.app.shared.heatmaps import as_float32, axis_labels, heatmap

HIGHLIGHT, BACKGROUND = "#d62728", "rgba(110, 120, 140, 0.5)"
WEBGL_ABOVE = 5000  # points; WebGL keeps big vocabularies responsive
MAX_POINTS = 5000  # vocabulary rows drawn; a bigger vocabulary is sampled (see drawn_rows)
LONG_ID_TICKS = 10  # id labels of four digits or more that fit across the one-hot panel


def drawn_rows(n: int, most: int = MAX_POINTS) -> np.ndarray:
    """The rows of a vocabulary of ``n`` that a PCA scatter draws: all of them, or a fixed
    random sample of ``most`` (seed 0, the same on every page and run), in id order.

    >>> len(drawn_rows(65)), len(drawn_rows(50_257)), drawn_rows(50_257)[:2].tolist()
    (65, 5000, [9, 10])
    """
    if n <= most:
        return np.arange(n)
    return np.sort(np.random.default_rng(0).choice(n, most, replace=False))


def embedding_rows(X, tokens: Sequence[str], title: str = "E[ids]: one row per input token"
                   ) -> go.Figure:
    """The input tokens' embedding rows X (T, d): tokens down, dimensions across.

    >>> embedding_rows(np.zeros((2, 4)), ["a", "b"]).data[0].z.shape
    (2, 4)
    """
    return heatmap(X, None, tokens, kind="signed", title=title, x_title="dimension",
                   y_title="token")


def one_hot_figure(one_hot, tokens: Sequence[str], ids: Sequence[int]) -> go.Figure:
    """Only the vocabulary columns the input uses, so the 1s stay visible (T, n_used).

    >>> one_hot_figure(np.eye(3)[[2, 0]], ["c", "a"], [2, 0]).layout.xaxis.ticktext
    ('0', '2')
    >>> ids = list(range(10_000, 10_021))  # 21 five-digit ids: every third is labelled
    >>> one_hot_figure(np.ones((21, 10_021)), ["t"] * 21, ids).layout.xaxis.ticktext[:2]
    ('10000', '10003')
    """
    used = sorted(set(int(i) for i in ids))
    oh = as_float32(one_hot)[:, used]  # (T, n_used)
    long = len(str(used[-1])) >= 4  # GPT-2's ids: turned on end, they need the title's room
    fig = heatmap(oh, [str(i) for i in used], tokens, kind="prob",
                  title="one-hot rows OH (columns: the ids used)",
                  x_title="" if long else "token id", y_title="token")
    if long and len(used) > LONG_ID_TICKS:  # every k-th id (hover names every column)
        step, axis = -(-len(used) // LONG_ID_TICKS), fig.layout.xaxis
        fig.update_xaxes(tickvals=axis.tickvals[::step], ticktext=axis.ticktext[::step])
    return fig


def pca_scatter(coords, labels: Sequence[str], highlight: Sequence[int] = (),
                explained=None, title: str = "vocabulary, PCA of E") -> go.Figure:
    """Every vocabulary row as a point (n, 2) or (n, 3), or ``drawn_rows``' sample of a big
    vocabulary; ``highlight`` ids (always drawn) in red, labelled.

    >>> fig = pca_scatter(np.zeros((3, 2)), ["a", "b", "c"], [1]); [t.name for t in fig.data]
    ['vocabulary', 'input tokens']
    """
    c = as_float32(coords)  # (n, k), k = 2 or 3
    if c.ndim != 2 or c.shape[1] not in (2, 3):
        raise ValueError(f"coords must be (n, 2) or (n, 3), got {c.shape}.")
    names = np.array(axis_labels(labels, c.shape[0]), dtype=object)
    chosen = np.array(sorted(set(int(i) for i in highlight)), dtype=np.int64)
    rows = drawn_rows(c.shape[0])
    axes = _axis_titles(c.shape[1], explained)
    fig = go.Figure([
        _points(c[rows], names[rows], "vocabulary", dict(size=4, color=BACKGROUND), "markers"),
        _points(c[chosen], names[chosen], "input tokens", dict(size=9, color=HIGHLIGHT),
                "markers+text"),
    ])
    if c.shape[1] == 3:
        fig.update_layout(scene=dict(xaxis_title=axes[0], yaxis_title=axes[1],
                                     zaxis_title=axes[2]))
    else:
        fig.update_layout(xaxis_title=axes[0], yaxis_title=axes[1])
    fig.update_layout(title=title, margin=dict(l=10, r=10, t=40, b=10),
                      legend=dict(orientation="h"))
    return fig


def _points(c: np.ndarray, names: np.ndarray, name: str, marker: dict, mode: str):
    common = dict(mode=mode, name=name, marker=marker, text=names.tolist(),
                  textposition="top center", hovertemplate="%{text}<extra>" + name + "</extra>")
    if c.shape[1] == 3:
        return go.Scatter3d(x=c[:, 0], y=c[:, 1], z=c[:, 2], **common)
    cls = go.Scattergl if len(c) > WEBGL_ABOVE else go.Scatter
    return cls(x=c[:, 0], y=c[:, 1], **common)


def _axis_titles(k: int, explained) -> list[str]:
    if explained is None:
        return [f"PC{i + 1}" for i in range(k)]
    return [f"PC{i + 1} ({100 * float(r):.1f} % of variance)" for i, r in enumerate(explained)]


def neighbour_bars(labels: Sequence[str], similarities, token: str = "") -> go.Figure:
    """Cosine similarity of the nearest neighbours, most similar on top.

    >>> neighbour_bars(["b", "c"], [0.75, 0.5], "a").data[0].x.tolist()
    [0.75, 0.5]
    """
    sims = as_float32(similarities)  # (k,)
    names = axis_labels(labels, len(sims))
    pos = np.arange(len(sims))
    fig = go.Figure(go.Bar(x=sims, y=pos, orientation="h", customdata=names,
                           marker_color="#4c78a8",
                           hovertemplate="%{customdata}: cos = %{x:.3f}<extra></extra>"))
    fig.update_yaxes(tickmode="array", tickvals=pos, ticktext=names, autorange="reversed")
    fig.update_layout(title=f"nearest neighbours of {axis_labels([token], 1)[0]!r}",
                      xaxis=dict(title="cosine similarity", range=[-1, 1]),
                      margin=dict(l=10, r=10, t=40, b=10), height=80 + 28 * len(sims))
    return fig
