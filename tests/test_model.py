"""The GPT and its layers: formulas, parity with torch's built-ins, both paths equal."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from gptviz.model import (
    GPT,
    GPT_CONFIG_124M,
    GPTConfig,
    LayerNorm,
    gelu,
    parameter_counts,
    relu,
    sinusoidal_table,
)
from gptviz.model.attention import causal_mask
from gptviz.model.names import act_name


def tiny(**kw) -> GPTConfig:
    base = dict(vocab_size=11, context_length=12, d_model=16, n_layer=2, n_head=4)
    return GPTConfig(**{**base, **kw})


def model_of(seed: int = 0, **kw) -> GPT:
    torch.manual_seed(seed)
    return GPT(tiny(**kw)).eval()


# ---- layers ------------------------------------------------------------------------
@pytest.mark.parametrize("bias", [True, False])
def test_layernorm_equals_torch(bias):
    ln = LayerNorm(8, bias=bias)
    with torch.no_grad():
        ln.lam.uniform_(0.5, 2.0)
        if bias:
            ln.b.uniform_(-1, 1)
    x = torch.randn(3, 5, 8) * 4 + 2
    ref = F.layer_norm(x, (8,), ln.lam, ln.b if bias else None, 1e-5)
    torch.testing.assert_close(ln(x, hooked=True), ref, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(ln(x), ref)


def test_layernorm_rows_have_mean_0_var_1_at_init():
    y = LayerNorm(32)(torch.randn(4, 32) * 7 + 3, hooked=True)
    torch.testing.assert_close(y.mean(-1), torch.zeros(4), atol=1e-5, rtol=0)
    torch.testing.assert_close(y.var(-1, unbiased=False), torch.ones(4), atol=1e-3, rtol=0)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_equals_torch(approximate):
    x = torch.linspace(-6, 6, 1001)
    torch.testing.assert_close(gelu(x, approximate), F.gelu(x, approximate=approximate))


def test_gelu_and_relu_golden():
    x = torch.tensor([-1.0, 0.0, 1.0])
    torch.testing.assert_close(gelu(x), torch.tensor([-0.158655, 0.0, 0.841345]), atol=1e-6, rtol=0)
    assert relu(x).tolist() == [0.0, 0.0, 1.0]


def test_sinusoidal_follows_the_formula():
    d = 6
    pe = sinusoidal_table(5, d)
    for i in range(5):
        for j in range(d // 2):
            angle = i / 10000 ** (2 * j / d)
            assert pe[i, 2 * j].item() == pytest.approx(math.sin(angle), abs=1e-6)
            assert pe[i, 2 * j + 1].item() == pytest.approx(math.cos(angle), abs=1e-6)
    assert pe[0].tolist() == [0.0, 1.0] * 3  # position 0: sin 0, cos 0


def test_causal_mask_blocks_the_future():
    assert causal_mask(2, 4).tolist() == [[False, False, False, True], [False, False, False, False]]


# ---- the model ---------------------------------------------------------------------
@pytest.mark.parametrize("positional", ["sinusoidal", "learned", "none"])
@pytest.mark.parametrize("activation", ["gelu", "relu"])
@pytest.mark.parametrize("bias,tie", [(True, True), (False, False)])
def test_hooked_path_equals_fast_path(positional, activation, bias, tie):
    model = model_of(positional=positional, activation=activation, bias=bias, tie_embeddings=tie)
    ids = torch.randint(0, 11, (3, 12))
    fast = model(ids)  # scaled_dot_product_attention, F.layer_norm, F.gelu
    hooked, cache = model.run_with_cache(ids)  # explicit softmax, hand-written layers
    torch.testing.assert_close(hooked, fast, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(cache[act_name("logits")], fast, atol=1e-5, rtol=1e-5)


def test_attention_pattern_is_causal_and_normalised():
    _, cache = model_of().run_with_cache([1, 2, 3, 4, 5])
    pattern = cache[act_name("pattern", 1)][0]  # (n_head, T, T)
    torch.testing.assert_close(pattern.sum(-1), torch.ones(4, 5))
    assert (pattern.triu(1) == 0).all()
    q, k = cache[act_name("q", 1)], cache[act_name("k", 1)]
    torch.testing.assert_close(cache[act_name("scores", 1)], q @ k.transpose(-2, -1) / 2.0)
    z = pattern @ cache[act_name("v", 1)][0]
    torch.testing.assert_close(cache[act_name("z", 1)][0], z)


def test_future_tokens_do_not_change_earlier_logits():
    model = model_of()
    a = model(torch.tensor([[1, 2, 3, 4]]))
    b = model(torch.tensor([[1, 2, 3, 9]]))
    torch.testing.assert_close(a[:, :3], b[:, :3])
    assert not torch.allclose(a[:, 3], b[:, 3])


def test_resid_stream_adds_up():
    _, c = model_of().run_with_cache([3, 1, 4, 1])
    x = c[act_name("embed")] + c[act_name("pos_embed")]
    torch.testing.assert_close(c[act_name("resid_mid", 0)], x + c[act_name("attn_out", 0)])


def test_kv_cache_gives_the_same_logits():
    model = model_of(positional="sinusoidal")
    ids = torch.randint(0, 11, (2, 12))
    full = model(ids)
    cache = model.new_cache(batch=2)
    parts = [model(ids[:, :5], cache)] + [model(ids[:, t:t + 1], cache) for t in range(5, 12)]
    torch.testing.assert_close(torch.cat(parts, 1), full, atol=1e-5, rtol=1e-5)
    with pytest.raises(ValueError, match="context_length"):
        model(ids[:, :1], cache)


def test_tied_embeddings_share_one_matrix():
    model = model_of(tie_embeddings=True)
    assert model.unembed.weight is model.embed.weight


@pytest.mark.parametrize("kw", [dict(), dict(bias=False), dict(tie_embeddings=False),
                                dict(positional="sinusoidal"), dict(d_ff=24)])
def test_parameter_counts_match_the_model(kw):
    config = tiny(**kw)
    assert parameter_counts(config)["total"] == GPT(config).num_params()


def test_gpt2_small_parameter_count():
    assert parameter_counts(GPTConfig(**GPT_CONFIG_124M))["total"] == 124_439_808
    untied = GPTConfig(**{**GPT_CONFIG_124M, "tie_embeddings": False})
    assert parameter_counts(untied)["total"] == 124_439_808 + 50257 * 768


def test_bf16_autocast_forward_on_cpu():
    model = model_of()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = model(torch.tensor([[1, 2, 3]]))
    torch.testing.assert_close(out.float(), model(torch.tensor([[1, 2, 3]])), atol=0.05, rtol=0.05)


# ---- bad input ---------------------------------------------------------------------
@pytest.mark.parametrize("ids,message", [
    ([1, 11], "outside the vocabulary"),
    ([-1, 2], "outside the vocabulary"),
    (list(range(11)) + [1, 2], "longer than the model's context_length"),
    ([], "non-empty"),
    (torch.tensor([0.5, 1.0]), "must be integers"),
])
def test_bad_ids_are_clear_value_errors(ids, message):
    with pytest.raises(ValueError, match=message):
        model_of()(ids)


@pytest.mark.parametrize("kw,message", [
    (dict(d_model=10, n_head=4), "divisible by n_head"),
    (dict(activation="tanh"), "activation must be one of"),
    (dict(positional="rotary"), "positional must be one of"),
    (dict(n_layer=0), "n_layer must be at least 1"),
    (dict(dropout=1.0), "dropout"),
    (dict(n_head="4"), "n_head must be int"),
    (dict(d_model=9, n_head=3, positional="sinusoidal"), "even"),
])
def test_invalid_config_is_a_clear_value_error(kw, message):
    with pytest.raises(ValueError, match=message):
        tiny(**kw)


def test_config_round_trips_and_rejects_unknown_fields():
    c = tiny(positional="none")
    assert GPTConfig.from_dict(c.to_dict()) == c
    with pytest.raises(ValueError, match="unknown field"):
        GPTConfig.from_dict({**c.to_dict(), "n_embd": 3})
    with pytest.raises(ValueError, match="missing field"):
        GPTConfig.from_dict({"vocab_size": 3})


@settings(max_examples=15, deadline=None)
@given(st.integers(1, 12), st.integers(1, 3))
def test_logits_shape_and_finite_for_any_length(t, b):
    ids = torch.randint(0, 11, (b, t))
    out = model_of()(ids)
    assert out.shape == (b, t, 11) and torch.isfinite(out).all()


def test_sinusoidal_table_with_an_odd_width():
    import math

    from gptviz.model.layers import sinusoidal_table

    pe = sinusoidal_table(6, 5)  # columns: sin, cos, sin, cos, sin
    assert pe.shape == (6, 5)
    assert float(pe[3, 4]) == pytest.approx(math.sin(3 / 10000 ** (4 / 5)), abs=1e-6)
    assert float(pe[3, 3]) == pytest.approx(math.cos(3 / 10000 ** (2 / 5)), abs=1e-6)


def test_b_K_changes_no_pattern_while_b_Q_does():
    """What the Attention page's note says: b_K adds q_i·b_K/√d_k to every score of row i,
    and a row-softmax ignores a constant added to its row; b_Q is not such a constant."""
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=20, context_length=16, d_model=32, n_layer=1, n_head=4,
                          bias=True)).eval()
    ids = [3, 1, 4, 1, 5, 9, 2, 6]
    name = act_name("pattern", 0)

    def pattern() -> torch.Tensor:
        return model.run_with_cache(ids, names_filter=[name])[1][name]

    before = pattern()
    bias = model.blocks[0].attn.W_QKV.bias  # [b_Q | b_K | b_V]
    with torch.no_grad():
        bias[32:64] += torch.randn(32)  # b_K
    torch.testing.assert_close(pattern(), before, rtol=0, atol=1e-6)
    with torch.no_grad():
        bias[:32] += torch.randn(32)  # b_Q
    assert (pattern() - before).abs().max() > 1e-3
