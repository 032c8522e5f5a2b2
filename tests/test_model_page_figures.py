"""The figures of the model pages (``figures.py`` of Embeddings, Positional encoding, Attention
and Transformer block, and ``gptviz/app/shared/heatmaps.py``) carry exactly the data they are
given."""

from __future__ import annotations

import json

import numpy as np
import plotly.graph_objects as go
import pytest
import torch

from gptviz.analysis import attention as M
from gptviz.analysis import core as A
from gptviz.app.attention import figures as VA
from gptviz.app.block import figures as VB
from gptviz.app.embeddings import figures as VE
from gptviz.app.positional import figures as VP
from gptviz.app.shared.heatmaps import MASKED, heatmap, matrix_panels
from gptviz.model.names import act_name
from tests.helpers import TINY_CONFIG as TINY
from tests.helpers import tiny_run

IDS = [3, 1, 4, 1, 5]
TOKENS = ["the", " cat", " sat", " cat", "\n"]  # a repeated token and a newline on purpose
SHOWN = ["the", "·cat", "·sat", "·cat", "↵"]  # the same, whitespace made visible


@pytest.fixture(scope="module")
def run():
    model, _, cache = tiny_run(IDS)
    return model, cache


def _ticks(axis) -> list[str]:
    return list(axis.ticktext)


def _renders(fig: go.Figure) -> None:
    """Every figure must serialise to strict JSON (no Infinity, which the browser rejects)."""
    json.loads(fig.to_json(), parse_constant=lambda c: pytest.fail(f"{c} in figure JSON"))


# ---- heatmaps ------------------------------------------------------------------------------

def test_heatmap_carries_the_pattern_and_the_tokens(run):
    _, cache = run
    pattern = M.head_tensors(cache, 0, 1)["pattern"]
    fig = VA.attention_pattern(pattern, TOKENS)
    np.testing.assert_array_equal(fig.data[0].z, pattern)
    assert fig.data[0].z.dtype == np.float32
    assert _ticks(fig.layout.xaxis) == SHOWN and _ticks(fig.layout.yaxis) == SHOWN
    assert list(fig.layout.xaxis.tickvals) == list(range(5))  # repeated " cat" kept twice
    assert fig.layout.yaxis.autorange == "reversed"
    assert (fig.data[0].zmin, fig.data[0].zmax) == (0.0, 1.0)
    assert fig.data[0].text is None  # nothing masked, nothing written in the cells
    assert fig.data[0].customdata[2, 1].endswith("→ ·cat (1)<br>" + f"{pattern[2, 1]:.3f}")
    _renders(fig)


def test_masked_cells_are_blank_with_hover_text(run):
    _, cache = run
    steps = M.head_tensors(cache, 1, 3)
    fig = VA.head_step_figures(steps, TOKENS)["masked scores"]
    z, upper = fig.data[0].z, np.triu(np.ones((5, 5), dtype=bool), k=1)
    assert np.isnan(z[upper]).all()
    np.testing.assert_array_equal(z[~upper], steps["scores"][~upper])
    hover = fig.data[0].customdata
    assert all(t.endswith(MASKED) for t in hover[upper])
    assert not any(t.endswith(MASKED) for t in hover[~upper])
    assert (fig.data[0].text[upper] == "−∞").all() and (fig.data[0].text[~upper] == "").all()
    _renders(fig)


def test_every_head_step_has_a_figure(run):
    _, cache = run
    steps = M.head_tensors(cache, 0, 2)
    figs = VA.head_step_figures(steps, TOKENS)
    assert set(figs) == set(steps)
    for name, fig in figs.items():
        np.testing.assert_array_equal(np.nan_to_num(fig.data[0].z, nan=-np.inf), steps[name])
        assert _ticks(fig.layout.yaxis) == SHOWN
    assert figs["Q"].data[0].z.shape == (5, 8) and figs["Q"].layout.xaxis.tickvals is None
    assert figs["scores"].data[0].zmid == 0.0  # signed values get a diverging scale


def test_heatmap_rejects_wrong_labels():
    with pytest.raises(ValueError, match="labels"):
        heatmap(np.zeros((2, 2)), ["a"], ["a", "b"])
    with pytest.raises(ValueError, match="2-D"):
        heatmap(np.zeros(3))


def test_matrix_panels_share_one_colour_axis():
    fig = matrix_panels({"A": -np.eye(2), "B": 2 * np.eye(2)}, ["a", "b"], ["a", "b"])
    assert [t.coloraxis for t in fig.data] == ["coloraxis", "coloraxis"]
    assert (fig.layout.coloraxis.cmin, fig.layout.coloraxis.cmax) == (-2.0, 2.0)


# ---- attention -----------------------------------------------------------------------------

def test_attention_grid_is_all_layers_by_heads(run):
    model, cache = run
    patterns = M.all_patterns(cache, model.config.n_layer)
    fig = VA.attention_grid(patterns, TOKENS, selected=(1, 2))
    assert len(fig.data) == 1  # one trace holds every head
    trace, t = fig.data[0], len(TOKENS)
    for layer in range(2):
        for head in range(4):
            tile = VA.grid_tile(trace.z, fig.layout.meta, layer, head)
            np.testing.assert_array_equal(tile, patterns[layer, head])
    g = fig.layout.meta["grid"]
    assert np.isnan(trace.z[t:t + g["row_gap"]]).all()  # the gap between the two layers
    assert np.isnan(trace.z[:, t:t + g["col_gap"]]).all()  # between heads 0 and 1
    assert [a.text for a in fig.layout.annotations][:2] == ["L0 H0", "L0 H1"]
    frame = fig.layout.shapes[-1]  # red, around layer 1, head 2
    assert frame.line.color == "#d62728"
    c0, r0 = 2 * (t + g["col_gap"]), t + g["row_gap"]
    assert (frame.x0, frame.x1, frame.y0, frame.y1) == (c0 - 0.5, c0 + t - 0.5, r0 - 0.5,
                                                        r0 + t - 0.5)  # on the tile's edge
    # hover: the row label names layer and query, the column label head and key
    assert trace.y[r0 + 1] == "L1, query ·cat (1)" and trace.x[c0] == "H2, key the (0)"
    assert len(set(trace.x)) == len(trace.x) == trace.z.shape[1]  # no column merged
    assert len(set(trace.y)) == len(trace.y) == trace.z.shape[0]
    _renders(fig)


def test_big_attention_grid_is_one_trace_with_labels_per_axis_not_per_cell():
    fig = VA.attention_grid(np.full((24, 2, 64, 64), 1 / 64, dtype=np.float32))
    assert len(fig.data) == 1 and fig.data[0].text is None
    assert len(fig.data[0].x) == fig.data[0].z.shape[1] < 2 * 64 + 64


def test_masking_comparison_panels():
    torch.manual_seed(0)
    scores, simple, _ = M.simplified_attention(torch.randn(5, 4))
    renorm, neg_inf = M.causal_by_renormalising(scores), M.causal_by_neg_inf(scores)
    delta = float((renorm - neg_inf).abs().max())
    fig = VA.masking_comparison(simple, renorm, neg_inf, TOKENS, delta)
    for trace, want in zip(fig.data, (simple, renorm, neg_inf), strict=True):
        np.testing.assert_array_equal(trace.z, want.numpy())
    assert "max |renormalised − (−∞)|" in fig.layout.title.text
    _renders(fig)


def test_ablation_bars_before_and_after(run):
    model, _ = run
    before, after = M.ablation_effect(model, IDS, {0: [0, 1]})
    top = M.top_changes(before, after, k=4)
    labels = [f"t{i}" for i in top]
    fig = VA.ablation_bars(labels, before[top], after[top])
    np.testing.assert_array_equal(fig.data[0].y, before[top])
    np.testing.assert_array_equal(fig.data[1].y, after[top])
    assert _ticks(fig.layout.xaxis) == labels
    assert not np.array_equal(fig.data[0].y, fig.data[1].y)


# ---- embeddings ----------------------------------------------------------------------------

def test_embedding_rows_and_one_hot(run):
    model, _ = run
    oh, x = A.one_hot_embed(IDS, model.embed.weight)
    fig = VE.embedding_rows(x, TOKENS)
    np.testing.assert_array_equal(fig.data[0].z, x)
    assert _ticks(fig.layout.yaxis) == SHOWN
    fig = VE.one_hot_figure(oh, TOKENS, IDS)
    assert _ticks(fig.layout.xaxis) == ["1", "3", "4", "5"]
    np.testing.assert_array_equal(fig.data[0].z, oh[:, [1, 3, 4, 5]])


@pytest.mark.parametrize("k", [2, 3])
def test_pca_scatter_highlights_the_input_tokens(run, k):
    model, _ = run
    coords, ratio = A.pca(model.embed.weight.detach(), k)
    vocab = [f"v{i}" for i in range(TINY["vocab_size"])]
    fig = VE.pca_scatter(coords, vocab, IDS, ratio)
    everything, chosen = fig.data
    np.testing.assert_array_equal(everything.x, coords[:, 0])
    np.testing.assert_array_equal(chosen.y, coords[[1, 3, 4, 5], 1])
    assert list(chosen.text) == ["v1", "v3", "v4", "v5"]
    assert isinstance(chosen, go.Scatter3d if k == 3 else go.Scatter)
    title = fig.layout.scene.xaxis.title.text if k == 3 else fig.layout.xaxis.title.text
    assert title.startswith("PC1 (")
    _renders(fig)


def test_neighbour_bars(run):
    model, _ = run
    ids, sims = A.nearest_neighbours(model.embed.weight, 4, k=3)
    fig = VE.neighbour_bars([f"v{i}" for i in ids], sims, "v4")
    np.testing.assert_array_equal(fig.data[0].x, sims)
    assert _ticks(fig.layout.yaxis) == [f"v{i}" for i in ids]


# ---- positions -----------------------------------------------------------------------------

def test_positional_figures():
    pe = A.sinusoidal_pe(16, 8)
    np.testing.assert_array_equal(VP.pe_heatmap(pe).data[0].z, pe)
    curves = VP.pe_curves(pe, [0, 1, 6])
    np.testing.assert_allclose(curves.series[2].y, pe[:, 6], rtol=1e-6)
    with pytest.raises(ValueError, match="out of range"):
        VP.pe_curves(pe, [8])
    sim = A.pe_similarity(pe)
    np.testing.assert_array_equal(VP.pe_similarity_heatmap(sim).data[0].z, sim)


def test_x_plus_pe(run):
    model, cache = run
    x, pe = cache[act_name("embed")][0].numpy(), cache[act_name("pos_embed")].numpy()
    fig = VP.x_plus_pe_figure(x, pe, TOKENS)
    np.testing.assert_allclose(fig.data[2].z, A.layernorm_input(cache, 0).numpy(), atol=1e-7)
    assert _ticks(fig.layout.yaxis) == SHOWN


# ---- the block -----------------------------------------------------------------------------

def test_layernorm_rows_figure(run):
    _, cache = run
    x = A.layernorm_input(cache, 1, "ln2")
    stats = A.layernorm_stats(x, cache[act_name("normalized", 1, "ln2")][0])
    fig = VB.layernorm_rows(stats, TOKENS)
    by_name = {(t.name, t.xaxis): t.y for t in fig.data}
    np.testing.assert_array_equal(by_name[("before", "x")], stats["mean before"])
    np.testing.assert_array_equal(by_name[("standardised", "x2")], stats["var standardised"])
    assert len(fig.data) == 6 and _ticks(fig.layout.xaxis) == SHOWN


def test_activation_and_residual_figures(run):
    model, cache = run
    curves = A.activation_curves()
    fig = VB.activation_curves_figure(curves)
    assert [t.name for t in fig.data] == ["GELU", "GELU (tanh)", "ReLU"]
    np.testing.assert_array_equal(fig.data[2].y, curves["ReLU"])
    stages, norms = A.residual_norms(cache, model.config.n_layer)
    fig = VB.residual_norms_figure(norms, stages, TOKENS)
    np.testing.assert_array_equal(fig.data[4].y, norms[:, 4])
    np.testing.assert_allclose(fig.data[-1].y, norms.mean(axis=1))
    assert list(fig.data[0].x) == stages


def test_logit_lens_figure(run):
    model, cache = run
    labels, ids, probs = A.logit_lens(model, cache, k=4)
    guesses = [[f"v{i}" for i in row] for row in ids]
    fig = VB.logit_lens_figure(labels, guesses, probs)
    np.testing.assert_array_equal(fig.data[0].z, probs)
    assert fig.data[0].text.tolist() == guesses
    assert _ticks(fig.layout.yaxis) == labels
    _renders(fig)


def test_parameter_bars():
    counts = A.seeds_124m_counts(tied=False)
    fig = VB.parameter_bars(counts)
    assert list(fig.data[0].y) == [k for k in counts if k != "total"]
    assert fig.data[0].x.tolist() == [v for k, v in counts.items() if k != "total"]
    assert "163,009,536" in fig.layout.title.text
