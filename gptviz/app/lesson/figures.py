"""The lesson's own figure: one token's vector length along the residual stream, as the chain
‖x‖ → (stage) → ‖x‖ → …, every arrow labelled with the stage it crosses.

It follows the rule of every tree and chain figure (``shared.labels``): each arrow is at
least as long as its label, so a label never reaches a number (the handout's formula wrote
"0.mid" over them), and the chain wraps onto as many rows as the narrowest column it is drawn
in needs: 3 stages of a 1-layer model or the 25 of GPT-2 alike. Pure builder.
"""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

from gptviz.app.shared import labels as lb
from gptviz.i18n import _, number

CHAIN_FONT = 15  # px, monospace
CHAIN_PX = 440  # the plot area's width the chain is laid out for (the Lesson's figure column)
MIN_ARROW = 30  # px: an arrow's least length
ROW_GAP = 14  # px between two rows
MARGIN = dict(l=10, r=10, t=44, b=10)
ARROW = "#6b7280"


def chain_layout(values: Sequence[str], stages: Sequence[str], width: float = CHAIN_PX
                 ) -> tuple[list[tuple[float, float]], list[tuple[float, float, float]], float]:
    """Where the chain goes in a plot area ``width`` px wide: each value's centre (x, y), each
    arrow's (x from, x to, y), and the height it takes. ``stages[k]`` labels the arrow into
    value k + 1; an arrow that does not fit on a row starts the next one.

    >>> at, arrows, h = chain_layout(["1.000", "2.000"], ["0.mid"], 200)
    >>> [round(x) for x, _ in at], [round(a) for a in arrows[0][:2]], h
    ([23, 128], [50, 101], 39.5)
    """
    h = lb.LINE_EM * CHAIN_FONT
    pitch = 2 * h + lb.GAP_PX + ROW_GAP  # a row: the labels' line, then the values'
    gap = 2 * lb.GAP_PX  # between an arrow and a value
    row, x = 0, 0.0
    centres, arrows = [], []
    for k, value in enumerate(values):
        w = lb.text_px(value, CHAIN_FONT)
        if k:
            arrow = max(MIN_ARROW, lb.text_px(stages[k - 1], CHAIN_FONT) + 2 * lb.GAP_PX)
            if x + gap + arrow + gap + w > width:  # the arrow and its value start a row
                row, x = row + 1, 0.0
            y = row * pitch + h + lb.GAP_PX + h / 2
            arrows.append((x + gap, x + gap + arrow, y))
            x += 2 * gap + arrow
        y = row * pitch + h + lb.GAP_PX + h / 2
        centres.append((x + w / 2, y))
        x += w
    return centres, arrows, (row + 1) * pitch - ROW_GAP


def residual_chain(norms: Sequence[float], stages: Sequence[str], token: str) -> go.Figure:
    """‖x_i‖ at every stage of the residual stream, as a labelled chain (``stages[0]`` is
    the embedding's, each later one the arrow into its value).

    >>> fig = residual_chain([1.0, 2.0, 3.0], ["embed", "0.mid", "0.post"], "a")
    >>> list(fig.data[0].text), list(fig.data[1].text), len(fig.layout.annotations)
    (['1.000', '2.000', '3.000'], ['0.mid', '0.post'], 2)
    """
    values = [number(v, 3) for v in norms]
    centres, arrows, plot_h = chain_layout(values, stages[1:])
    h = lb.LINE_EM * CHAIN_FONT
    font = dict(family=lb.FONT, size=CHAIN_FONT)
    fig = go.Figure([
        go.Scatter(x=[x for x, _ in centres], y=[y for _, y in centres], text=values,
                   mode="text", textposition="middle center", textfont=font, name="‖x‖",
                   customdata=list(stages),
                   hovertemplate=_("after {stage}: ‖x‖ = {value}").format(
                       stage="%{customdata}", value="%{text}") + "<extra></extra>"),
        go.Scatter(x=[(a + b) / 2 for a, b, _ in arrows],
                   y=[y - h / 2 - lb.GAP_PX - h / 2 for _, _, y in arrows], text=list(stages[1:]),
                   mode="text", textposition="middle center", name=_("stage"),
                   textfont=dict(font, color=ARROW), hoverinfo="skip")])
    for a, b, y in arrows:
        fig.add_annotation(x=b, y=y, ax=a, ay=y, xref="x", yref="y", axref="x", ayref="y",
                           text="", showarrow=True, arrowhead=2, arrowwidth=1.5,
                           arrowcolor=ARROW)
    fig.update_xaxes(visible=False, range=[0, CHAIN_PX], fixedrange=True)
    fig.update_yaxes(visible=False, range=[plot_h, 0], fixedrange=True)
    fig.update_layout(title=_("‖x‖ of the token “{token}” along the residual stream").format(
                          token=token),
                      height=plot_h + MARGIN["t"] + MARGIN["b"], margin=MARGIN,
                      showlegend=False, meta=lb.geometry(CHAIN_PX, plot_h, [0, CHAIN_PX],
                                                         [plot_h, 0]))
    return fig
