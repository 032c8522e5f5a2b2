"""The projector's figures of a class's answers, pure plotly builders: the count per
choice with the model's answer marked, and the spread of guessed numbers beside the
model's value."""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go

from gptviz.classroom.records import Tally, number_text
from gptviz.i18n import _

MODEL, CLASS, MEDIAN = "#ff7f0e", "#1f77b4", "#0b2f66"  # the model's answer, the class
HEIGHT = 260
MAX_BINS = 12


def spread(values: tuple[float, ...]) -> tuple[float, float, float]:
    """The median and the quartiles of the guesses (the middle half lies between them).

    >>> spread((1.0, 2.0, 3.0, 4.0, 100.0))
    (3.0, 2.0, 4.0)
    """
    q1, median, q3 = np.percentile(np.asarray(values, np.float64), [25, 50, 75])
    return float(median), float(q1), float(q3)


def bins(values: tuple[float, ...], model: float) -> tuple[np.ndarray, np.ndarray]:
    """Counts and edges of at most ``MAX_BINS`` equal bins over the guesses and the model's
    value, so the model's mark always lies on the axis.

    >>> counts, edges = bins((1.0, 2.0, 2.0, 9.0), 5.0); int(counts.sum()), edges[[0, -1]]
    (4, array([1., 9.]))
    """
    v = np.asarray(values, np.float64)
    lo, hi = min(v.min(), model), max(v.max(), model)
    if hi - lo < 1e-9:
        lo, hi = lo - 0.5, hi + 0.5
    n = int(min(MAX_BINS, max(3, np.ceil(np.sqrt(len(v))) + 2)))
    return np.histogram(v, bins=n, range=(lo, hi))


def _empty(fig: go.Figure, text: str) -> go.Figure:
    fig.add_annotation(text=text, showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper",
                       font=dict(size=18))
    return fig.update_xaxes(visible=False).update_yaxes(visible=False)


def _layout(fig: go.Figure, title: str) -> go.Figure:
    return fig.update_layout(title=dict(text=title, x=0, font=dict(size=16)), height=HEIGHT,
                             margin=dict(l=10, r=10, t=44, b=10), showlegend=False,
                             bargap=0.15, plot_bgcolor="rgba(0,0,0,0)")


def choice_figure(t: Tally) -> go.Figure:
    """One bar per choice, its count on it; the model's answer in orange."""
    s = t.question.snapshot
    labels = [html.escape(c) for c in s.choices]
    colours = [MODEL if i == s.answer else CLASS for i in range(len(labels))]
    fig = go.Figure(go.Bar(x=labels, y=list(t.counts), marker_color=colours,
                           text=[str(c) for c in t.counts], textposition="auto",
                           hovertemplate="%{x}: %{y}<extra></extra>"))
    fig.update_yaxes(title=_("students"), rangemode="tozero", dtick=max(1, max(t.counts,
                                                                          default=1) // 5))
    fig.update_xaxes(type="category")  # "107" is a choice's text, not a position
    title = _("{answered} of {joined} answered · {right} chose the model's answer "
              "{answer}").format(answered=t.answered, joined=t.joined, right=t.right,
                                 answer=f"<span style='color:{MODEL}'>■ "
                                        f"{html.escape(s.model_text())}</span>")
    if not t.answered:
        _empty(fig, _("No answers yet"))
    return _layout(fig, title)


def number_figure(t: Tally) -> go.Figure:
    """The guesses' histogram, the class's median (dashed) and the model's value (orange)."""
    s = t.question.snapshot
    fig = go.Figure()
    model = float(s.value)
    if not t.values:
        return _layout(_empty(fig, _("No guesses yet")), _(
            "0 of {joined} guessed · the model: {model}").format(
            joined=t.joined, model=number_text(model, s.unit)))
    counts, edges = bins(t.values, model)
    centres, width = (edges[:-1] + edges[1:]) / 2, edges[1] - edges[0]
    fig.add_trace(go.Bar(x=centres, y=counts, width=width * 0.95, marker_color=CLASS,
                         customdata=np.stack([edges[:-1], edges[1:]], axis=1),
                         hovertemplate="%{customdata[0]:.3g} – %{customdata[1]:.3g}: "
                                       "%{y}<extra></extra>"))
    median, q1, q3 = spread(t.values)
    top = float(counts.max())
    fig.add_vrect(x0=q1, x1=q3, fillcolor=CLASS, opacity=0.12, line_width=0)
    fig.add_vline(x=median, line=dict(color=MEDIAN, dash="dash", width=3))
    fig.add_annotation(x=median, y=top, yshift=14, text=_("class median"), showarrow=False,
                       font=dict(color=MEDIAN, size=13), xanchor="right", bgcolor="white")
    fig.add_vline(x=model, line=dict(color=MODEL, width=4))
    fig.add_annotation(x=model, y=top, yshift=14,
                       text=_("model {value}").format(value=number_text(model, s.unit)),
                       showarrow=False, font=dict(color=MODEL, size=15), bgcolor="white")
    fig.update_yaxes(title=_("guesses"), rangemode="tozero", dtick=max(1, int(top) // 5))
    fig.update_xaxes(title=s.unit or _("guess"))  # the unit as the teacher's lesson wrote it
    return _layout(fig, _("{answered} of {joined} guessed · class median {median} · middle "
                          "half {q1} – {q3}").format(
        answered=t.answered, joined=t.joined, median=number_text(median, s.unit),
        q1=number_text(q1), q3=number_text(q3, s.unit)))


def answers_figure(t: Tally) -> go.Figure:
    """The figure for a question's kind."""
    return number_figure(t) if t.question.snapshot.kind == "number" else choice_figure(t)
