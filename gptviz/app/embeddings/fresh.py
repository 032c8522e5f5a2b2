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
    fresh_neighbours_of,
    fresh_rows,
)
from gptviz.app.shared.cache import once, shared_result, vocab_labels, vocab_pca
from gptviz.app.shared.figure_cache import cached_figure
from gptviz.app.shared.heatmaps import legend_on_top
from gptviz.app.shared.inputs import Prompt
from gptviz.app.shared.picker import Picked
from gptviz.app.shared.widgets import csv_download, plot
from gptviz.checkpoints.folder import training_seed
from gptviz.model import GPTConfig

NEIGHBOURS = 8


def _located(config_json: str, seed: int) -> FreshEmbedding:
    """Where E starts in the seeded stream, and a mark before each piece of it (a few KB per
    piece; no user data, so shared by every model of that shape and seed)."""
    config = GPTConfig.from_dict(json.loads(config_json))
    return once(("untrained-E", config_json, seed),
                f"Finding the untrained E's {config.vocab_size:,} rows in the random stream",
                lambda: fresh_embedding(config, seed))


def _sample(config_json: str, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The rows every untrained scatter draws (``ve.drawn_rows``): their ids (n,) and the
    rows (n, d). For GPT-2 small, 5,000 rows: 15 MB, against 154 MB for the whole E."""
    fe = _located(config_json, seed)

    def draw() -> tuple[np.ndarray, np.ndarray]:
        ids = ve.drawn_rows(fe.rows)
        return ids, fresh_rows(fe, ids)

    return once(("untrained-sample", config_json, seed),
                f"Drawing the {min(fe.rows, ve.MAX_POINTS):,} untrained rows the scatter shows",
                draw)


def _fresh_pca(config_json: str, seed: int, ids: tuple[int, ...], k: int
               ) -> tuple[np.ndarray, np.ndarray]:
    sample = _sample(config_json, seed)
    return shared_result(("untrained-pca", config_json, seed, ids, k), lambda: untrained_pca(
        _located(config_json, seed), ids, k, sample))


def _fresh_neighbours(config_json: str, seed: int, ids: tuple[int, ...], k: int
                      ) -> tuple[np.ndarray, np.ndarray]:
    """The untrained neighbours of every token of the prompt, in one pass: (T, k) each."""
    fe = _located(config_json, seed)
    return shared_result(("untrained-neighbours", config_json, seed, ids, k),
                         lambda: fresh_neighbours_of(fe, ids, k),
                         f"Searching the {fe.rows:,} untrained rows for neighbours")


def untrained_pca(fe: FreshEmbedding, ids, k: int,
                  sample: tuple[np.ndarray, np.ndarray] | None = None
                  ) -> tuple[np.ndarray, np.ndarray]:
    """PCA of the untrained rows a scatter shows (``drawn_rows`` and ``ids``): coordinates
    (|V|, k), NaN for rows not drawn, and the explained-variance ratios (k,). A vocabulary of
    at most ``ve.MAX_POINTS`` rows is drawn whole, so this is the PCA of the whole matrix.
    ``sample``: ``drawn_rows``' ids and rows, when already drawn; only the prompt's other
    rows are drawn then."""
    drawn, rows = sample if sample is not None else (ve.drawn_rows(fe.rows), None)
    shown = np.union1d(drawn, np.asarray(ids, dtype=np.int64))  # sorted
    if rows is None:
        X = fresh_rows(fe, shown)  # (n, d)
    else:
        X = np.empty((len(shown), fe.cols), dtype=np.float32)  # (n, d)
        known = np.isin(shown, drawn)
        X[known] = rows[np.searchsorted(drawn, shown[known])]
        X[~known] = fresh_rows(fe, shown[~known])
    coords, ratio = analysis.pca(X, k)  # (n, k), (k,)
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
        _sample(*key)
    except NotImplementedError as e:
        st.info(f"The untrained matrix of this model cannot be drawn on its own ({e}).")
        return
    labels = vocab_labels(picked)
    st.markdown("At initialisation every entry of E is drawn on its own from N(0, 0.02²), so "
                "each row is a random vector; random vectors in "
                f"{config.d_model} dimensions are nearly orthogonal: their cosines scatter "
                f"around 0 by about 1/√d ≈ {config.d_model ** -0.5:.2f}, so which tokens come out "
                "nearest is chance. Training moves tokens that are used alike towards each "
                "other. Left the trained matrix, right the same shapes freshly initialised "
                f"with the seed training starts from ({key[1]}).")
    if config.vocab_size > ve.MAX_POINTS:
        st.caption(f"Each scatter draws the same fixed random sample of {ve.MAX_POINTS:,} of "
                   f"the {config.vocab_size:,} rows, plus the input tokens. The trained axes "
                   "are computed from all rows; the untrained ones from the rows drawn, "
                   "because only those rows of the untrained matrix are made (random rows "
                   "have no preferred direction, so a sample shows the same cloud).")
    left, right = st.columns(2)
    for col, (name, (coords, ratio)) in zip(
            (left, right), [("trained", vocab_pca(picked, 2)),
                            ("freshly initialised", _fresh_pca(*key, tuple(prompt.ids), 2))],
            strict=True):
        plot(cached_figure(picked, f"pca-{name}", (prompt.ids,), lambda c=coords, r=ratio,
                           n=name: legend_on_top(ve.pca_scatter(c, labels, prompt.ids, r,
                                                                title=f"E {n}"))),
             key=f"pca-{name}", container=col)
    token_id, label = prompt.ids[pos], prompt.labels[pos]
    E = analysis.to_numpy(picked.checkpoint.model.embed.weight)  # (|V|, d)
    fresh_ids, fresh_sims = _fresh_neighbours(*key, tuple(prompt.ids), NEIGHBOURS)  # (T, k)
    rows = {}
    for name, (ids, sims) in [("trained", analysis.nearest_neighbours(E, token_id, NEIGHBOURS)),
                              ("fresh", (fresh_ids[pos], fresh_sims[pos]))]:
        rows[f"{name}: token"] = [labels[i] for i in ids]
        rows[f"{name}: cosine"] = sims
    df = pd.DataFrame(rows)
    df.insert(0, "rank", range(1, len(df) + 1))
    st.markdown(f"Nearest neighbours of **{label!r}** (id {token_id}) by cosine similarity, "
                f"searched over all {config.vocab_size:,} rows on both sides:")
    st.dataframe(df, hide_index=True, width="stretch", column_config={
        k: st.column_config.NumberColumn(format="%.4f") for k in df if k.endswith("cosine")})
    csv_download(df, f"neighbours-trained-vs-fresh-{picked.name}-{token_id}.csv")
