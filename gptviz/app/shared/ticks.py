"""Token ticks thinned to what an axis holds at its type size: with 128 tokens (or GPT-2's
1,024) not every label fits, so every k-th is written, by one stated rule
(``thin_ticks``), for the page's type and for presenter mode's."""

from __future__ import annotations

import plotly.graph_objects as go

from gptviz.app.shared.heatmaps import LINE_EM

REF_PLOT_PX = 900  # the plot width an x axis is thinned for: the page column of 1280 px
MAX_TICK_LABELS = 32  # token labels per axis at most: the browser measures every one


def tick_room(fig: go.Figure, axis, letter: str) -> int:
    """How many tick labels fit along ``axis`` (of ``letter`` "x" or "y") at its type size:
    its span in px over LINE_EM times the size of its labels (the axis's tick font, else
    the figure's, else 12 px). A y axis spans the figure's height (plotly's 450 px when
    unset) less its margins; an x axis its width (REF_PLOT_PX when unset, as in a page
    column) less its margins; each times the axis's share of the plot (its domain).

    >>> import numpy as np
    >>> from gptviz.app.shared.heatmaps import heatmap
    >>> fig = heatmap(np.eye(128), [str(i) for i in range(128)], [str(i) for i in range(128)],
    ...               height=640)
    >>> tick_room(fig, fig.layout.yaxis, "y"), tick_room(fig.update_yaxes(tickfont_size=16),
    ...                                                  fig.layout.yaxis, "y")
    (36, 27)
    """
    size = axis.tickfont.size or fig.layout.font.size or 12
    m = fig.layout.margin
    if letter == "y":
        span = (fig.layout.height or 450) - (100 if m.t is None else m.t) - (
            80 if m.b is None else m.b)
    else:
        span = (fig.layout.width or REF_PLOT_PX) - (
            0 if fig.layout.width is None else (m.l or 0) + (m.r or 0))
    lo, hi = axis.domain or (0, 1)
    return max(1, int(span * (hi - lo) // (LINE_EM * size)))


def thin_ticks(fig: go.Figure, max_labels: int = MAX_TICK_LABELS) -> go.Figure:
    """Label every k-th token on an axis that cannot hold a label per token at its type
    size. The rule: an axis with T token ticks that holds n = min(``max_labels``,
    ``tick_room``) labels shows the tokens 0, k, 2k, … with k = ⌈T / n⌉, the smallest step
    that fits (128 tokens on a 640 px heatmap: every 4th at 12 px, every 5th at the 16 px
    of presenter mode). Hover still names every cell.

    >>> import numpy as np
    >>> from gptviz.app.shared.heatmaps import heatmap
    >>> fig = thin_ticks(heatmap(np.eye(100), [str(i) for i in range(100)]))
    >>> len(fig.layout.xaxis.tickvals), fig.layout.xaxis.ticktext[1]
    (25, '4')
    """
    axes = [(a, "x") for a in fig.select_xaxes()] + [(a, "y") for a in fig.select_yaxes()]
    for axis, letter in axes:
        vals, text = axis.tickvals, axis.ticktext
        if axis.tickmode != "array" or vals is None:
            continue
        fits = min(max_labels, tick_room(fig, axis, letter))
        if len(vals) > fits:
            step = -(-len(vals) // fits)  # ceil
            axis.update(tickvals=list(vals[::step]), ticktext=list(text[::step]))
    return fig
