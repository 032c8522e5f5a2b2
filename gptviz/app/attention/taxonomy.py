"""The Attention page's head taxonomy: every head scored as previous-token, induction,
first-token and self head, with the entropy of its pattern, and labelled on the grid."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st
import torch

from gptviz import i18n
from gptviz.analysis import attention as am
from gptviz.analysis import taxonomy as TX
from gptviz.analysis.core import to_numpy
from gptviz.analysis.induction import PROTOCOL, STANDARD_LENGTHS
from gptviz.app.attention import circuit_figures as cf
from gptviz.app.attention import figures as va
from gptviz.app.shared.cache import once_per_model
from gptviz.app.shared.figure_cache import cached_figure
from gptviz.app.shared.inputs import Prompt
from gptviz.app.shared.picker import Picked
from gptviz.app.shared.widgets import csv_download, data_grid, plot
from gptviz.checkpoints.folder import Checkpoint
from gptviz.i18n import N_, _, ngettext, number
from gptviz.model.hooks import ActivationCache

SHORT = {"previous-token": N_("previous"), "induction": N_("induction"),
         "first token": N_("first"), "self": N_("self"), "mixed": N_("mixed"),
         "none": N_("none")}  # labels on the thumbnails, shown through _
# The kinds and labels as the page names them (the engine's are keys: the CSV keeps them).
NAMES = {"previous-token": N_("previous-token"), "induction": N_("induction"),
         "first token": N_("first token"), "self": N_("self"), "mixed": N_("mixed"),
         "none": N_("none")}
COLUMNS = {"layer": N_("layer"), "head": N_("head"), "label": N_("label"),
           "entropy (nats)": N_("entropy (nats)")}


def named(key: str) -> str:
    """A kind, a label or a column of the table as the page writes it (``_`` of its name)."""
    return _(NAMES.get(key) or COLUMNS.get(key) or key)


def shown_table(df: pd.DataFrame) -> pd.DataFrame:
    """``taxonomy_table`` as the page shows it: its columns and labels in the reader's
    language (the CSV keeps the English keys)."""
    return df.assign(label=df["label"].map(named)).rename(columns=named)


@once_per_model(lambda ckpt: _("Running the standard induction test on all {n} heads").format(
    n=number(ckpt.config.n_layer * ckpt.config.n_head, 0, grouping=True)))
def _induction(ckpt: Checkpoint) -> np.ndarray | None:
    scores = TX.induction_scores(ckpt.model, ckpt.tokenizer)
    return None if scores is None else to_numpy(scores)  # (L, H)


def induction_scores(picked: Picked) -> np.ndarray | None:
    """Each head's score on the standard induction test (L, H), or None if not measured."""
    return _induction(picked)


def taxonomy_table(tax: TX.Taxonomy) -> pd.DataFrame:
    """One row per head: layer, head, label, the four kind scores and the entropy."""
    n_layer, n_head = tax.entropy.shape
    rows = []
    for ly in range(n_layer):
        for h in range(n_head):
            row = {"layer": ly, "head": h, "label": tax.labels[ly][h]}
            row |= {k: float(v[ly, h]) for k, v in tax.scores.items()}
            row["entropy (nats)"] = float(tax.entropy[ly, h])
            rows.append(row)
    return pd.DataFrame(rows)


def taxonomy_view(picked: Picked, prompt: Prompt, cache: ActivationCache, layer: int,
                  head: int) -> None:
    """The grid of every head labelled with its kind, the scores behind each label."""
    c = picked.checkpoint.config
    t = len(prompt.ids)
    if t < 3:
        st.info(ngettext(
            "The prompt has {n} token; the previous-token, first-token and self scores need "
            "at least 3 (from the third token on, the previous token, the first and the token "
            "itself are three different keys). Type a longer prompt.",
            "The prompt has {n} tokens; the previous-token, first-token and self scores need "
            "at least 3 (from the third token on, the previous token, the first and the token "
            "itself are three different keys). Type a longer prompt.", t).format(n=t),
            icon=":material/info:")
        return
    patterns = am.all_patterns(cache, c.n_layer)  # (L, H, T, T)
    induction = induction_scores(picked)
    tax = TX.taxonomy(torch.from_numpy(np.array(patterns)),
                     None if induction is None else torch.from_numpy(np.array(induction)))
    st.markdown(_(
        "Some heads do one simple job that can be read off their pattern. A "
        "**previous-token** head sends each token to the one before it; a **first-token** "
        "head parks its attention on position 0 (our models have no BOS token: the first "
        "token of the text plays that role); a **self** head reads the token itself; an "
        "**induction** head, on a sequence seen before, looks at the token that *followed* "
        "the earlier copy of the current token, so that the model can copy it."))
    titles = [f"L{ly} H{h} {_(SHORT[tax.labels[ly][h]])}" for ly in range(c.n_layer)
              for h in range(c.n_head)]
    lang = i18n.current()
    grid = cached_figure(picked, "taxonomy-grid", (prompt.ids, layer, head, lang), lambda: (
        va.attention_grid(patterns, prompt.labels, selected=(layer, head),
                          cell_px=max(80, min(200, 900 // c.n_head)), titles=titles)))
    plot(grid)
    st.caption(_("Every head on this prompt, titled with its label; the framed one is layer "
                 "{layer}, head {head}.").format(layer=layer, head=head))
    if all(label == "none" for row in tax.labels for label in row):
        st.info(_("No head of this model reaches {threshold} on any kind here: its heads "
                  "spread their attention (the scores below say how much each leans one way). "
                  "Another prompt may change that; a model trained for it shows the kinds "
                  "clearly, e.g. induction-2layer, whose heads include induction heads."
                  ).format(threshold=number(TX.THRESHOLD, 1)), icon=":material/info:")
    scores = {k: to_numpy(v) for k, v in tax.scores.items()}  # kind -> (L, H)
    left, right = st.columns([3, 2])
    with left:
        fig = cached_figure(picked, "taxonomy-scores", (prompt.ids, lang),
                            lambda: cf.taxonomy_scores(
                                {named(k): v for k, v in scores.items()},
                                [[named(label) for label in row] for row in tax.labels]))
        plot(fig)
    with right:
        _how_measured(tax, t)
    df = taxonomy_table(tax)
    data_grid(shown_table(df), hide_index=True, width="stretch",
              height=min(400, 35 * len(df) + 40))
    csv_download(df, "head-taxonomy.csv")
    st.caption(ngettext(
        "Entropy: the mean over the rows of −Σⱼ wᵢⱼ log wᵢⱼ, on the prompt (0: each row on "
        "one key; uniform attention over each row's keys would give {nats} nats for this "
        "{t} token).",
        "Entropy: the mean over the rows of −Σⱼ wᵢⱼ log wᵢⱼ, on the prompt (0: each row on "
        "one key; uniform attention over each row's keys would give {nats} nats for these "
        "{t} tokens).", t).format(nats=number(TX.uniform_entropy(t), 2), t=t))


def _how_measured(tax: TX.Taxonomy, t: int) -> None:
    st.markdown(_(
        "**How each score is measured.** Previous-token, first-token and self: on **this "
        "prompt**, the head's mean weight on key i−1, on key 0 or on key i, over the queries "
        "i = 2 … {last} (rows 0 and 1 have no choice to make; from row 2 on, the three keys "
        "differ). Induction: on the **standard repeated random sequence**, not on the "
        "prompt: {protocol}; the mean over the lengths that fit the context.").format(
            last=t - 1, protocol=_(PROTOCOL)))
    st.markdown(_("**Labels.** {rule}").format(rule=TX.label_rule()))
    if not tax.induction_measured:
        st.info(_("Induction was not measured: the standard test repeats {n} "
                  "tokens (2 × {n} must fit the model's context) drawn from "
                  "the vocabulary's letter-and-digit tokens, and this model has too short a "
                  "context or no such tokens. The labels use the other kinds only.").format(
                      n=STANDARD_LENGTHS[0]), icon=":material/info:")
