"""Figures of the Tokenizers page: what one passage costs in many languages.

Pure builders: a table of counts in, a plotly figure out.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from gptviz.i18n import N_, _

# The measures the language chart can show -> how each is computed (the y-axis title).
# Keys and texts are English (``N_``), shown as ``_(…)``; the link (?lang_measure=) and the
# CSV keep the English.
MEASURES = {
    N_("cost vs English"): N_("tokens ÷ tokens of the English passage"),
    N_("tokens per character"): N_("tokens ÷ characters"),
    N_("tokens per word"): N_("tokens ÷ words"),
}
# The y-axis titles: short, the languages' names under the bars leave the axis ~200 px
AXIS_TITLES = {"cost vs English": N_("tokens ÷ English tokens")}
# The sample's passages (assets/corpora/languages.json), by their English names
LANGUAGES = (N_("English"), N_("German"), N_("Spanish"), N_("Finnish"), N_("Vietnamese"),
             N_("Russian"), N_("Greek"), N_("Arabic"), N_("Hindi"), N_("Chinese"),
             N_("Japanese"), N_("Korean"), N_("Python code"), N_("Emoji"))
# One colour per tokenizer, the same on every chart of the page.
COLOURS = {"Character": "#9d9da1", "Word": "#bab0ac", "BPE": "#54a24b", "GPT-2": "#4c78a8",
           "cl100k": "#f58518", "o200k": "#b279a2"}


def language_bars(df: pd.DataFrame, measure: str) -> go.Figure:
    """Grouped bars: one group per language (in the table's order), one bar per tokenizer,
    the height ``df[measure]``; hover shows the token count too.

    >>> df = pd.DataFrame({"language": ["English", "Greek"] * 2, "tokenizer": list("AABB"),
    ...                    "tokens": [2, 9, 3, 5], "cost vs English": [1, 4.5, 1, 5 / 3]})
    >>> fig = language_bars(df, "cost vs English")
    >>> [t.name for t in fig.data], list(fig.data[1].y), list(fig.data[1].x)
    (['A', 'B'], [1.0, 1.6666666666666667], ['English', 'Greek'])
    """
    shown = _(measure)
    bars = [go.Bar(x=[_(lang) for lang in part["language"]],
                   y=[float(v) for v in part[measure]],
                   name=_(str(name)), marker_color=COLOURS.get(str(name)),
                   customdata=list(part["tokens"]),
                   hovertemplate=f"{_(str(name))} · %{{x}}<br>{shown}: %{{y:.3f}}<br>"
                                 + _("%{customdata} tokens") + "<extra></extra>")
            for name, part in df.groupby("tokenizer", sort=False)]
    layout = dict(
        title=_("The same passage in every language: {measure}").format(measure=shown),
        barmode="group", height=480, margin=dict(l=10, r=10, t=60, b=10),
        legend_title_text=_("tokenizer"),
        yaxis_title=_(AXIS_TITLES.get(measure) or MEASURES.get(measure, measure)))
    if measure == "cost vs English":  # a plain shape: fig.add_hline costs ~150 ms
        layout["shapes"] = [dict(type="line", xref="paper", x0=0, x1=1, y0=1, y1=1,
                                 line=dict(dash="dash", color="#444"))]
        layout["annotations"] = [dict(xref="paper", x=0, y=1, text=_("English = 1"),
                                      showarrow=False, xanchor="left", yanchor="bottom")]
    return go.Figure(data=bars, layout=layout)
