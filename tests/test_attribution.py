"""Direct logit attribution and the commitment layer (gptviz.analysis.attribution) against direct
torch computations: the bars sum to the model's own logit on every bundled model and on
tiny models without biases, without positions, with RoPE or with one layer; each head's
bar is its z W_O slice through the frozen final LayerNorm; the commitment layer is a loop
over ``analysis.logit_lens``."""

from __future__ import annotations

import pytest
import torch

from gptviz.analysis import core as analysis
from gptviz.analysis.attribution import (
    commitment_layers,
    heads_per_layer,
    logit_attribution,
    residual_parts,
    settling,
)
from gptviz.checkpoints.folder import bundled_models, load_checkpoint
from gptviz.model.names import act_name
from tests.helpers import MODELS, tiny_gpt

TEXT = "The Steenrod problem asks which homology classes are images of manifolds."
TINY = {  # name -> tiny_gpt settings: every way a model can lack a part
    "no biases": dict(bias=False, n_layer=2),
    "no positions": dict(positional="none", n_layer=2),
    "rope": dict(positional="rope", n_layer=2),
    "one layer, no biases, no positions": dict(bias=False, positional="none"),
    "sinusoidal, untied": dict(positional="sinusoidal", tie_embeddings=False, n_layer=3),
}
TINY_IDS = [3, 1, 4, 1, 5, 9, 2, 6]


def bundled(name: str):
    """A bundled model and the activations of TEXT (cut to its context)."""
    ckpt = load_checkpoint(bundled_models()[name])
    ids = ckpt.tokenizer.encode(TEXT)[-ckpt.config.context_length:]
    return ckpt.model, ids


def check_sums(model, ids, tol: float = 1e-4) -> float:
    """Every position, its top-3 tokens and token 0: Σ bars = the model's logit."""
    _, cache = model.run_with_cache(ids)
    with torch.no_grad():
        logits = model(ids)[0]  # (T, |V|): the ordinary (fast) forward pass
    worst = 0.0
    for pos in range(len(ids)):
        for t in [0, *torch.topk(logits[pos], 3).indices.tolist()]:
            a = logit_attribution(model, cache, pos, t)
            worst = max(worst, abs(a.total - float(logits[pos, t])))
            assert heads_per_layer(a).total == pytest.approx(a.total, abs=1e-9)
    assert worst <= tol, worst
    return worst


@pytest.mark.skipif(not MODELS, reason="no bundled models in assets/models")
@pytest.mark.parametrize("name", MODELS)
def test_the_bars_sum_to_the_logit_on_every_bundled_model(name):
    model, ids = bundled(name)
    check_sums(model, ids)


@pytest.mark.parametrize("name", list(TINY))
def test_the_bars_sum_to_the_logit_on_models_that_lack_parts(name):
    model = tiny_gpt(20, **TINY[name])
    with torch.no_grad():  # trained-looking LayerNorms: λ and b away from 1 and 0
        model.ln_final.lam.uniform_(0.5, 2.0)
        if model.ln_final.b is not None:
            model.ln_final.b.normal_(0.0, 0.5)
    check_sums(model, TINY_IDS)


@pytest.mark.parametrize("name", list(TINY))
def test_the_components_follow_the_model(name):
    settings = TINY[name]
    model = tiny_gpt(20, **settings)
    _, cache = model.run_with_cache(TINY_IDS)
    comps, parts = residual_parts(model, cache, 5)
    kinds = [c.kind for c in comps]
    layers = settings.get("n_layer", 1)
    has_position = settings.get("positional", "learned") in ("learned", "sinusoidal")
    has_bias = settings.get("bias", True)
    assert kinds.count("position") == has_position
    assert kinds.count("b_O") == (layers if has_bias else 0)
    assert kinds.count("head") == 2 * layers and kinds.count("FFN") == layers
    a = logit_attribution(model, cache, 5, 7)
    assert (a.ln_bias is None) == (not has_bias)
    # the parts are the residual stream, split
    x = cache[act_name("resid_post", layers - 1)][0, 5].double()
    torch.testing.assert_close(parts.sum(0), x, atol=1e-5, rtol=0)


def direct_head_bar(model, cache, layer: int, head: int, pos: int, token: int) -> float:
    """z^h W_O^h, centred, times λ/σ (σ of the cached final residual), times W_U[:, t]."""
    dk = model.config.d_model // model.config.n_head
    z = cache[act_name("z", layer)][0, head, pos].double()  # (d_k,)
    w_o = model.blocks[layer].attn.W_O.weight.detach().double()[:, head * dk:(head + 1) * dk]
    part = w_o @ z  # (d,)
    x = cache[act_name("resid_post", model.config.n_layer - 1)][0, pos].double()
    sigma = torch.sqrt(((x - x.mean()) ** 2).mean() + 1e-5)
    lam = model.ln_final.lam.detach().double()
    w_u = model.unembed.weight.detach().double()[token]
    return float(((part - part.mean()) * lam / sigma) @ w_u)


@pytest.mark.parametrize("source", [*MODELS, "tiny"])
def test_each_head_bar_is_computed_from_the_cache(source):
    model, ids = bundled(source) if source != "tiny" else (
        tiny_gpt(20, n_layer=2, bias=False), TINY_IDS)
    _, cache = model.run_with_cache(ids)
    pos = len(ids) - 2
    with torch.no_grad():
        token = int(model(ids)[0, pos].argmin())  # a token the heads push hard, one way
    a = logit_attribution(model, cache, pos, token)
    bars = {c.label: float(v) for c, v in zip(a.components, a.contributions, strict=True)}
    for layer in range(model.config.n_layer):
        for head in range(model.config.n_head):
            assert bars[f"L{layer} H{head}"] == pytest.approx(
                direct_head_bar(model, cache, layer, head, pos, token), abs=1e-9)
    merged = heads_per_layer(a)
    for layer in range(model.config.n_layer):
        heads = sum(bars[f"L{layer} H{h}"] for h in range(model.config.n_head))
        got = next(float(v) for c, v in zip(merged.components, merged.contributions,
                                           strict=True) if c.label == f"L{layer} heads")
        assert got == pytest.approx(heads, abs=1e-9)


def test_the_ln_bias_bar_is_b_f_times_w_u():
    model = tiny_gpt(20, n_layer=2)
    with torch.no_grad():
        model.ln_final.b.normal_(0.0, 1.0)
    _, cache = model.run_with_cache(TINY_IDS)
    a = logit_attribution(model, cache, -1, 4)
    assert a.position == len(TINY_IDS) - 1
    b_f, w_u = model.ln_final.b.detach().double(), model.unembed.weight.detach().double()
    expected = float(b_f @ w_u[4])
    assert a.ln_bias == pytest.approx(expected, abs=1e-12) and abs(expected) > 1e-3


def loop_kept(model, cache, n: int) -> list[int]:
    """The first logit-lens row from which every top-1 is the last row's, position by
    position, as a block index (−1: the embeddings)."""
    out = []
    for pos in range(n):
        _, ids, _ = analysis.logit_lens(model, cache, 1, pos, include_input=True)
        top1 = ids[:, 0].tolist()
        s = len(top1) - 1
        while s > 0 and top1[s - 1] == top1[-1]:
            s -= 1
        out.append(s - 1)
    return out


def test_a_top1_that_flips_back_counts_only_from_where_it_stays():
    """Issue 39: "18 of 23 positions have their final top-1 before the last block" counted
    positions whose top-1 matched the final one early and changed again later."""
    from gptviz.app.block.prediction import _commitment_count

    top1 = torch.tensor([[4, 1, 2, 9],   # embeddings
                         [7, 1, 3, 9],   # after block 0
                         [5, 1, 2, 9],   # after block 1
                         [7, 1, 3, 8]])  # after block 2: the final prediction
    first, kept = settling(top1)
    assert first.tolist() == [1, 0, 1, 3] and kept.tolist() == [3, 0, 3, 3]
    layers, kept_layers = (first - 1).tolist(), (kept - 1).tolist()
    said = _commitment_count(layers, kept_layers, 3)
    # position 1 keeps it from the embeddings on; 0 and 2 match after block 0 and lose it
    assert said.startswith("1 of 4 positions have their final top-1 before the last block "
                           "(block 2) and keep it from there on")
    assert "(2 of them had it earlier but lost it again)" in said


def loop_commitment(model, cache, n: int) -> list[int]:
    """The first row of ``analysis.logit_lens`` (embeddings, then each block) whose top-1 is
    the last row's, position by position, as a block index (−1: the embeddings)."""
    out = []
    for pos in range(n):
        _, ids, _ = analysis.logit_lens(model, cache, 1, pos, include_input=True)
        top1 = ids[:, 0].tolist()
        out.append(top1.index(top1[-1]) - 1)
    return out


@pytest.mark.parametrize("source", [*MODELS, *TINY])
def test_the_commitment_layer_is_a_loop_over_the_logit_lens(source):
    if source in TINY:
        model, ids = tiny_gpt(20, **TINY[source]), TINY_IDS
    else:
        model, ids = bundled(source)
    _, cache = model.run_with_cache(ids)
    com = commitment_layers(model, cache)
    assert com.layer.tolist() == loop_commitment(model, cache, len(ids))
    assert com.kept_layer.tolist() == loop_kept(model, cache, len(ids))
    assert len(com.stages) == model.config.n_layer + 1
    with torch.no_grad():
        assert com.top1[-1].tolist() == model(ids)[0].argmax(-1).tolist()  # the prediction
    assert (com.top1[com.first, torch.arange(len(ids))] == com.top1[-1]).all()

