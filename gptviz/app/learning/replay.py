"""Training replay: a slider over the steps a checkpoint remembers redraws the attention
grid, the embeddings on fixed PCA axes, the loss curve's marker and a greedy sample.

The steps come from ``gptviz.analysis.replay`` (step 0, the snapshots, the checkpoint's own step).
Each step's four figures are built once per (model, step, window) and shared
(``cached_figure``): building them in plotly's Python took ~160 ms a move, sending them
~10 ms. The greedy sample is cached as ids.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
import streamlit as st
import torch

from gptviz.analysis import replay
from gptviz.analysis.learning import Window
from gptviz.app.attention.figures import attention_grid
from gptviz.app.embeddings.figures import WEBGL_ABOVE, place_labels
from gptviz.app.shared.cache import per_model, vocab_labels
from gptviz.app.shared.figure_cache import cached_figure
from gptviz.app.shared.picker import Picked
from gptviz.app.shared.ticks import thin_ticks
from gptviz.app.shared.widgets import plot, text_block
from gptviz.checkpoints.folder import Checkpoint
from gptviz.generation.sampling import generate
from gptviz.model.names import act_name
from gptviz.tokenizers.readable import readable_decode

SAMPLE_TOKENS = 30  # greedy tokens written at each step
SAMPLE_PROMPT = 16  # the window's first tokens the sample starts from, when it repeats
# nothing long enough to show copying (``replay.copy_prompt_length``)
PAD = 0.05  # share of each axis's span added around the points of every step
# Margins (px) that hold the axes' tick labels and titles and the loss curve's legend (the
# attention grid sets its own). Streamlit's theme turns plotly's automargin on: a margin
# short of what they need is widened after the chart is drawn, and the chart drawn again,
# at every move.
MARGIN = dict(l=76, r=10, t=40, b=68)
EMBED_H = 420  # the embeddings chart's height (px)
LEGEND_R = 116


@per_model
def _paths(ckpt: Checkpoint) -> tuple[np.ndarray, tuple[int, ...], np.ndarray]:
    """Explained-variance ratios (2,), the steps, and E's ordinary rows at each step on the
    final basis (S, rows, 2)."""
    ratio, paths = replay.embedding_paths(ckpt)
    steps = tuple(paths)
    return ratio.astype(np.float32), steps, np.stack([paths[s] for s in steps])


@per_model
def _rows(ckpt: Checkpoint) -> np.ndarray:
    return replay.ordinary_rows(ckpt)


@per_model
def _sample(ckpt: Checkpoint, step: int, ids: tuple[int, ...]) -> tuple[int, bool, np.ndarray]:
    """At ``step``: the prompt's length p, whether ids[:p] ends on the first token of a
    repeat (``replay.copy_prompt_length``; else p is SAMPLE_PROMPT), and the greedy sample's
    ids after the prompt."""
    p = replay.copy_prompt_length(ids)
    repeat, p = p is not None, p or min(SAMPLE_PROMPT, len(ids))
    with torch.no_grad():
        sample = generate(replay.model_at(ckpt, step), list(ids[:p]), SAMPLE_TOKENS,
                          temperature=0.0)[p:]
    return p, repeat, np.asarray(sample, dtype=np.int64)


def _patterns(ckpt: Checkpoint, step: int, ids: Sequence[int]) -> np.ndarray:
    """Every head's pattern on ``ids`` at ``step`` (L, H, T, T)."""
    names = [act_name("pattern", ly) for ly in range(ckpt.config.n_layer)]
    with torch.no_grad():
        _, cache = replay.model_at(ckpt, step).run_with_cache(list(ids), names_filter=names)
    return torch.stack([cache[n][0] for n in names]).float().numpy()


def loss_figure(evals: Sequence[dict], step: int) -> go.Figure:
    """Train and validation loss against step, with a vertical marker at ``step``.

    >>> loss_figure([{"step": 0, "val_loss": 2.0}], 0).layout.shapes[0].x0
    0
    """
    fig = go.Figure()
    for key, name in (("train_loss", "train"), ("val_loss", "validation")):
        pts = [(e["step"], e[key]) for e in evals if e.get(key) is not None]
        if pts:
            fig.add_trace(go.Scatter(x=[p[0] for p in pts], y=[p[1] for p in pts],
                                     mode="lines+markers", name=name))
    fig.update_layout(title=f"Loss over training (marker: step {step:,})", height=300,
                      xaxis_title="step", yaxis_title="cross-entropy loss (nats)",
                      margin=MARGIN | dict(r=LEGEND_R), shapes=[marker(step)])
    return fig


def induction_figure(evals: Sequence[dict], step: int) -> go.Figure:
    """The card's induction score against step, with the same marker."""
    pts = [(e["step"], e["induction_score"]) for e in evals
           if e.get("induction_score") is not None]
    fig = go.Figure(go.Scatter(x=[p[0] for p in pts], y=[p[1] for p in pts],
                               mode="lines+markers", name="induction score",
                               line_color="#2ca02c"))
    # the score's whole scale, 0 to 1: scaled to the data, noise of 0.01 looked like the
    # phase change
    top = max([1.0, *(p[1] for p in pts)])
    fig.update_layout(title="Induction score over training", height=300, xaxis_title="step",
                      yaxis=dict(title="score", range=[0, top * 1.02]), margin=MARGIN,
                      shapes=[marker(step)])
    return fig


def marker(step: int) -> dict:
    """A dashed vertical line at ``step`` over the whole plot (one shape in the layout:
    ``add_vline`` costs ~10 ms a figure in plotly's Python)."""
    return dict(type="line", xref="x", yref="paper", x0=step, x1=step, y0=0, y1=1,
                line=dict(dash="dash", color="#d62728"))


def embedding_figure(coords: np.ndarray, labels: Sequence[str], shown: Sequence[int],
                     ranges: tuple[tuple[float, float], tuple[float, float]],
                     ratio: np.ndarray, step: int) -> go.Figure:
    """Every row of E as a grey point (trace 0), the ``shown`` ids labelled (trace 1), on
    fixed axis ``ranges``."""
    cls = go.Scattergl if len(coords) > WEBGL_ABOVE else go.Scatter  # WebGL: big |V| only
    fig = go.Figure(cls(
        x=coords[:, 0], y=coords[:, 1], mode="markers", name="all tokens",
        marker=dict(size=4, color="#bbbbbb"), text=list(labels),
        hovertemplate="%{text}<extra></extra>"))
    ids = list(shown)
    texts = [labels[i] for i in ids]
    # labelled only where a label meets no other and no point (at step 0 the rows of E sit
    # in one small cloud); hover names every one
    where = place_labels(coords[ids], texts, *ranges, height=EMBED_H - MARGIN["t"] - MARGIN["b"])
    fig.add_trace(go.Scatter(
        x=coords[ids, 0], y=coords[ids, 1], mode="markers+text", name="the window's tokens",
        marker=dict(size=8, color="#d62728"), text=[t if w else "" for t, w in zip(
            texts, where, strict=True)], customdata=texts,
        textposition=[w or "top center" for w in where],
        hovertemplate="%{customdata}<extra></extra>"))
    shown_n = sum(w is not None for w in where)
    fig.update_layout(title=f"Embeddings E at step {step} on the final model's PCA axes"
                      + (f" ({shown_n} of {len(ids)} tokens labelled)" if shown_n < len(ids)
                         else ""),
                      height=EMBED_H, margin=MARGIN, showlegend=False,
                      xaxis=dict(range=list(ranges[0]), title=f"PC 1 ({ratio[0]:.0%} of the "
                                 "final variance)"),
                      yaxis=dict(range=list(ranges[1]), title=f"PC 2 ({ratio[1]:.0%})"))
    return fig


def fixed_ranges(paths: np.ndarray) -> tuple[tuple[float, float], tuple[float, float]]:
    """One range per axis that holds every step's points (S, |V|, 2), padded by PAD."""
    lo, hi = paths.min(axis=(0, 1)), paths.max(axis=(0, 1))
    pad = (hi - lo) * PAD + 1e-6
    return ((float(lo[0] - pad[0]), float(hi[0] + pad[0])),
            (float(lo[1] - pad[1]), float(hi[1] + pad[1])))


def replay_view(picked: Picked, window: Window) -> None:
    """The Training replay tab."""
    ckpt = picked.checkpoint
    evals = [e for e in ckpt.card.get("evals") or [] if isinstance(e, dict) and "step" in e]
    final = replay.final_step(ckpt.card)
    steps = replay.replay_steps(ckpt)
    if len(steps) == 1:
        st.info("Nothing to replay: this model's card records no training steps and it has no "
                "snapshots (a model trained elsewhere, such as GPT-2 from Hugging Face, comes "
                "with its final weights only). The other pages show the model as it is. To "
                "replay a run, train a model on the **Training** page: runs trained there "
                "keep snapshots.", icon=":material/history:")
        return
    if not ckpt.snapshots:
        st.info("This checkpoint has no snapshots of its training, so only its start (step 0, "
                f"the seed's initialisation) and its end (step {final:,}) can be compared. "
                "To replay a run, train a model on the **Training** page: runs trained there "
                "keep snapshots.", icon=":material/history:")
    _steps_view(picked, window, steps, evals, final)


@st.fragment
def _steps_view(picked: Picked, window: Window, steps: Sequence[int], evals: Sequence[dict],
                final: int) -> None:
    """The step slider and everything drawn at its step. A fragment: moving the slider
    reruns this part only, not the page above it; each step's figures are built once."""
    step = st.select_slider("Training step", steps, value=steps[-1], key="replay_step",
                            bind="query-params", format_func=lambda s: f"{s:,}")
    where = ("the seed's initialisation, before any step" if step == 0 and final != 0 else
             "the checkpoint's own weights" if step == final else
             "a snapshot kept during training (float16)")
    st.markdown(f"**Step {step:,}**: {where}.")
    loss, score, pca, grid = cached_figure(picked, "replay-step", (step, window.x),
                                           lambda: _step_figures(picked, window, step, evals))
    left, right = st.columns(2)
    if loss is not None:
        plot(loss, key="replay_loss", container=left)
    else:
        left.info("The card records no losses during training.", icon=":material/show_chart:")
    if score is not None:
        plot(score, key="replay_induction", container=right)
        right.caption("The mean attention a repeated token pays to the token after its "
                      "first copy, as the trainer measured it. A sharp rise is the phase "
                      "change in which an induction head forms; the loss often bends there.")
    else:
        right.info("The card has no induction score over training (only runs on the "
                   "induction task record one).", icon=":material/info:")
    plot(pca, key="replay_pca")
    st.caption(
        "Each point is a row of E (one token). The two axes are fitted once, on the final "
        "model's E, and every step's E is projected on them with the same centring and "
        "fixed ranges: a point that moves between steps moved in the model. Red points are "
        "the tokens of the window. At step 0 E is random, so the points sit in a cloud. The "
        "special tokens (BOS, EOS, UNK, PAD) are left out: training never feeds them, so "
        "their rows only drift, together, far from the rest.")
    st.markdown("**Every head's attention on the window** (layers down, heads across; "
                "rows are queries, columns the keys they read)")
    plot(grid, key="replay_grid")
    _sample_view(picked, window, step)


def _step_figures(picked: Picked, window: Window, step: int, evals: Sequence[dict]
                  ) -> tuple[go.Figure | None, go.Figure | None, go.Figure, go.Figure]:
    """The loss and induction curves with their marker at ``step`` (None when the card has
    no such curve), E on the final PCA axes and the attention grid at ``step``."""
    ckpt, labels = picked.checkpoint, vocab_labels(picked)
    ratio, steps, paths = _paths(picked)
    rows = _rows(picked)
    row_of = {int(i): r for r, i in enumerate(rows)}  # row r of the paths is token rows[r]
    shown = sorted({row_of[i] for i in window.x if i in row_of})
    pca = embedding_figure(paths[steps.index(step)], [labels[i] for i in rows], shown,
                           fixed_ranges(paths), ratio, step)
    grid = attention_grid(_patterns(ckpt, step, window.x), [labels[i] for i in window.x],
                          cell_px=90)  # its margins already hold its colour bar and titles
    scored = any(e.get("induction_score") is not None for e in evals)
    return (thin_ticks(loss_figure(evals, step)) if evals else None,
            thin_ticks(induction_figure(evals, step)) if scored else None,
            thin_ticks(pca), thin_ticks(grid))


def _sample_view(picked: Picked, window: Window, step: int) -> None:
    tok = picked.checkpoint.tokenizer
    p, repeat, sample = _sample(picked, step, tuple(window.x))
    st.markdown(f"**Greedy sample** ({SAMPLE_TOKENS} tokens at temperature 0, after the "
                f"window's first {p} tokens" + (", up to the first token of a stretch the "
                "window repeats)" if repeat else ")"))
    text_block(readable_decode(tok, list(window.x[:p])) + " ⟶ "
               + readable_decode(tok, sample.tolist()))
    st.caption("The arrow separates the prompt from what the model wrote."
               + (" The window goes on to repeat an earlier stretch: a model that has learned "
                  "to copy (an induction head) writes the rest of it." if repeat else "")
               + " Bytes that are no whole character are shown as ‹e2 80›.")
