"""The "Trained vs untrained" view: the trained E beside E as the trainer initialised it.

The untrained side draws only the rows it shows (``untrained.py``), never the untrained model:
for GPT-2 small that is a few MB instead of ~500 MB on a server a class shares.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import streamlit as st

from gptviz.analysis import core as analysis
from gptviz.app.embeddings import figures as ve
from gptviz.app.embeddings.untrained import (
    FreshEmbedding,
    fresh_embedding,
    fresh_neighbours,
    fresh_rows,
)
from gptviz.app.shared.cache import vocab_labels, vocab_pca
from gptviz.app.shared.heatmaps import legend_on_top
from gptviz.app.shared.inputs import Prompt
from gptviz.app.shared.picker import Picked
from gptviz.app.shared.widgets import csv_download, dataframe, plot
from gptviz.checkpoints.folder import training_seed
from gptviz.i18n import N_, _, number
from gptviz.model import GPTConfig

NEIGHBOURS = 8
# the neighbour table's columns, shown as _(header); its CSV keeps them
COLUMNS = (N_("rank"), N_("trained: token"), N_("trained: cosine"), N_("fresh: token"),
           N_("fresh: cosine"))


@st.cache_resource(max_entries=4, show_spinner=False)  # its spinner: trained_vs_fresh's
def _located(config_json: str, seed: int) -> FreshEmbedding:
    """Where E starts in the seeded stream (a few KB; no user data, so shared)."""
    return fresh_embedding(GPTConfig.from_dict(json.loads(config_json)), seed)


@st.cache_data(max_entries=8, show_spinner=False)
def _fresh_pca(config_json: str, seed: int, ids: tuple[int, ...], k: int
               ) -> tuple[np.ndarray, np.ndarray]:
    fe = _located(config_json, seed)
    return untrained_pca(fe, ids, k)


@st.cache_data(max_entries=16, show_spinner=False)
def _fresh_neighbours(config_json: str, seed: int, token_id: int, k: int
                      ) -> tuple[np.ndarray, np.ndarray]:
    return fresh_neighbours(_located(config_json, seed), token_id, k)


def untrained_pca(fe: FreshEmbedding, ids, k: int) -> tuple[np.ndarray, np.ndarray]:
    """PCA of the untrained rows a scatter shows (``drawn_rows`` and ``ids``): coordinates
    (|V|, k), NaN for rows not drawn, and the explained-variance ratios (k,). A vocabulary of
    at most ``ve.MAX_POINTS`` rows is drawn whole, so this is the PCA of the whole matrix."""
    shown = np.union1d(ve.drawn_rows(fe.rows), np.asarray(ids, dtype=np.int64))  # sorted
    coords, ratio = analysis.pca(fresh_rows(fe, shown), k)  # (n, k), (k,)
    full = np.full((fe.rows, k), np.nan, dtype=np.float32)  # (|V|, k)
    full[shown] = coords
    return full, ratio


def _key(picked: Picked) -> tuple[str, int]:
    ckpt = picked.checkpoint
    return json.dumps(ckpt.config.to_dict(), sort_keys=True), training_seed(ckpt.card)


def trained_vs_fresh(picked: Picked, prompt: Prompt, pos: int) -> None:
    """The trained E beside the same model's E at initialisation."""
    config = picked.checkpoint.config
    key = _key(picked)
    try:
        with st.spinner(_("Drawing the untrained embedding matrix…")):
            _located(*key)
    except NotImplementedError as e:
        st.info(_("The untrained matrix of this model cannot be drawn on its own "
                  "({reason}).").format(reason=e))
        return
    labels = vocab_labels(picked)
    st.markdown(_("At initialisation every entry of E is drawn on its own from N(0, 0.02²), "
                  "so each row is a random vector; random vectors in {d} dimensions are nearly "
                  "orthogonal: their cosines scatter around 0 by about 1/√d ≈ {spread}, so "
                  "which tokens come out nearest is chance. Training moves tokens that are "
                  "used alike towards each other. Left the trained matrix, right the same "
                  "shapes freshly initialised with the seed training starts from "
                  "({seed}).").format(d=config.d_model, spread=number(config.d_model ** -0.5, 2),
                                      seed=key[1]))
    if config.vocab_size > ve.MAX_POINTS:
        st.caption(_("Each scatter draws the same fixed random sample of {shown} of the {n} "
                     "rows, plus the input tokens. The trained axes are computed from all "
                     "rows; the untrained ones from the rows drawn, because only those rows of "
                     "the untrained matrix are made (random rows have no preferred direction, "
                     "so a sample shows the same cloud).").format(
            shown=number(ve.MAX_POINTS, 0, grouping=True),
            n=number(config.vocab_size, 0, grouping=True)))
    left, right = st.columns(2)
    for col, (name, (coords, ratio)) in zip(
            (left, right), [("trained", vocab_pca(picked, 2)),
                            ("freshly initialised", _fresh_pca(*key, tuple(prompt.ids), 2))],
            strict=True):
        title = _("E trained") if name == "trained" else _("E freshly initialised")
        plot(legend_on_top(ve.pca_scatter(coords, labels, prompt.ids, ratio, title=title)),
             key=f"pca-{name}", container=col)
    token_id, label = prompt.ids[pos], prompt.labels[pos]
    E = analysis.to_numpy(picked.checkpoint.model.embed.weight)  # (|V|, d)
    rows = {}
    for name, (ids, sims) in [("trained", analysis.nearest_neighbours(E, token_id, NEIGHBOURS)),
                              ("fresh", _fresh_neighbours(*key, token_id, NEIGHBOURS))]:
        rows[f"{name}: token"] = [labels[i] for i in ids]
        rows[f"{name}: cosine"] = sims
    df = pd.DataFrame(rows)
    df.insert(0, "rank", range(1, len(df) + 1))
    st.markdown(_("Nearest neighbours of **{token}** (id {id}) by cosine similarity, searched "
                  "over all {n} rows on both sides:").format(
        token=repr(label), id=token_id, n=number(config.vocab_size, 0, grouping=True)))
    dataframe(df, hide_index=True, width="stretch", column_config={
        k: st.column_config.NumberColumn(format="%.4f") for k in df if k.endswith("cosine")})
    csv_download(df, f"neighbours-trained-vs-fresh-{picked.name}-{token_id}.csv")
