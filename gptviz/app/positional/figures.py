"""Positional-encoding figures: the table PE, a few of its columns as curves, and P Pᵀ."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from gptviz.app.shared.heatmaps import as_float32, heatmap, matrix_panels


def pe_heatmap(P, title: str = "PE: positions × dimensions") -> go.Figure:
    """The (N, d) table, position i down, dimension across.

    >>> pe_heatmap(np.zeros((4, 2))).data[0].z.shape
    (4, 2)
    """
    return heatmap(P, None, None, kind="signed", title=title, x_title="dimension",
                   y_title="position i")


def pe_curves(P, dims: Sequence[int], title: str = "chosen dimensions along the positions"
              ) -> go.Figure:
    """Column ``dim`` of PE against the position, one line per chosen dimension.

    For the sinusoidal table, column 2j is sin(i / 10000^(2j/d)) and 2j+1 its cosine:
    low dimensions swing fast, high ones slowly.

    >>> [t.name for t in pe_curves(np.zeros((4, 6)), [0, 5]).data]
    ['dim 0', 'dim 5']
    """
    p = as_float32(P)  # (N, d)
    bad = [d for d in dims if not 0 <= d < p.shape[1]]
    if bad:
        raise ValueError(f"dimension(s) {bad} out of range: PE has {p.shape[1]} dimensions.")
    i = np.arange(p.shape[0])
    fig = go.Figure([go.Scatter(x=i, y=p[:, d], mode="lines", name=f"dim {d}",
                                hovertemplate=f"dim {d}, i = %{{x}}: %{{y:.3f}}<extra></extra>")
                     for d in dims])
    fig.update_layout(title=title, xaxis_title="position i", yaxis_title="PE[i, dim]",
                      margin=dict(l=10, r=10, t=40, b=10))
    return fig


def pe_similarity_heatmap(S, title: str = "position similarity PE · PEᵀ") -> go.Figure:
    """S (N, N): S[i, j] = PE_i · PE_j; for sinusoids it depends only on |i − j|
    (``gptviz.positions.sinusoidal_shift_check``).

    >>> pe_similarity_heatmap(np.eye(3)).layout.yaxis.autorange
    'reversed'
    """
    return heatmap(S, None, None, kind="seq", title=title, x_title="position j",
                   y_title="position i")


def x_plus_pe_figure(X, PE, tokens: Sequence[str]) -> go.Figure:
    """E[ids], PE and their sum X + PE (each (T, d)) side by side: what block 0 receives.

    >>> fig = x_plus_pe_figure(np.ones((2, 3)), np.ones((2, 3)), ["a", "b"])
    >>> [a.text for a in fig.layout.annotations]
    ['E[ids]', 'PE', 'X = E[ids] + PE']
    """
    x, pe = as_float32(X), as_float32(PE)  # (T, d), (T, d)
    return matrix_panels({"E[ids]": x, "PE": pe, "X = E[ids] + PE": x + pe}, None, tokens,
                         kind="signed", title="what the first block receives")
