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
from gptviz.app.shared.widgets import SHOWN_DIMS, csv_download, dataframe, plain_table, plot
from gptviz.app.speedups import fold
from gptviz.i18n import N_, _, number


def grouped(n: int) -> str:
    """A count with its thousands grouped, as the reader's language writes it."""
    return number(n, 0, grouping=True)


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
    st.caption(_("Multiplying the one-hot matrix OH ({n} × {v}) by E ({v} × {d}) picks rows "
                 "of E: no arithmetic happens, which is why frameworks implement it as a table "
                 "lookup.").format(n=len(ids), v=grouped(E.shape[0]), d=E.shape[1]))
    fold.below("embeddings", _("Next: E[ids] as numbers, with its CSV, and how this model "
                               "uses E to score its output (drawn as you scroll here)."),
               lambda: rows_table(picked, ids, labels, rows, pos))


def rows_table(picked: Picked, ids: list[int], labels: list[str], rows: np.ndarray,
               pos: int) -> None:
    """The rows of E the prompt picks (``rows``: (T, d)) as numbers, and the tying note."""
    df = pd.DataFrame(rows, columns=[f"d{k}" for k in range(rows.shape[1])])
    df.insert(0, N_("token"), labels)
    df.insert(0, N_("id"), ids)
    plain_table(df.iloc[:, : 2 + SHOWN_DIMS], height=220)
    st.caption(_("The first {shown} of {d} dimensions; the CSV has them all.").format(
        shown=SHOWN_DIMS, d=rows.shape[1]))
    csv_download(df, f"embeddings-{picked.name}.csv", _("Download E[ids] as CSV"))
    tied_note(picked, ids[pos], labels[pos])


def tied_note(picked: Picked, token_id: int, label: str) -> None:
    """What tying E and W_U means for this model (or what not tying means)."""
    c = picked.checkpoint.config
    if c.tie_embeddings:
        st.info(_("**Tied embeddings.** This model uses E twice: to read tokens in, and "
                  "transposed as the unembedding $W_U = E^\\top$ to score them out. The logit "
                  "of token $v$ is $\\mathrm{{LN}}(x_N) \\cdot E_v$, so a token is predicted "
                  "when the final stream points the way its own embedding row does. Tying "
                  "saves |V| × d = {n} parameters.").format(
            n=grouped(c.vocab_size * c.d_model)), icon=":material/link:")
        st.latex(r"y = \mathrm{LN}_{\text{" + tx.tex_escape(_("final")) + r"}}(x_N)\, W_U,"
                 r"\qquad W_U = E^\top \in "
                 rf"\mathbb{{R}}^{{{c.d_model} \times {c.vocab_size}}}")
        return
    model = picked.checkpoint.model
    e, u = model.embed.weight[token_id], model.unembed.weight[token_id]  # (d,), (d,)
    cos = float(e @ u / (e.norm() * u.norm()).clamp_min(1e-12))
    st.info(_("**Untied embeddings.** This model learned a separate unembedding W_U ({d} × "
              "{v}); reading a token in and scoring it out use different vectors. For "
              "{token}: cos(E_v, W_U[:, v]) = {cos}.").format(
        d=c.d_model, v=grouped(c.vocab_size), token=repr(label), cos=number(cos, 3)),
        icon=":material/link_off:")


def vocabulary(picked: Picked, prompt: Prompt, pos: int) -> None:
    """PCA of the whole vocabulary with the input tokens highlighted, and nearest neighbours."""
    k = st.segmented_control(_("Projection"), [2, 3], default=2, required=True, key="pca_dims",
                             bind="query-params", format_func=lambda n: f"{n}-D")
    coords, ratio = vocab_pca(picked, k)  # (|V|, k), (k,)
    labels = vocab_labels(picked)
    left_out = int(np.isnan(coords[:, 0]).sum())  # the special tokens training never feeds
    title = (_("{fitted} of the {n} rows of E, PCA").format(
        fitted=grouped(len(labels) - left_out), n=grouped(len(labels))) if left_out
        else _("All rows of E, PCA"))
    if sampled_note(len(labels)):
        title += " " + _("({n} drawn)").format(n=grouped(ve.MAX_POINTS))
    plot(cached_figure(picked, "vocabulary-pca", (k, prompt.ids), lambda: legend_on_top(
        ve.pca_scatter(coords, labels, prompt.ids, ratio, title=title))))  # 50,257 labels
    caption = _("The top {k} principal axes keep {share} % of the variance of E's {rows} rows "
                "in {d} dimensions: the picture is a shadow, and neighbours in it may be far "
                "apart in the full space. The cosine neighbours below are measured in all "
                "dimensions.").format(k=k, share=number(100 * float(ratio.sum()), 1),
                                      rows=grouped(coords.shape[0] - left_out),
                                      d=picked.checkpoint.config.d_model)
    if left_out:
        caption += " " + _("The {n} special tokens (BOS, EOS, UNK, PAD) are left out: "
                           "training never feeds them, so their rows only drift, together, "
                           "far from the rest.").format(n=left_out)
    st.caption(caption + sampled_note(coords.shape[0]))
    neighbours(picked, prompt, pos, labels)


def sampled_note(n: int) -> str:
    """What a scatter of ``n`` rows leaves out ("" when it draws them all)."""
    if n <= ve.MAX_POINTS:
        return ""
    return " " + _("The scatter draws a fixed random sample of {shown} of the {n} rows (the "
                   "same on every run) plus the input tokens; the principal axes are computed "
                   "from all of them.").format(shown=grouped(ve.MAX_POINTS), n=grouped(n))


def neighbours(picked: Picked, prompt: Prompt, pos: int, labels: list[str]) -> None:
    E = embedding_matrix(picked)
    token_id, label = prompt.ids[pos], prompt.labels[pos]
    n = st.slider(_("Neighbours"), 3, 20, 8, key="n_neighbours", bind="query-params")
    ids, sims = analysis.nearest_neighbours(E, token_id, n)  # (n,), (n,)
    st.latex(r"\cos(E_a, E_b) = \frac{E_a \cdot E_b}{\lVert E_a\rVert\, \lVert E_b\rVert}"
             rf",\qquad \max_{{b \ne a}} \cos\big(E_{{{tx.tex_text(label, 12)}}}, E_b\big) = "
             rf"{tx.num(sims[0])}\ \text{{{tx.tex_escape(_('for'))} }} "
             rf"{tx.tex_text(labels[ids[0]], 12)}")
    left, right = st.columns(2)
    plot(ve.neighbour_bars([labels[i] for i in ids], sims, label), container=left)
    df = pd.DataFrame({N_("rank"): range(1, len(ids) + 1), N_("id"): ids,
                       N_("token"): [labels[i] for i in ids], N_("cosine"): sims})
    dataframe(df, right, hide_index=True, width="stretch")
    with right:
        csv_download(df, f"neighbours-{picked.name}-{token_id}.csv")


VIEWS = {N_("One-hot × E"): lookup, N_("The vocabulary (PCA)"): vocabulary,
         N_("Trained vs untrained"): trained_vs_fresh}
