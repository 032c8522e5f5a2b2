"""Generation figures: the top-k candidates with the chosen token marked, one step at
several temperatures, and N samples against P_T.

Pure builders: numpy in, plotly figure out. Candidates sit at numeric positions
whose tick labels are the tokens (plotly would merge two tokens that look alike).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from gptviz.app.generation.bars import (
    BAR,
    CHOSEN,
    MONO_PX,
    SAMPLED,
    candidates,
    mono_columns,
    tick_names,
    top_ids,
)
from gptviz.app.shared.chips import (
    CHIP_CSS,
    chip,
    hex_bytes,
    token_chip,
    token_label,
    visible,
)
from gptviz.app.shared.heatmaps import as_float32
from gptviz.app.shared.tex import percent
from gptviz.i18n import N_, _, ngettext, number
from gptviz.tokenizers.base import TokenInfo


def tick_margin(ticks: Sequence[str]) -> int:
    """The left margin (px) plotly's automargin gives these monospace tick labels, or a
    pixel more. Set up front, automargin has nothing to add and the chart is drawn once:
    growing the margin redraws it, ~20 ms of each "Next token" click in Chromium. Wider
    labels (another font) still grow it.

    >>> tick_margin(["a ◀ chosen"]), tick_margin(["-" * 16 + "… ◀ chosen"])  # it gave 97, 223
    (98, 223)
    """
    return math.ceil(MONO_PX * max(map(mono_columns, ticks), default=0)) + 19


def percent_ticks(right: float) -> str:
    """A tick format for a probability axis from 0 to ``right``: whole percents repeat
    (0%, 1%, 1%, 2%) on an axis that ends below 10 %.

    >>> percent_ticks(0.8), percent_ticks(0.02)
    ('.0%', '.1%')
    """
    return ".0%" if right >= 0.1 else ".1%"


def topk_bars(labels: Sequence[str], probs, chosen: int | None = None, logits=None,
              k: int = 10, title: str = "") -> go.Figure:
    """The k most probable next tokens as bars with percentages; ``chosen`` in orange.

    A chosen token outside the top k gets its own bar at the bottom.

    >>> fig = topk_bars(["a", "b", "c"], [0.2, 0.7, 0.1], chosen=2, k=2)
    >>> list(fig.layout.yaxis.ticktext), fig.data[0].marker.color[-1]
    (['b', 'a', 'c ◀ chosen'], '#f58518')
    """
    c = candidates(labels, probs, chosen, logits, k)
    pos = np.arange(len(c.ids))
    # One constructor call: validating each update_* call on its own took ~4x as long (8 ms
    # of each "Next token" rerun); the figure is the same.
    fig = go.Figure(data=[go.Bar(
        x=c.p, y=pos, orientation="h", text=[percent(float(q)) for q in c.p],
        textposition="outside", cliponaxis=False,
        marker_color=[CHOSEN if i == chosen else BAR for i in c.ids],
        customdata=np.stack([np.array(c.ids, dtype=object), c.y.astype(object),
                             np.array(c.names, dtype=object)], axis=1),
        hovertemplate="%{customdata[2]} (id %{customdata[0]})<br>y = %{customdata[1]:.3f}"
                      "<br>P = %{text}<extra></extra>")], layout=dict(
        yaxis=dict(tickmode="array", tickvals=pos, ticktext=c.ticks, autorange="reversed",
                   tickfont=dict(family="monospace", size=13)),
        xaxis=dict(title=dict(text=_("probability")), range=[0, c.right],
                   tickformat=percent_ticks(c.right)),
        title=dict(text=title), height=70 + 30 * max(len(c.ids), 3),  # b: x ticks, title
        margin=dict(l=tick_margin(c.ticks), r=50, t=40, b=65)))  # r: "100.0%" past a bar
    return fig


def temperature_panels(labels: Sequence[str], panels: Sequence[tuple[float, np.ndarray, float]],
                       logits, k: int = 10) -> go.Figure:
    """One panel per (T, P_T, entropy), all on the same candidates (the k largest logits).

    The panels stand 3 % of the width apart: a tick label centred on one panel's last tick
    ("100%") would run into the next panel's first ("0%"). Each label starts at its tick
    instead, and one that would leave its panel is hidden; each title breaks before H and
    leaves out its unit (the page around says nats), so that narrow panels' titles stay
    apart too.

    >>> fig = temperature_panels(["a", "b"], [(0.5, np.array([.9, .1]), .33),
    ...                                        (2.0, np.array([.6, .4]), .67)], [2.0, 1.0])
    >>> [a.text for a in fig.layout.annotations]
    ['T = 0.5<br>H = 0.330', 'T = 2.0<br>H = 0.670']
    >>> fig.layout.xaxis2.ticklabelposition, fig.layout.xaxis2.ticklabeloverflow
    ('outside right', 'hide past domain')
    """
    ids = top_ids(as_float32(logits), k)
    names = tick_names(labels, ids)
    pos = np.arange(len(ids))
    titles = [(_("T = 0 (greedy)") if t == 0 else f"T = {number(t, 1)}")
              + f"<br>H = {number(abs(h), 3)}" for t, _p, h in panels]  # abs: one-hot has -0.0
    fig = make_subplots(rows=1, cols=max(1, len(panels)), shared_yaxes=True,
                        subplot_titles=titles, horizontal_spacing=0.03)
    top = max([float(as_float32(q)[ids].max()) for _t, q, _h in panels] + [0.01])
    for col, (_t, probs, _h) in enumerate(panels, start=1):
        p = as_float32(probs)[ids]  # (k,)
        fig.add_trace(go.Bar(x=p, y=pos, orientation="h", marker_color=BAR, showlegend=False,
                             text=[percent(float(v)) for v in p], textposition="auto",
                             customdata=np.array(names, dtype=object),
                             hovertemplate="%{customdata}: %{text}<extra></extra>"),
                      row=1, col=col)
        fig.update_xaxes(range=[0, min(1.0, 1.15 * top)],
                         tickformat=percent_ticks(min(1.0, 1.15 * top)), row=1, col=col,
                         ticklabelposition="outside right", ticklabeloverflow="hide past domain")
    fig.update_yaxes(tickmode="array", tickvals=pos, ticktext=names, autorange="reversed",
                     tickfont=dict(family="monospace", size=13))
    fig.update_annotations(font_size=13)
    fig.update_layout(height=106 + 28 * len(ids), margin=dict(l=10, r=10, t=66, b=10))
    return fig


def total_variation(counts, probs) -> float:
    """½ Σ |c_i/N − P(i)|: 0 when the histogram is exactly P.

    >>> total_variation([3, 1], [0.75, 0.25])
    0.0
    """
    c = np.asarray(counts, np.float64)
    return float(0.5 * np.abs(c / c.sum() - np.asarray(probs, np.float64)).sum())


def sample_histogram(labels: Sequence[str], counts, probs, k: int = 10,
                     symbol: str = "P_T") -> go.Figure:
    """Observed frequency c_i / N beside P(i) for the k most probable ids, plus the rest;
    ``symbol`` names the distribution drawn from (P_T, or P' after top-k / top-p).

    >>> fig = sample_histogram(["a", "b", "c"], [6, 3, 1], [0.5, 0.4, 0.1], k=2)
    >>> fig.data[1].y.tolist(), list(fig.layout.xaxis.ticktext)
    ([0.6, 0.3, 0.1], ['a', 'b', 'all others'])
    """
    c = np.asarray(counts, np.int64)  # (|V|,)
    p = np.asarray(probs, np.float64)  # (|V|,)
    n = int(c.sum())
    ids = top_ids(p, k)
    rest = np.ones(p.size, bool)
    rest[ids] = False
    names = tick_names(labels, ids)
    shown_p, shown_c = list(p[ids]), list(c[ids])
    if rest.any():
        names.append(_("all others"))
        shown_p.append(float(p[rest].sum()))
        shown_c.append(int(c[rest].sum()))
    pos = np.arange(len(names))
    freq = np.asarray(shown_c, np.float64) / max(n, 1)
    fig = go.Figure([
        go.Bar(x=pos, y=np.asarray(shown_p), name=f"{symbol}(i)", marker_color=BAR,
               text=[percent(v) for v in shown_p], textposition="auto", cliponaxis=False,
               textfont=dict(size=12), hovertemplate=f"{symbol} = %{{text}}<extra></extra>"),
        go.Bar(x=pos, y=freq, name=f"c_i / N (N = {number(n, 0, grouping=True)})",
               marker_color=SAMPLED, customdata=np.asarray(shown_c),
               text=[percent(v) for v in freq.tolist()], textposition="auto", cliponaxis=False,
               textfont=dict(size=12),
               hovertemplate=_("%{customdata:,} draws = %{text}") + "<extra></extra>"),
    ])
    # labels turned up to the left end at their bar, so the last ("all others", the
    # tallest bar at |V| = 50,257) stays inside the figure: turned the other way it ran
    # past the right edge and was cut off
    fig.update_xaxes(tickmode="array", tickvals=pos, ticktext=names, tickangle=-30,
                     tickfont=dict(family="monospace", size=13))
    fig.update_layout(barmode="group", yaxis=dict(title=_("probability"), tickformat=".0%"),
                      title=ngettext("{n} draw from {symbol} against {symbol}",
                                     "{n} draws from {symbol} against {symbol}", n).format(
                                         n=number(n, 0, grouping=True), symbol=symbol),
                      legend=dict(orientation="h", y=1.02, x=1, xanchor="right",
                                  yanchor="bottom"),
                      height=400, margin=dict(l=10, r=10, t=60, b=10))
    return fig


SEQ_CSS = """
<style>
.gv-chip.gv-cut{opacity:.38;text-decoration:line-through}
.gv-chip.gv-new{outline:2px solid #f58518;outline-offset:-2px}
.gv-chip.gv-last{outline:3px solid #d4470f;box-shadow:0 0 0 2px #ffd8b5}
.gv-scissor{font:600 13px 'Source Sans',ui-sans-serif,system-ui,sans-serif;
color:#b42318;align-self:center;
padding:0 4px}
.gv-more{font:12px 'Source Sans',ui-sans-serif,system-ui,sans-serif;
color:#6b7280;align-self:center}
</style>
"""


def sequence_chips_html(tokens: Sequence[TokenInfo], n_prompt: int, dropped: int,
                        max_tokens: int = 400) -> str:
    """The prompt and the generated tokens as chips; the ``dropped`` first tokens (outside the
    context window) faded and struck through before a ✂; generated tokens outlined, the newest
    most.

    >>> t = [TokenInfo(i, c, c.encode(), (i, i + 1)) for i, c in enumerate("abcd")]
    >>> h = sequence_chips_html(t, n_prompt=2, dropped=1)
    >>> h.count(" gv-new"), h.count(" gv-cut"), "✂" in h
    (2, 1, True)
    """
    n = len(tokens)
    first = max(0, n - max_tokens)
    parts = [CHIP_CSS, SEQ_CSS, '<div class="gv-chips">']
    if first:
        parts.append('<span class="gv-more">' + escape(ngettext(
            "… {n} earlier token not drawn", "… {n} earlier tokens not drawn", first).format(
                n=number(first, 0, grouping=True))) + "</span>")
    for pos in range(first, n):
        tok = tokens[pos]
        if pos == dropped and dropped:
            parts.append('<span class="gv-scissor" title="' + escape(ngettext(
                "the context window starts here: the {n} token before it is cut",
                "the context window starts here: the {n} tokens before it are cut",
                dropped).format(n=number(dropped, 0, grouping=True))) + '">✂</span>')
        generated = pos >= n_prompt
        classes = " ".join(c for c, on in (("gv-cut", pos < dropped), ("gv-new", generated),
                                           ("gv-last", generated and pos == n - 1)) if on)
        where = (_("generated at step {i}").format(i=pos - n_prompt + 1) if generated else
                 _("prompt")) + (" · " + _("cut: outside the context window")
                                 if pos < dropped else "")
        tip = _("position {pos} · id {id} · token {token} · bytes [{bytes}]").format(
            pos=pos, id=tok.id, token=repr(tok.string), bytes=hex_bytes(tok.bytes)) + " · " + where
        parts.append(token_chip(tok, pos, tip, classes))
    parts.append("</div>")
    return "".join(parts)


def attention_chips_html(tokens: Sequence[TokenInfo], weights: Sequence[float]) -> str:
    """The context tokens tinted by one query's attention weights, each weight under its chip.

    >>> t = [TokenInfo(i, c, c.encode(), (i, i + 1)) for i, c in enumerate("ab")]
    >>> "0.75" in attention_chips_html(t, [0.25, 0.75])
    True
    """
    top = max(max(weights, default=0.0), 1e-9)
    parts = [CHIP_CSS, '<div class="gv-chips">']
    for pos, (tok, w) in enumerate(zip(tokens, weights, strict=True)):
        alpha = 0.08 + 0.92 * float(w) / top
        tip = _("position {pos} · id {id} · token {token} · weight {w}").format(
            pos=pos, id=tok.id, token=repr(tok.string), w=number(float(w), 4))
        parts.append(chip(token_label(tok), f"{float(w):.2f}",
                          f"rgba(245,133,24,{alpha:.3f})", tip))
    parts.append("</div>")
    return "".join(parts)


def history_table(contexts: Sequence[str], chosen: Sequence[str], probs: Sequence[float],
                  entropies: Sequence[float], settings: Sequence[str],
                  cropped: Sequence[int]) -> pd.DataFrame:
    """One row per generated token: step, the end of its context, choice, P(choice), H.

    >>> float(history_table(["ab"], ["c"], [0.5], [0.69], ["T=1"], [0]).iloc[0]["P(chosen)"])
    0.5
    """
    return pd.DataFrame({  # English headers (the CSV's); a page shows them translated
        N_("step"): range(1, len(chosen) + 1),
        N_("context (end)"): [visible(c[-30:]) for c in contexts],
        N_("chosen"): [visible(c) for c in chosen],
        N_("P(chosen)"): [round(float(p), 4) for p in probs],
        N_("entropy (nats)"): [round(float(h), 4) for h in entropies],
        N_("settings"): list(settings),
        N_("cut tokens"): list(cropped),
    })
