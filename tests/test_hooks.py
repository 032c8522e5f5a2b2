"""Activation names (the golden contract), filters, hook removal and head ablation."""

from __future__ import annotations

import threading

import pytest
import torch

from gptviz.model import GPT, GPTConfig, ablate_heads, hooks
from gptviz.model.hooks import is_hooked
from gptviz.model.names import (
    KINDS,
    act_name,
    attention_page_names,
    block_page_names,
    embedding_names,
    generation_page_names,
)

# The contract of DESIGN §2, plus ``blocks.{l}.ln2.hook_normalized`` (the FFN's input,
# which the Transformer-block page draws). Pages ask for these names; never rename them.
PER_LAYER = [
    "ln1.hook_normalized",
    "attn.hook_q", "attn.hook_k", "attn.hook_v",
    "attn.hook_scores", "attn.hook_pattern", "attn.hook_z",
    "hook_attn_out", "hook_resid_mid",
    "ln2.hook_normalized",
    "mlp.hook_pre", "mlp.hook_post", "hook_mlp_out",
    "hook_resid_post",
]
GOLDEN_NAMES = (
    ["hook_embed", "hook_pos_embed"]
    + [f"blocks.{layer}.{name}" for layer in range(2) for name in PER_LAYER]
    + ["ln_final.hook_normalized", "hook_logits"]
)

def make_model(**config_kw) -> GPT:
    torch.manual_seed(0)
    config = GPTConfig(vocab_size=9, context_length=8, d_model=12, n_layer=2, n_head=3,
                       **config_kw)
    return GPT(config).eval()


def test_golden_hook_names():
    model = make_model()
    assert model.hook_names() == GOLDEN_NAMES
    _, cache = model.run_with_cache([1, 2, 3])
    assert list(cache) == GOLDEN_NAMES  # captured in forward order


def test_activation_shapes():
    _, c = make_model().run_with_cache([1, 2, 3, 4])  # B=1, T=4, d=12, 3 heads of 4
    shapes = {
        act_name("embed"): (1, 4, 12), act_name("pos_embed"): (4, 12),
        act_name("q", 0): (1, 3, 4, 4), act_name("pattern", 0): (1, 3, 4, 4),
        act_name("z", 0): (1, 3, 4, 4), act_name("pre", 0): (1, 4, 48),
        act_name("mlp_out", 0): (1, 4, 12), act_name("resid_post", 1): (1, 4, 12),
        act_name("logits"): (1, 4, 9),
    }
    for name, shape in shapes.items():
        assert tuple(c[name].shape) == shape, name


@pytest.mark.parametrize("names_filter,expected", [
    ("hook_logits", ["hook_logits"]),
    (["hook_embed", "blocks.1.attn.hook_pattern"], ["hook_embed", "blocks.1.attn.hook_pattern"]),
    (lambda name: name.endswith("hook_pattern"),
     ["blocks.0.attn.hook_pattern", "blocks.1.attn.hook_pattern"]),
])
def test_names_filter(names_filter, expected):
    _, cache = make_model().run_with_cache([1, 2], names_filter=names_filter)
    assert list(cache) == expected


def test_unknown_name_is_a_clear_error():
    with pytest.raises(ValueError, match="no hook point named 'blocks.9.attn.hook_q'"):
        make_model().run_with_cache([1], names_filter=["blocks.9.attn.hook_q"])
    _, cache = make_model().run_with_cache([1], names_filter="hook_logits")
    with pytest.raises(KeyError, match="no activation named"):
        cache["hook_embed"]


def _hook_count(model: GPT) -> int:
    return sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in model.modules())


def test_hooks_never_touch_the_model_and_end_even_after_an_error():
    model = make_model()
    state = {k: v.clone() for k, v in model.state_dict().items()}
    fired = []
    with pytest.raises(RuntimeError, match="boom"), \
            hooks(model, [(None, lambda x, name: fired.append(name))]):
        assert is_hooked(model) and _hook_count(model) == 0
        model([1, 2])
        raise RuntimeError("boom")
    assert fired == GOLDEN_NAMES
    assert not is_hooked(model) and _hook_count(model) == 0
    model([1, 2])  # no hook of the block above fires any more
    assert len(fired) == len(GOLDEN_NAMES)
    assert all(torch.equal(v, state[k]) for k, v in model.state_dict().items())


def test_hooks_of_one_model_do_not_reach_another():
    a, b = make_model(), make_model()
    seen = []
    with hooks(a, [("hook_logits", lambda x, name: seen.append(name))]):
        b([1, 2])
        assert not is_hooked(b)
        a([1, 2])
    assert seen == ["hook_logits"]


def _capture_in_threads(capture, prompts, repeats: int = 3):
    """Run ``capture(prompt)`` for every prompt from its own thread, all released at once."""
    barrier = threading.Barrier(len(prompts))
    results: dict[int, list] = {i: [] for i in range(len(prompts))}

    def work(i: int) -> None:
        barrier.wait()
        for _ in range(repeats):
            results[i].append(capture(prompts[i]))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(prompts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return results


# Eight prompts of different lengths, as eight students would type them.
PROMPTS = [[(3 * i + j) % 9 for j in range(1 + i)] for i in range(8)]


def test_eight_threads_sharing_one_model_each_capture_their_own_activations():
    """The classroom race: one shared model, eight sessions capturing at the same moment.
    Each cache must equal what the same prompt gives alone (when hooks lived on the model,
    threads recorded each other's tensors, and unequal lengths crashed the pages)."""
    torch.set_num_threads(1)
    model = make_model()
    alone = {i: model.run_with_cache(p) for i, p in enumerate(PROMPTS)}
    results = _capture_in_threads(lambda p: model.run_with_cache(p), PROMPTS)
    for i, runs in results.items():
        assert len(runs) == 3
        for logits, cache in runs:
            assert list(cache) == GOLDEN_NAMES
            torch.testing.assert_close(logits, alone[i][0], rtol=0, atol=0)
            for name in GOLDEN_NAMES:
                torch.testing.assert_close(cache[name], alone[i][1][name], rtol=0, atol=0)


def test_ablation_in_one_thread_does_not_switch_heads_off_in_another():
    model = make_model()
    plain = model.run_with_cache([1, 2, 3])[0]  # the explicit path, as the threads take it

    def capture(prompt):
        if prompt == "ablate":
            with ablate_heads(model, {0: [0, 1]}):
                return model([1, 2, 3])
        return model.run_with_cache([1, 2, 3])[0]

    results = _capture_in_threads(capture, ["ablate", "plain"] * 4, repeats=5)
    for i, runs in results.items():
        for logits in runs:
            assert torch.equal(logits, plain) == (i % 2 == 1)


def test_a_hook_can_replace_an_activation():
    model = make_model()
    with hooks(model, [(act_name("attn_out", 0), lambda x, name: torch.zeros_like(x))]):
        _, cache = model.run_with_cache([1, 2, 3])
    assert (cache[act_name("attn_out", 0)] == 0).all()
    torch.testing.assert_close(cache[act_name("resid_mid", 0)],
                               cache[act_name("embed")] + cache[act_name("pos_embed")])


def test_ablating_a_head_equals_zeroing_its_slice_of_W_O():
    model, ids = make_model(), torch.tensor([[1, 2, 3, 4, 5]])
    with ablate_heads(model, {1: [2]}):
        ablated = model(ids)
    reference = make_model()
    with torch.no_grad():
        reference.blocks[1].attn.W_O.weight[:, 8:12] = 0.0  # head 2 = columns 8..11
    torch.testing.assert_close(ablated, reference(ids))
    assert not torch.allclose(ablated, model(ids))  # and it is undone afterwards
    torch.testing.assert_close(model(ids), make_model()(ids))


def test_ablating_nothing_changes_nothing_and_bad_heads_are_errors():
    model, ids = make_model(), torch.tensor([[1, 2, 3]])
    with ablate_heads(model, {0: []}):
        torch.testing.assert_close(model(ids), make_model()(ids))
    with pytest.raises(ValueError, match="head"), ablate_heads(model, {0: [3]}):
        pass
    with pytest.raises(ValueError, match="layer 5"), ablate_heads(model, {5: [0]}):
        pass


def test_the_cache_sees_the_ablated_heads():
    model = make_model()
    with ablate_heads(model, {0: [0, 2]}):
        _, cache = model.run_with_cache([1, 2, 3])
    z = cache[act_name("z", 0)]  # (B, n_head, T, d_head)
    assert (z[:, [0, 2]] == 0).all() and (z[:, 1] != 0).any()


# ---- act_name, the one builder of names ----------------------------------------------------

def test_mlp_out_is_what_the_ffn_adds_to_the_residual():
    _, cache = make_model().run_with_cache([1, 2, 3, 4])
    for layer in range(2):
        added = cache[act_name("resid_post", layer)] - cache[act_name("resid_mid", layer)]
        torch.testing.assert_close(cache[act_name("mlp_out", layer)], added)


def _every_act_name(n_layer: int, rope: bool = False) -> list[str]:
    """act_name of every kind, in no particular order (q_rot and k_rot: RoPE models only)."""
    names = [act_name(k) for k in ("embed", "pos_embed", "logits")]
    names.append(act_name("normalized", ln="ln_final"))
    skip = ("embed", "pos_embed", "logits", "normalized") + (() if rope else ("q_rot", "k_rot"))
    per_block = [k for k in KINDS if k not in skip]
    for layer in range(n_layer):
        names += [act_name(k, layer) for k in per_block]
        names += [act_name("normalized", layer, ln) for ln in ("ln1", "ln2")]
    return names


def test_act_name_builds_exactly_the_hook_names():
    built = _every_act_name(2)
    assert len(built) == len(set(built))  # no two kinds share a name
    assert sorted(built) == sorted(make_model().hook_names()) == sorted(GOLDEN_NAMES)
    assert act_name("pattern", 0) == "blocks.0.attn.hook_pattern"
    assert act_name("normalized", 1, "ln2") == "blocks.1.ln2.hook_normalized"
    assert act_name("mlp_out", 1) == "blocks.1.hook_mlp_out"
    rope = make_model(positional="rope")  # two more per block: the rotated q and k
    assert sorted(_every_act_name(2, rope=True)) == sorted(rope.hook_names())


@pytest.mark.parametrize("kind,layer,ln,message", [
    ("attn", 0, None, "unknown activation kind"),  # no aliases: the kind is "pattern"
    ("pattern", None, None, "per block"),
    ("pattern", -1, None, "per block"),
    ("embed", 0, None, "not inside a block"),
    ("normalized", 0, None, "needs ln="),
    ("normalized", 0, "ln3", "needs ln="),
    ("normalized", 0, "ln_final", "not inside a block"),
    ("resid_post", 0, "ln1", "only applies to 'normalized'"),
])
def test_act_name_rejects_what_is_not_a_name(kind, layer, ln, message):
    with pytest.raises(ValueError, match=message):
        act_name(kind, layer, ln)


def test_page_name_lists_exist_and_are_in_forward_order():
    order = {name: i for i, name in enumerate(make_model().hook_names())}
    for names in (embedding_names(), attention_page_names(2), block_page_names(2),
                  generation_page_names(1)):
        assert all(n in order for n in names)
    for names in (attention_page_names(2), block_page_names(2), generation_page_names(1)):
        assert [order[n] for n in names] == sorted(order[n] for n in names)
