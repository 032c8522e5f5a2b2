"""The maths behind the model-internals pages (gptviz.analysis.core, gptviz.analysis.attention)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from gptviz.analysis import attention as M
from gptviz.analysis import core as A
from gptviz.model import GPT, GPTConfig
from gptviz.model.names import act_name
from tests.helpers import TINY_CONFIG as TINY
from tests.helpers import tiny_run

IDS = [3, 1, 4, 1, 5, 9, 2, 6]


@pytest.fixture(scope="module")
def run():
    return tiny_run(IDS)


# ---- attention -----------------------------------------------------------------------------

def test_captured_patterns_are_causal_distributions(run):
    model, _, cache = run
    patterns = M.all_patterns(cache, model.config.n_layer)  # (L, H, T, T)
    assert patterns.shape == (2, 4, len(IDS), len(IDS))
    np.testing.assert_allclose(patterns.sum(-1), 1.0, atol=1e-6)
    upper = np.triu(np.ones((len(IDS), len(IDS)), dtype=bool), k=1)
    assert (patterns[..., upper] == 0).all()


def test_head_tensors_shapes_and_mask(run):
    _, _, cache = run
    t, d_k = len(IDS), TINY["d_model"] // TINY["n_head"]
    steps = M.head_tensors(cache, 1, 2)
    for name in ("Q", "K", "V", "Z"):
        assert steps[name].shape == (t, d_k) and steps[name].dtype == np.float32
    upper = np.triu(np.ones((t, t), dtype=bool), k=1)
    assert np.isneginf(steps["masked scores"][upper]).all()
    np.testing.assert_array_equal(steps["masked scores"][~upper], steps["scores"][~upper])
    q, k = steps["Q"], steps["K"]
    np.testing.assert_allclose(steps["scores"], q @ k.T / math.sqrt(d_k), atol=1e-6)
    np.testing.assert_allclose(steps["Z"], steps["pattern"] @ steps["V"], atol=1e-6)


def test_mask_matrix():
    m = M.mask_matrix(3)
    assert torch.isneginf(m).tolist() == [[False, True, True], [False, False, True],
                                          [False, False, False]]
    assert m[~torch.isneginf(m)].eq(0).all()


def test_simplified_attention_is_softmax_of_x_xt():
    torch.manual_seed(1)
    x = torch.randn(5, 3)  # (T, d)
    scores, pattern, z = M.simplified_attention(x)
    torch.testing.assert_close(scores, x @ x.T)
    torch.testing.assert_close(pattern.sum(-1), torch.ones(5))
    torch.testing.assert_close(z, pattern @ x)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_renormalising_mask_equals_neg_inf_mask(seed):
    torch.manual_seed(seed)
    scores, _, _ = M.simplified_attention(torch.randn(6, 4))
    renorm, neg_inf = M.causal_by_renormalising(scores), M.causal_by_neg_inf(scores)
    torch.testing.assert_close(renorm, neg_inf, atol=1e-6, rtol=1e-5)
    assert torch.triu(neg_inf, diagonal=1).eq(0).all()


def test_hand_written_attention_matches_sdpa(run):
    _, _, cache = run
    delta = M.sdpa_max_delta(cache, range(TINY["n_layer"]))
    assert set(delta) == {"pattern", "Z"}
    assert delta["pattern"] < 1e-5 and delta["Z"] < 1e-5


def test_ablating_a_head_moves_the_next_token_distribution(run):
    model, logits, _ = run
    before, after = M.ablation_effect(model, IDS, {1: [0]})
    np.testing.assert_allclose(before, logits[0, -1].softmax(-1).numpy(), atol=1e-6)
    assert np.abs(before - after).max() > 1e-5
    np.testing.assert_allclose(after.sum(), 1.0, atol=1e-5)
    same_before, same_after = M.ablation_effect(model, IDS, {})
    np.testing.assert_array_equal(same_before, same_after)
    with pytest.raises(ValueError, match="head"):
        M.ablation_effect(model, IDS, {0: [9]})


def test_top_changes_keeps_both_top_lists():
    before, after = np.array([0.5, 0.3, 0.2, 0.0]), np.array([0.1, 0.1, 0.1, 0.7])
    assert M.top_changes(before, after, k=2).tolist() == [0, 1, 3]


# ---- embeddings ----------------------------------------------------------------------------

def test_one_hot_times_e_is_the_embedding_row(run):
    model, _, _ = run
    oh, x = A.one_hot_embed(IDS, model.embed.weight)
    assert oh.shape == (len(IDS), TINY["vocab_size"]) and (oh.sum(1) == 1).all()
    np.testing.assert_allclose(x, model.embed.weight[IDS].detach().numpy(), atol=1e-7)


def test_pca_of_points_on_a_line():
    t = np.array([-2.0, 0.0, 1.0, 4.0])
    u = np.array([1.0, 2.0, 2.0]) / 3.0  # unit direction, largest loading positive
    coords, ratio = A.pca(t[:, None] * u + np.array([5.0, -1.0, 2.0]), n_components=2)
    np.testing.assert_allclose(ratio, [1.0, 0.0], atol=1e-6)
    np.testing.assert_allclose(coords[:, 0], t - t.mean(), atol=1e-5)
    np.testing.assert_allclose(coords[:, 1], 0.0, atol=1e-5)


def test_pca_of_a_known_cross():
    x = np.array([[3.0, 0.0], [-3.0, 0.0], [0.0, 1.0], [0.0, -1.0]])
    coords, ratio = A.pca(x, n_components=2)
    np.testing.assert_allclose(ratio, [0.9, 0.1], atol=1e-6)
    np.testing.assert_allclose(np.abs(coords), np.abs(x), atol=1e-6)
    assert A.pca(np.random.default_rng(0).normal(size=(30, 5)), 3)[0].shape == (30, 3)


def test_nearest_neighbours_by_cosine():
    E = torch.tensor([[1.0, 0.0], [0.0, 1.0], [2.0, 0.2], [-1.0, 0.0]])
    ids, sims = A.nearest_neighbours(E, 0, k=3)
    assert ids.tolist() == [2, 1, 3]
    np.testing.assert_allclose(sims, [2 / math.hypot(2, 0.2), 0.0, -1.0], atol=1e-6)


# ---- positions -----------------------------------------------------------------------------

@pytest.mark.parametrize("i, j", [(0, 0), (3, 1), (10, 2), (7, 3)])
def test_sinusoidal_pe_matches_the_formula(i, j):
    d = 8
    pe = A.sinusoidal_pe(16, d)
    angle = i / 10000 ** (2 * j / d)  # by hand: (3, 1) -> 0.3, (10, 2) -> 0.1, (7, 3) -> 0.007
    assert pe[i, 2 * j] == pytest.approx(math.sin(angle), abs=1e-6)
    assert pe[i, 2 * j + 1] == pytest.approx(math.cos(angle), abs=1e-6)


def test_pe_hand_values_and_similarity():
    pe = A.sinusoidal_pe(16, 8)
    assert pe[3, 2] == pytest.approx(math.sin(0.3), abs=1e-6)  # 3 / 10000^(2/8) = 0.3
    assert pe[10, 5] == pytest.approx(math.cos(0.1), abs=1e-6)  # 10 / 10000^(4/8) = 0.1
    s = A.pe_similarity(pe)
    np.testing.assert_allclose(s, pe @ pe.T, atol=1e-6)
    np.testing.assert_allclose(np.diag(s), 4.0, atol=1e-5)  # Σ sin² + cos² = d / 2


@pytest.mark.parametrize("kind", ["sinusoidal", "learned", "none"])
def test_model_pe(kind):
    model = GPT(GPTConfig(**{**TINY, "positional": kind}))
    pe = A.model_pe(model)
    assert pe.shape == (TINY["context_length"], TINY["d_model"])
    if kind == "sinusoidal":
        np.testing.assert_array_equal(pe, A.sinusoidal_pe(16, 32))
    if kind == "none":
        assert (pe == 0).all()


# ---- the block -----------------------------------------------------------------------------

def test_activation_curves():
    c = A.activation_curves(-3, 3, 61)
    np.testing.assert_array_equal(c["ReLU"], np.maximum(c["x"], 0))
    np.testing.assert_allclose(c["GELU"], F.gelu(torch.tensor(c["x"])).numpy(), atol=1e-6)
    tanh = F.gelu(torch.tensor(c["x"]), approximate="tanh").numpy()
    np.testing.assert_allclose(c["GELU (tanh)"], tanh, atol=1e-6)


@pytest.mark.parametrize("layer, which", [(0, "ln1"), (1, "ln1"), (1, "ln2")])
def test_layernorm_rows_have_mean_0_and_variance_1(run, layer, which):
    _, _, cache = run
    x = A.layernorm_input(cache, layer, which)  # (T, d)
    out = cache[act_name("normalized", layer, which)][0]
    stats = A.layernorm_stats(x, out)
    var = x.double().var(-1, unbiased=False).numpy()
    np.testing.assert_allclose(stats["var before"], var, rtol=1e-5)
    np.testing.assert_allclose(stats["mean standardised"], 0.0, atol=1e-6)
    np.testing.assert_allclose(stats["var standardised"], var / (var + 1e-5), rtol=1e-5)
    # a fresh model has λ = 1 and b = 0, so its LayerNorm output is the standardised row
    np.testing.assert_allclose(stats["mean after"], stats["mean standardised"], atol=1e-6)
    np.testing.assert_allclose(stats["var after"], stats["var standardised"], rtol=1e-4)


def test_residual_norms(run):
    model, _, cache = run
    labels, norms = A.residual_norms(cache, model.config.n_layer)
    assert labels == ["embed", "0.mid", "0.post", "1.mid", "1.post"]
    assert norms.shape == (5, len(IDS))
    np.testing.assert_allclose(norms[-1], cache[act_name("resid_post", 1)][0].norm(dim=-1),
                               rtol=1e-6)


def test_logit_lens_last_row_is_the_models_own_top_k(run):
    model, logits, cache = run
    labels, ids, probs = A.logit_lens(model, cache, k=5)
    assert labels == ["after block 0", "after block 1"] and ids.shape == probs.shape == (2, 5)
    top = torch.topk(logits[0, -1].softmax(-1), 5)
    assert ids[-1].tolist() == top.indices.tolist()
    np.testing.assert_allclose(probs[-1], top.values.numpy(), atol=1e-6)
    assert (np.diff(probs, axis=1) <= 0).all()
    labels, ids, _ = A.logit_lens(model, cache, k=3, position=2, include_input=True)
    assert labels[0] == "embeddings" and ids.shape == (3, 3)
    assert ids[-1].tolist() == torch.topk(logits[0, 2], 3).indices.tolist()


# ---- parameter counts ----------------------------------------------------------------------

def test_seeds_gpt_config_124m_exact_counts():
    tied, untied = A.seeds_124m_counts(tied=True), A.seeds_124m_counts(tied=False)
    assert tied["total"] == 124_412_160  # qkv_bias False, every other bias kept
    assert untied["total"] == 163_009_536 == 124_412_160 + 50257 * 768
    assert tied["token embedding E"] == 38_597_376 and tied["positional"] == 786_432
    assert tied["unembedding W_U"] == 0 and untied["unembedding W_U"] == 38_597_376
    assert tied["blocks x12: attn QKV biases b_Q, b_K, b_V"] == 0
    assert tied["blocks x12: attn W_Q, W_K, W_V"] == 12 * 3 * 768 * 768
    ffn = tied["blocks x12: FFN W_1, W_2 (+ biases b_1, b_2)"]
    assert ffn == 12 * (2 * 768 * 3072 + 3072 + 768)
    with_qkv = A.parameter_table(GPTConfig(**{**A.GPT_CONFIG_124M, "bias": True}))
    assert with_qkv["total"] == 124_412_160 + 12 * 3 * 768 == 124_439_808


def _component(name: str) -> str:
    """Which line of ``parameter_table`` a named parameter of GPT belongs to."""
    rules = [("unembed.", "unembedding W_U"), ("embed.", "token embedding E"),
             ("pos.", "positional"),
             ("attn.W_QKV.weight", "attn W_Q, W_K, W_V"), ("attn.W_QKV.bias", "QKV biases"),
             ("attn.W_O", "attn W_O"), (".ln1.", "ln1"), (".ln2.", "ln2"),
             ("mlp.", "FFN W_1, W_2"), ("ln_final.", "final LayerNorm")]
    return next(line for key, line in rules if key in name)


@pytest.mark.parametrize("kw", [
    dict(tie_embeddings=True, bias=True), dict(tie_embeddings=False, bias=True),
    dict(tie_embeddings=True, bias=False, positional="sinusoidal"),
    dict(tie_embeddings=False, bias=False, positional="none", d_ff=48, n_layer=3),
])
def test_per_component_counts_match_a_real_model(kw):
    config = GPTConfig(**{**TINY, **kw})
    counts = A.parameter_table(config)
    real: dict[str, int] = {}
    for name, p in GPT(config).named_parameters():  # a tied W_U is listed once, as embed
        real[_component(name)] = real.get(_component(name), 0) + p.numel()
    for line, n in real.items():
        (key,) = [k for k in counts if line in k]
        assert counts[key] == n, key
    assert sum(v for k, v in counts.items() if k != "total") == counts["total"]
    assert counts["total"] == sum(p.numel() for p in GPT(config).parameters())
    labelled = [k for k in counts if "b_O" in k or "b_1" in k or "λ, b" in k]
    assert len(labelled) == (5 if config.bias else 0)  # biases named exactly where they count
