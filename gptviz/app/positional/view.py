"""The sections of the Positional encoding page; each takes plain values and draws."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import streamlit as st

from gptviz.analysis import core as analysis
from gptviz.analysis import positions
from gptviz.app.positional import figures as vp
from gptviz.app.positional import formulas as pos_tex
from gptviz.app.positional.compare import compare_view
from gptviz.app.positional.order import order_view
from gptviz.app.positional.rope import rope_positions, rope_sum
from gptviz.app.shared.cache import activations
from gptviz.app.shared.clipping import clip_note
from gptviz.app.shared.figure_cache import cached_figure
from gptviz.app.shared.heatmaps import title_room
from gptviz.app.shared.inputs import Prompt, encode, position_input, prompt_input
from gptviz.app.shared.picker import Picked
from gptviz.app.shared.widgets import SHOWN_DIMS, chart, csv_download, on_demand, plot
from gptviz.app.speedups import fold
from gptviz.model.names import act_name, embedding_names


def default_dims(d: int) -> list[int]:
    """A few dimensions from fast to slow, e.g. d=64 -> [0, 1, 8, 32, 62].

    >>> default_dims(64)
    [0, 1, 8, 32, 62]
    """
    return sorted({0, 1, min(8, d - 1), d // 2, max(d - 2, 0)})


def three_views(picked: Picked, P: np.ndarray, key: str, name: str,
                formula: str | None = None, then: Callable[[], None] | None = None,
                then_what: str = "") -> None:
    """The table as a heatmap and P Pᵀ; below the fold chosen dimensions as curves, the
    table itself on demand, and ``then()`` (``then_what`` says what it draws)."""
    n, d = P.shape
    left, right = st.columns(2)
    heat = cached_figure(picked, f"pe-heat-{key}", (), lambda: title_room(
        vp.pe_heatmap(P, title=f"{name}: {n} positions × {d} dims", what=name)))
    sim = cached_figure(picked, f"pe-sim-{key}", (), lambda: title_room(
        vp.pe_similarity_heatmap(analysis.pe_similarity(P),
                                 title=f"{name}: similarity P Pᵀ")))
    for fig, container, kind in ((heat, left, "heat"), (sim, right, "sim")):
        plot(fig, key=f"{kind}-{key}", container=container)
        if note := clip_note(fig):
            container.caption(note)

    def rest() -> None:
        dims = st.multiselect("Dimensions to plot as curves", list(range(d)),
                              default=default_dims(d), key=f"dims-{key}", max_selections=8)
        if dims:
            curves(P, dims, key, name)
        if formula:
            st.caption(formula)
        table(P, key, name)
        if then:
            then()
    more = f", the table itself{then_what}" if then_what else " and the table itself"
    fold.below("positional", f"Next: chosen dimensions of {name} as curves{more} (drawn as "
               "you scroll here).", rest)


def curves(P: np.ndarray, dims: list[int], key: str, name: str) -> None:
    """The chosen columns as curves, over as many positions as keep the fastest readable
    (``vp.readable_positions``); a slider draws more, up to N."""
    n = P.shape[0]
    readable = vp.readable_positions(P, dims)
    shown = n
    if readable < n:
        shown = st.slider("Positions drawn: 0 … i", min(16, n), n, readable,
                          key=f"span-{key}-{'.'.join(map(str, sorted(dims)))}",
                          help="Over all positions a fast dimension turns so often that its "
                               "curve fills the chart; slide right to draw more of them.")
    chart(vp.pe_curves(P[:shown], dims, title=f"{name}: chosen dimensions along i"
                       + (f" (positions 0 … {shown - 1} of {n:,})" if shown < n else "")))
    if readable < n:
        st.caption(f"Drawn over positions 0 … {readable - 1} at first: the most for which "
                   f"each curve crosses its mean at most {vp.PLOT_PX // vp.PX_PER_CROSSING} "
                   f"times, once every {vp.PX_PER_CROSSING} px of the chart. Over all "
                   f"{n:,} positions the fastest would be a solid band.")


def table(P: np.ndarray, key: str, name: str) -> None:
    """The positions' table, drawn when its expander is opened, with its CSV."""
    n, d = P.shape
    df = pd.DataFrame(P, columns=[f"d{k}" for k in range(d)])
    df.insert(0, "position", range(n))
    with on_demand(f"{name} as a table", key=f"table-{key}") as shown:
        if shown:
            st.dataframe(df.iloc[:, : 1 + SHOWN_DIMS], hide_index=True, width="stretch",
                         height=240)
            # Written when clicked: GPT-2's 1,024 × 768 table took 2 s to write at every rerun.
            st.download_button(f"Download {name} as CSV",
                               lambda: df.to_csv(index=False).encode("utf-8"),
                               file_name=f"positions-{key}.csv", mime="text/csv",
                               icon=":material/download:", key=f"csv-positions-{key}.csv")


def sinusoidal(picked: Picked) -> None:
    """The seeds' formula on the model's own (N, d), with one point evaluated by hand."""
    c = picked.checkpoint.config
    n, d = c.context_length, c.d_model
    st.latex(r"p_{i,2j} = \sin\!\Big(\frac{i}{10000^{2j/d}}\Big),\qquad "
             r"p_{i,2j+1} = \cos\!\Big(\frac{i}{10000^{2j/d}}\Big),\qquad "
             rf"0 \le i < N = {n},\ 0 \le 2j < d = {d}")
    P = analysis.sinusoidal_pe(n, d)  # (N, d)
    left, right = st.columns(2)
    i = int(left.number_input("Position i", 0, n - 1, min(3, n - 1), key="pe_i",
                              bind="query-params"))
    dim = int(right.number_input("Dimension (2j or 2j+1)", 0, d - 1, min(4, d - 1),
                                 key="pe_dim", bind="query-params"))
    st.latex(pos_tex.sinusoid_point(i, dim, d, float(P[i, dim])))
    three_views(picked, P, "sinusoidal", "sinusoidal PE",
                "Each pair of columns is a clock turning at its own speed: dimension 0 turns "
                "once every 2π ≈ 6.3 positions, the last ones barely move.",
                then=lambda: shift_identity(n, d, i),
                then_what=", and why the similarity depends only on i − j")


@st.cache_data(max_entries=4, show_spinner=False)
def _shift_check(n: int, d: int) -> positions.ShiftCheck:
    return positions.sinusoidal_shift_check(n, d)


def shift_identity(n: int, d: int, i: int) -> None:
    """PE_i · PE_j = Σ_k cos(ω_k (i − j)), on the chosen pair and on the whole matrix."""
    st.markdown("#### The similarity depends only on i − j")
    st.caption("Here i and j are two positions (two rows of PE), as on the axes of the "
               "similarity matrix; k counts the (sin, cos) pairs of columns, the j of the "
               "formula at the top.")
    # asked here, not beside the dimension above, where j names a pair of columns
    j = int(st.number_input("Position j, the second row", 0, n - 1, min(10, n - 1),
                            key="pe_j", bind="query-params"))
    check = _shift_check(n, d)
    st.latex(pos_tex.shift_identity(i, j, d, check.similarity(i, j), check.formula(i, j),
                                    check.max_deviation))
    if d % 2:
        st.caption(f"d = {d} is odd, so the last column is a sine without its cosine. That "
                   "column adds the extra term, which is not a function of i − j: here the "
                   "similarity depends on i − j only up to it.")
        return
    st.caption("Row $i$ of PE is made of pairs $(\\sin \\omega_k i, \\cos \\omega_k i)$, and "
               "$\\sin a \\sin b + \\cos a \\cos b = \\cos(a - b)$: each pair contributes "
               "$\\cos(\\omega_k (i - j))$. So $PE_i \\cdot PE_j$ depends only on the offset "
               "$i - j$, exactly, not approximately; "
               "since cos is even, only on |i − j|. Every diagonal of the similarity matrix "
               "is therefore constant: along the diagonal where it varies most, its entries "
               f"differ by {check.diagonal_spread:.1e} (float64 rounding). A shift of the "
               "whole text changes no similarity between two of its positions.")


def learned(picked: Picked) -> None:
    """The positions this model adds: learned rows, its sinusoidal table, or nothing."""
    c = picked.checkpoint.config
    if c.rope:
        rope_positions(picked)
        return
    P = analysis.model_pe(picked.checkpoint.model)  # (N, d)
    if c.positional == "none":
        st.info("This model adds **no positional encoding** (PE = 0). It still knows order a "
                "little: the causal mask lets position i attend to i + 1 tokens, so a head "
                "can count how many came before.", icon=":material/info:")
        st.latex(rf"P = 0 \in \mathbb{{R}}^{{{c.context_length} \times {c.d_model}}},\qquad "
                 r"x_i = E[t_i] + 0 = E[t_i]")
        return
    if c.positional == "sinusoidal":
        delta = float(np.abs(P - analysis.sinusoidal_pe(c.context_length, c.d_model)).max())
        st.success(f"This model uses the **sinusoidal** table: it equals the formula "
                   f"(max |Δ| = {delta:.1e}) and is not trained.", icon=":material/check:")
    else:
        st.markdown("This model **learned** its positions: P is a trainable matrix "
                    f"$P\\in\\mathbb{{R}}^{{{c.context_length}\\times {c.d_model}}}$ "
                    "(row i is added to the token at position i), started random and shaped "
                    "only by the training loss. Compare its similarity matrix with the "
                    "sinusoidal one, whose band along the diagonal says that nearby positions "
                    "are alike: a learned table has such a band only if training needed one, "
                    "and a small model trained briefly often has little of it.")
    three_views(picked, P, "model", "this model's PE")


def sum_with_tokens(picked: Picked, prompt: Prompt, pos: int) -> None:
    """X = E[ids] + PE for the prompt: what the first block receives."""
    c = picked.checkpoint.config
    if c.rope:
        rope_sum(picked, prompt, pos)
        return
    if c.positional == "none":
        st.info("This model adds **no positional encoding**: PE = 0, so X = E[ids] and the "
                "middle panel is blank. A token enters the block as the same vector wherever "
                "it stands; only the causal mask tells positions apart (see *Order without "
                "positions*).", icon=":material/info:")
    cache, _ = activations(picked, prompt.ids, embedding_names())
    X = analysis.to_numpy(cache[act_name("embed")][0])  # (T, d)
    PE = analysis.to_numpy(cache[act_name("pos_embed")])  # (T, d)
    st.latex(pos_tex.x_plus_pe_formula(prompt.labels[pos], pos, X[pos], PE[pos], c.positional))
    chart(cached_figure(picked, "x-plus-pe", (prompt.ids,),
                        lambda: vp.x_plus_pe_figure(X, PE, prompt.labels)))  # 3 × T × d
    e_norm, p_norm = np.linalg.norm(X, axis=1).mean(), np.linalg.norm(PE, axis=1).mean()
    st.caption("The same token at two positions enters the block as two different vectors: "
               "the sum is the only place where position enters a GPT. The three panels share "
               f"one colour scale; on average $\\lVert E[t_i] \\rVert = {e_norm:.2f}$ and "
               f"$\\lVert p_i \\rVert = {p_norm:.2f}$"
               + (", so here the positions dominate the sum." if p_norm > 3 * e_norm else "."))
    norms = pd.DataFrame({"position": range(len(prompt.ids)), "token": prompt.labels,
                          "‖E[tᵢ]‖": np.linalg.norm(X, axis=1),
                          "‖pᵢ‖": np.linalg.norm(PE, axis=1),
                          "‖E[tᵢ] + pᵢ‖": np.linalg.norm(X + PE, axis=1)})
    st.dataframe(norms, hide_index=True, width="stretch", height=220, column_config={
        k: st.column_config.NumberColumn(format="%.4f") for k in norms if k.startswith("‖")})
    csv_download(norms, f"x-plus-pe-{picked.name}.csv")


def prompt_sum(picked: Picked) -> None:
    """X + PE for a prompt the user types (only this view asks for one)."""
    prompt = encode(picked.checkpoint, prompt_input(picked.checkpoint))
    if prompt is not None:
        sum_with_tokens(picked, prompt, position_input(prompt, "Token to follow in the formula"))


VIEWS = {"Sinusoidal formula": sinusoidal, "This model's positions": learned,
         "X + PE for the prompt": prompt_sum, "Order without positions": order_view,
         "Four encodings compared": compare_view}
