"""The Transformer block page's names in the reader's language: the engine's keys (a
parameter count's component, a stage of the logit lens, a LayerNorm statistic, a table's
column) stay English in the code and in the CSV files, and are translated where shown."""

from __future__ import annotations

import re

import pandas as pd

from gptviz.i18n import N_, _

# The components ``gptviz.model.config.parameter_counts`` names, each line of a block
# after its "blocks x12: " prefix.
COMPONENTS = {k: k for k in (
    N_("token embedding E"), N_("positional"), N_("final LayerNorm (λ, b)"),
    N_("final LayerNorm (λ)"), N_("unembedding W_U"), N_("total"),
    N_("attn W_Q, W_K, W_V"), N_("attn QKV biases b_Q, b_K, b_V"), N_("attn W_O (+ bias b_O)"),
    N_("FFN W_1, W_2 (+ biases b_1, b_2)"))}
BLOCKS = re.compile(r"^blocks x(\d+): (.*)$")
STATS = {k: k for k in (
    N_("mean before"), N_("var before"), N_("mean standardised"), N_("var standardised"),
    N_("mean after"), N_("var after"))}
COLUMNS = {k: k for k in (
    N_("stage"), N_("shape"), N_("mean"), N_("std"), N_("min"), N_("max"), N_("component"),
    N_("parameters"), N_("tied (W_U = Eᵀ)"), N_("untied"), N_("read after"), N_("rank"),
    N_("token"), N_("probability"), N_("position"), N_("adds to the logit"),
    N_("final top-1"), N_("commits after"), N_("keeps it after"))}
AFTER_BLOCK = re.compile(r"^after block (\d+)$")
WORDS = {"embeddings": N_("embeddings"), "embed": N_("embed")}  # "0.mid", "0.post": as they are


def component_name(key: str) -> str:
    """A line of ``parameter_counts`` as the page shows it.

    >>> component_name("blocks x4: attn W_O"), component_name("token embedding E")
    ('blocks x4: attn W_O', 'token embedding E')
    """
    if m := BLOCKS.match(key):
        return _("blocks x{n}: {component}").format(n=m.group(1),
                                                    component=component_name(m.group(2)))
    return _(COMPONENTS[key]) if key in COMPONENTS else key


def stage_name(key: str) -> str:
    """A stage of the logit lens, the commitment table or the residual stream ("embeddings",
    "after block 2", "embed") as the page shows it.

    >>> stage_name("after block 2"), stage_name("embeddings")
    ('after block 2', 'embeddings')
    """
    if m := AFTER_BLOCK.match(key):
        return _("after block {layer}").format(layer=m.group(1))
    return _(WORDS[key]) if key in WORDS else key


def stat_name(key: str) -> str:
    """A column of ``analysis.layernorm_stats`` ("mean before", …) as the page shows it."""
    return _(STATS[key]) if key in STATS else key


def shown_columns(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with its English column names in the reader's language (for the screen; the
    CSV keeps the English).

    >>> list(shown_columns(pd.DataFrame({"stage": [], "x": []})).columns)
    ['stage', 'x']
    """
    return df.rename(columns=lambda k: _(COLUMNS[k]) if k in COLUMNS else k)
