"""The Attention page's head taxonomy: every head scored as previous-token, induction,
first-token and self head, with the entropy of its pattern, and labelled on the grid."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st
import torch

from gptviz.analysis import attention as am
from gptviz.analysis import taxonomy as TX
from gptviz.analysis.core import to_numpy
from gptviz.analysis.induction import PROTOCOL, STANDARD_LENGTHS
from gptviz.app.attention import circuit_figures as cf
from gptviz.app.attention import figures as va
from gptviz.app.shared.cache import once_per_model
from gptviz.app.shared.figure_cache import cached_figure
from gptviz.app.shared.inputs import Prompt
from gptviz.app.shared.notes import counted
from gptviz.app.shared.picker import Picked
from gptviz.app.shared.widgets import csv_download, plot
from gptviz.checkpoints.folder import Checkpoint
from gptviz.model.hooks import ActivationCache

SHORT = {"previous-token": "previous", "induction": "induction", "first token": "first",
         "self": "self", "mixed": "mixed", "none": "none"}  # labels on the thumbnails


@once_per_model(lambda ckpt: f"Running the standard induction test on all "
                             f"{ckpt.config.n_layer * ckpt.config.n_head:,} heads")
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
        st.info(f"The prompt has {counted(t, 'token')}; the previous-token, first-token and self "
                "scores need at least 3 (from the third token on, the previous token, the "
                "first and the token itself are three different keys). Type a longer prompt.",
                icon=":material/info:")
        return
    patterns = am.all_patterns(cache, c.n_layer)  # (L, H, T, T)
    induction = induction_scores(picked)
    tax = TX.taxonomy(torch.from_numpy(np.array(patterns)),
                     None if induction is None else torch.from_numpy(np.array(induction)))
    st.markdown(
        "Some heads do one simple job that can be read off their pattern. A "
        "**previous-token** head sends each token to the one before it; a **first-token** "
        "head parks its attention on position 0 (our models have no BOS token: the first "
        "token of the text plays that role); a **self** head reads the token itself; an "
        "**induction** head, on a sequence seen before, looks at the token that *followed* "
        "the earlier copy of the current token, so that the model can copy it.")
    titles = [f"L{ly} H{h} {SHORT[tax.labels[ly][h]]}" for ly in range(c.n_layer)
              for h in range(c.n_head)]
    grid = cached_figure(picked, "taxonomy-grid", (prompt.ids, layer, head), lambda: (
        va.attention_grid(patterns, prompt.labels, selected=(layer, head),
                          cell_px=max(80, min(200, 900 // c.n_head)), titles=titles)))
    plot(grid)
    st.caption(f"Every head on this prompt, titled with its label; the framed one is layer "
               f"{layer}, head {head}.")
    if all(label == "none" for row in tax.labels for label in row):
        st.info(f"No head of this model reaches {TX.THRESHOLD} on any kind here: its heads "
                "spread their attention (the scores below say how much each leans one way). "
                "Another prompt may change that; a model trained for it shows the kinds "
                "clearly, e.g. induction-2layer, whose heads include induction heads.",
                icon=":material/info:")
    scores = {k: to_numpy(v) for k, v in tax.scores.items()}  # kind -> (L, H)
    left, right = st.columns([3, 2])
    with left:
        fig = cached_figure(picked, "taxonomy-scores", (prompt.ids,),
                            lambda: cf.taxonomy_scores(scores, tax.labels))
        plot(fig)
    with right:
        _how_measured(tax, t)
    df = taxonomy_table(tax)
    st.dataframe(df, hide_index=True, width="stretch", height=min(400, 35 * len(df) + 40))
    csv_download(df, "head-taxonomy.csv")
    st.caption(f"Entropy: the mean over the rows of −Σⱼ wᵢⱼ log wᵢⱼ, on the prompt (0: each "
               f"row on one key; uniform attention over each row's keys would give "
               f"{TX.uniform_entropy(t):.2f} nats for these {t} tokens).")


def _how_measured(tax: TX.Taxonomy, t: int) -> None:
    st.markdown(
        f"**How each score is measured.** Previous-token, first-token and self: on **this "
        f"prompt**, the head's mean weight on key i−1, on key 0 or on key i, over the queries "
        f"i = 2 … {t - 1} (rows 0 and 1 have no choice to make; from row 2 on, the three keys "
        f"differ). Induction: on the **standard repeated random sequence**, not on the "
        f"prompt: {PROTOCOL}; the mean over the lengths that fit the context.")
    st.markdown(f"**Labels.** {TX.label_rule()}")
    if not tax.induction_measured:
        st.info(f"Induction was not measured: the standard test repeats {STANDARD_LENGTHS[0]} "
                f"tokens (2 × {STANDARD_LENGTHS[0]} must fit the model's context) drawn from "
                "the vocabulary's letter-and-digit tokens, and this model has too short a "
                "context or no such tokens. The labels use the other kinds only.",
                icon=":material/info:")
