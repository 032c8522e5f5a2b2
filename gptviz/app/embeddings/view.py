"""The sections of the Embeddings page; each takes plain values and draws."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from gptviz.analysis import core as analysis
from gptviz.app.embeddings import figures as ve
from gptviz.app.embeddings import formulas as emb_tex
from gptviz.app.embeddings.fresh import trained_vs_fresh
from gptviz.app.shared import tex as tx
from gptviz.app.shared.cache import vocab_labels, vocab_pca
from gptviz.app.shared.figure_cache import cached_figure
from gptviz.app.shared.heatmaps import legend_on_top, title_room
from gptviz.app.shared.inputs import Prompt
from gptviz.app.shared.picker import Picked
from gptviz.app.shared.ticks import thin_ticks
from gptviz.app.shared.widgets import SHOWN_DIMS, csv_download, plain_table, plot
from gptviz.app.speedups import fold


def embedding_matrix(picked: Picked) -> np.ndarray:
    return analysis.to_numpy(picked.checkpoint.model.embed.weight)  # (|V|, d)


def lookup(picked: Picked, prompt: Prompt, pos: int) -> None:
    """One-hot × E for the input tokens, with the real numbers."""
    E = embedding_matrix(picked)  # (|V|, d)
    ids, labels = list(prompt.ids), prompt.labels
    one_hot, rows = analysis.one_hot_embed(ids, E)  # (T, |V|), (T, d)
    st.latex(emb_tex.embedding_of_one_hot(E.shape[0]))
    st.latex(emb_tex.embedding_lookup(labels[pos], ids[pos], E.shape[0], rows[pos]))
    left, right = st.columns([2, 3])
    figs = cached_figure(picked, "lookup", prompt.ids, lambda: [
        thin_ticks(title_room(ve.one_hot_figure(one_hot, labels, ids))),
        thin_ticks(title_room(ve.embedding_rows(rows, labels)))])
    plot(figs[0], container=left)
    plot(figs[1], container=right)
    st.caption(f"Multiplying the one-hot matrix OH ({len(ids)} × {E.shape[0]:,}) by E "
               f"({E.shape[0]:,} × {E.shape[1]}) picks rows of E: no arithmetic happens, "
               "which is why frameworks implement it as a table lookup.")
    fold.below("embeddings", "Next: E[ids] as numbers, with its CSV, and how this model uses "
               "E to score its output (drawn as you scroll here).",
               lambda: rows_table(picked, ids, labels, rows, pos))


def rows_table(picked: Picked, ids: list[int], labels: list[str], rows: np.ndarray,
               pos: int) -> None:
    """The rows of E the prompt picks (``rows``: (T, d)) as numbers, and the tying note."""
    df = pd.DataFrame(rows, columns=[f"d{k}" for k in range(rows.shape[1])])
    df.insert(0, "token", labels)
    df.insert(0, "id", ids)
    plain_table(df.iloc[:, : 2 + SHOWN_DIMS], height=220)
    st.caption(f"The first {SHOWN_DIMS} of {rows.shape[1]} dimensions; the CSV has them all.")
    csv_download(df, f"embeddings-{picked.name}.csv", "Download E[ids] as CSV")
    tied_note(picked, ids[pos], labels[pos])


def tied_note(picked: Picked, token_id: int, label: str) -> None:
    """What tying E and W_U means for this model (or what not tying means)."""
    c = picked.checkpoint.config
    if c.tie_embeddings:
        st.info(f"**Tied embeddings.** This model uses E twice: to read tokens in, and "
                f"transposed as the unembedding $W_U = E^\\top$ to score them out. The logit "
                f"of token $v$ is $\\mathrm{{LN}}(x_N) \\cdot E_v$, so a token is predicted when "
                f"the final stream "
                f"points the way its own embedding row does. Tying saves |V| × d = "
                f"{c.vocab_size * c.d_model:,} parameters.", icon=":material/link:")
        st.latex(r"y = \mathrm{LN}_{\text{final}}(x_N)\, W_U,\qquad W_U = E^\top \in "
                 rf"\mathbb{{R}}^{{{c.d_model} \times {c.vocab_size}}}")
        return
    model = picked.checkpoint.model
    e, u = model.embed.weight[token_id], model.unembed.weight[token_id]  # (d,), (d,)
    cos = float(e @ u / (e.norm() * u.norm()).clamp_min(1e-12))
    st.info(f"**Untied embeddings.** This model learned a separate unembedding W_U "
            f"({c.d_model} × {c.vocab_size:,}); reading a token in and scoring it out use "
            f"different vectors. For {label!r}: cos(E_v, W_U[:, v]) = {cos:.3f}.",
            icon=":material/link_off:")


def vocabulary(picked: Picked, prompt: Prompt, pos: int) -> None:
    """PCA of the whole vocabulary with the input tokens highlighted, and nearest neighbours."""
    k = st.segmented_control("Projection", [2, 3], default=2, required=True, key="pca_dims",
                             bind="query-params", format_func=lambda n: f"{n}-D")
    coords, ratio = vocab_pca(picked, k)  # (|V|, k), (k,)
    labels = vocab_labels(picked)
    left_out = int(np.isnan(coords[:, 0]).sum())  # the special tokens training never feeds
    fitted = "all" if not left_out else f"{len(labels) - left_out:,} of the {len(labels):,}"
    plot(cached_figure(picked, "vocabulary-pca", (k, prompt.ids), lambda: legend_on_top(
        ve.pca_scatter(coords, labels, prompt.ids, ratio, title=f"{fitted} rows of E, PCA"
                       + (f" ({ve.MAX_POINTS:,} drawn)" if sampled_note(len(labels))
                          else "")))))  # 50,257 labels sampled: once per prompt
    st.caption(f"The top {k} principal axes keep {100 * float(ratio.sum()):.1f} % of the "
               f"variance of E's {coords.shape[0] - left_out:,} rows in "
               f"{picked.checkpoint.config.d_model} dimensions: the picture is a shadow, and "
               "neighbours in it may be far apart in the full space. The cosine neighbours "
               "below are measured in all dimensions." + sampled_note(coords.shape[0])
               + (f" The {left_out} special tokens (BOS, EOS, UNK, PAD) are left out: "
                  "training never feeds them, so their rows only drift, together, far from "
                  "the rest." if left_out else ""))
    neighbours(picked, prompt, pos, labels)


def sampled_note(n: int) -> str:
    """What a scatter of ``n`` rows leaves out ("" when it draws them all)."""
    if n <= ve.MAX_POINTS:
        return ""
    return (f" The scatter draws a fixed random sample of {ve.MAX_POINTS:,} of the {n:,} rows "
            "(the same on every run) plus the input tokens; the principal axes are computed "
            "from all of them.")


def neighbours(picked: Picked, prompt: Prompt, pos: int, labels: list[str]) -> None:
    E = embedding_matrix(picked)
    token_id, label = prompt.ids[pos], prompt.labels[pos]
    n = st.slider("Neighbours", 3, 20, 8, key="n_neighbours", bind="query-params")
    ids, sims = analysis.nearest_neighbours(E, token_id, n)  # (n,), (n,)
    st.latex(r"\cos(E_a, E_b) = \frac{E_a \cdot E_b}{\lVert E_a\rVert\, \lVert E_b\rVert}"
             rf",\qquad \max_{{b \ne a}} \cos\big(E_{{{tx.tex_text(label, 12)}}}, E_b\big) = "
             rf"{tx.num(sims[0])}\ \text{{for }} {tx.tex_text(labels[ids[0]], 12)}")
    left, right = st.columns(2)
    plot(ve.neighbour_bars([labels[i] for i in ids], sims, label), container=left)
    df = pd.DataFrame({"rank": range(1, len(ids) + 1), "id": ids,
                       "token": [labels[i] for i in ids], "cosine": sims})
    right.dataframe(df, hide_index=True, width="stretch")
    with right:
        csv_download(df, f"neighbours-{picked.name}-{token_id}.csv")


VIEWS = {"One-hot × E": lookup, "The vocabulary (PCA)": vocabulary,
         "Trained vs untrained": trained_vs_fresh}
