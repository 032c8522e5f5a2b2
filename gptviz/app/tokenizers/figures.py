"""Figures of the Tokenizers page: what one passage costs in many languages.

Pure builders: a table of counts in, a plotly figure out.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

# The measures the language chart can show -> how each is computed (the y-axis title).
MEASURES = {
    "cost vs English": "tokens ÷ tokens of the English passage",
    "tokens per character": "tokens ÷ characters",
    "tokens per word": "tokens ÷ words",
}
# The y-axis titles: short, the languages' names under the bars leave the axis ~200 px
AXIS_TITLES = {"cost vs English": "tokens ÷ English tokens"}
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
    bars = [go.Bar(x=list(part["language"]), y=[float(v) for v in part[measure]],
                   name=str(name), marker_color=COLOURS.get(str(name)),
                   customdata=list(part["tokens"]),
                   hovertemplate=f"{name} · %{{x}}<br>{measure}: %{{y:.3f}}<br>"
                                 "%{customdata} tokens<extra></extra>")
            for name, part in df.groupby("tokenizer", sort=False)]
    layout = dict(
        title=f"The same passage in every language: {measure}", barmode="group",
        height=480, margin=dict(l=10, r=10, t=60, b=10), legend_title_text="tokenizer",
        yaxis_title=AXIS_TITLES.get(measure) or MEASURES.get(measure, measure))
    if measure == "cost vs English":  # a plain shape: fig.add_hline costs ~150 ms
        layout["shapes"] = [dict(type="line", xref="paper", x0=0, x1=1, y0=1, y1=1,
                                 line=dict(dash="dash", color="#444"))]
        layout["annotations"] = [dict(xref="paper", x=0, y=1, text="English = 1",
                                      showarrow=False, xanchor="left", yanchor="bottom")]
    return go.Figure(data=bars, layout=layout)
