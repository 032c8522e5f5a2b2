"""RoPE: rotary positions as a fourth ``positional`` option. The hooked path equals the
fused one, scores depend on positions only through i - j, and the rolling KV cache gives
the same tokens as running the text without a cache, far past the context window."""

from __future__ import annotations

import pytest
import torch

from gptviz.checkpoints.folder import checkpoint_to_zip, load_checkpoint_zip
from gptviz.generation.sampling import generate
from gptviz.model import GPT, GPTConfig, RunConfig, TrainConfig
from gptviz.model.attention import ROPE, rope_angles, rotate, window_mask
from gptviz.model.names import act_name
from gptviz.tokenizers import CharTokenizer
from gptviz.train.trainer import Trainer


def rope_gpt(context_length: int = 16, n_layer: int = 2, seed: int = 0, **kw) -> GPT:
    torch.manual_seed(seed)
    return GPT(GPTConfig(vocab_size=40, context_length=context_length, d_model=32,
                         n_layer=n_layer, n_head=4, positional="rope", **kw)).eval()


def test_rotation_keeps_norms_and_makes_dot_products_relative():
    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(1, 8, generator=g), torch.randn(1, 8, generator=g)
    dots = {}
    for i, j in [(5, 2), (105, 102), (3, 0), (7, 7), (907, 907)]:
        qi = rotate(q, *rope_angles(i, 1, 8))
        kj = rotate(k, *rope_angles(j, 1, 8))
        assert qi.norm().item() == pytest.approx(q.norm().item(), rel=1e-6)
        dots.setdefault(i - j, []).append((qi @ kj.T).item())
    for values in dots.values():
        assert max(values) - min(values) < 1e-5
    assert dots[3][0] != pytest.approx(dots[0][0], abs=1e-3)  # but the offset matters


@pytest.mark.parametrize("length", [10, 16, 40])  # inside, at and past the window of 16
def test_the_hooked_path_equals_the_fused_path(length):
    model = rope_gpt()
    ids = torch.randint(40, (2, length), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        fused = model(ids)
    hooked, cache = model.run_with_cache(ids)
    assert (fused - hooked).abs().max().item() < 1e-5
    q, q_rot = cache[act_name("q", 0)], cache[act_name("q_rot", 0)]
    assert not torch.allclose(q[:, :, 1:], q_rot[:, :, 1:])  # rotated past position 0
    assert torch.allclose(q[:, :, 0], q_rot[:, :, 0])  # position 0: angle 0
    pattern = cache[act_name("pattern", 1)]  # (B, H, T, T)
    blocked = window_mask(length, length, 16)
    assert pattern[..., blocked].abs().max().item() == 0.0  # nothing outside the window
    assert torch.allclose(pattern.sum(-1), torch.ones(pattern.shape[:-1]), atol=1e-6)


def test_shifting_every_position_leaves_the_scores_unchanged():
    model = rope_gpt()
    ids = torch.randint(40, (1, 12), generator=torch.Generator().manual_seed(2))
    _, at_zero = model.run_with_cache(ids)
    name = act_name("scores", 0)
    store = {}
    cache = model.new_cache()
    cache.position = 500  # the same tokens, 500 places later
    from gptviz.model.hooks import hooks

    with hooks(model, [([name], lambda x, n: store.__setitem__(n, x.detach()))]), \
            torch.no_grad():
        model._forward(ids, cache)
    assert (store[name] - at_zero[name]).abs().max().item() < 1e-4


@pytest.mark.parametrize("temperature, seed, n", [(0.0, None, 500), (1.0, 5, 200)])
def test_the_rolling_cache_equals_no_cache_far_past_the_window(temperature, seed, n):
    model = rope_gpt(context_length=64, n_layer=2)
    prompt = [3, 1, 4, 1, 5]
    cached = generate(model, prompt, n, temperature=temperature, seed=seed)
    uncached = generate(model, prompt, n, temperature=temperature, seed=seed,
                        use_cache=False)
    assert len(cached) == n + 5 and cached == uncached


def test_a_prompt_longer_than_the_window_rolls_in():
    model = rope_gpt(context_length=16)
    prompt = list(torch.randint(40, (50,), generator=torch.Generator().manual_seed(3)))
    prompt = [int(i) for i in prompt]
    assert generate(model, prompt, 30, seed=1) == generate(model, prompt, 30, seed=1,
                                                            use_cache=False)


def test_the_hooked_path_through_a_wrapped_ring_sees_the_keys_oldest_first():
    """Past the window the cache is a ring (slot p mod N); the pattern a page draws must
    still list the keys oldest first, equal to the window's row of an uncached pass."""
    model = rope_gpt(context_length=16)
    ids = [int(i) for i in torch.randint(40, (37,), generator=torch.Generator().manual_seed(4))]
    cache = model.new_cache()
    with torch.no_grad():
        model._forward(torch.tensor([ids[:16]]), cache)
        for token in ids[16:-1]:  # 20 more: the ring has wrapped once, at slot 4 now
            model._forward(torch.tensor([[token]]), cache)
    from gptviz.model.hooks import hooks

    name, store = act_name("pattern", 1), {}
    with hooks(model, [([name], lambda x, n: store.__setitem__(n, x.detach()))]), \
            torch.no_grad():
        last = model._forward(torch.tensor([[ids[-1]]]), cache)[0, -1]
    full, acts = model.run_with_cache(torch.tensor([ids]))
    row = acts[name][0, :, -1, -16:]  # the last query over its 16-key window, oldest first
    assert (store[name][0, :, 0] - row).abs().max().item() < 1e-5
    assert (last - full[0, -1]).abs().max().item() < 1e-4


def test_rope_needs_an_even_head_width():
    with pytest.raises(ValueError, match="must be even"):
        GPTConfig(vocab_size=10, d_model=12, n_head=4, positional="rope")


def test_a_rope_model_trains_and_round_trips_through_a_zip():
    tok = CharTokenizer()
    text = "the cat sat on the mat. " * 60
    tok.train(text)
    config = GPTConfig(vocab_size=tok.vocab_size, context_length=16, d_model=32, n_layer=1,
                       n_head=2, positional="rope")
    trainer = Trainer(RunConfig(config, TrainConfig(steps=40, batch_size=8, learning_rate=1e-2,
                                                    eval_interval=20, eval_batches=2)),
                      tok.encode(text))
    result = trainer.train()
    assert result.evals[-1].val_loss < result.evals[0].val_loss - 0.5
    back = load_checkpoint_zip(checkpoint_to_zip(trainer.model, tok))
    ids = torch.tensor([tok.encode("the cat sat on the mat.")])
    with torch.no_grad():
        assert torch.equal(back.model(ids), trainer.model.eval()(ids))
    assert not hasattr(back.model.pos, "P")  # no position table: the rotation is the position


@pytest.mark.parametrize("n, first, chunk", [(12, 5, 7), (16, 4, 3), (40, 16, 1)])
def test_generation_rotates_in_place_as_the_hooked_path_rotates_copies(n, first, chunk,
                                                                       monkeypatch):
    """Without hooks or autograd a pass makes one rotor for its positions and every layer
    rotates its q and k in place (``RopeTable.rotate``, which copies, is never called); fed
    through the cache in chunks, past the window too, the logits are the hooked pass's over
    the whole text, which rotates copies step by step (up to float32 rounding)."""
    model = rope_gpt()  # a window of 16
    ids = torch.randint(40, (2, n), generator=torch.Generator().manual_seed(5))
    copies = []
    rotate = ROPE.rotate
    monkeypatch.setattr(ROPE, "rotate", lambda x, p: copies.append(p) or rotate(x, p))
    cache = model.new_cache(batch=2)
    with torch.no_grad():
        rows = [model._forward(ids[:, :first], cache)]
        rows += [model._forward(ids[:, s: s + chunk], cache) for s in range(first, n, chunk)]
    assert not copies
    full, _ = model.run_with_cache(ids, names_filter=[])  # (2, n, |V|) with the window's mask
    assert copies  # the hooked pass did rotate copies
    assert (torch.cat(rows, dim=1) - full).abs().max().item() < 1e-4


def test_autocast_falls_back_to_rotating_copies():
    """Under CPU autocast W_QKV yields bfloat16, not the rotor's precision: the pass rotates
    copies instead, and agrees with float32 to bfloat16's precision."""
    model, ids = rope_gpt(), torch.tensor([[3, 1, 4, 1, 5, 9]])
    with torch.no_grad():
        want = model(ids)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            got = model(ids)
    assert got.dtype == torch.bfloat16
    torch.testing.assert_close(got.float(), want, atol=0.05, rtol=0.05)


def test_a_table_first_made_while_generating_still_trains():
    """``generate`` runs in inference mode; the shared table of angles it makes first must
    still serve a training step with autograd afterwards (an inference tensor cannot be
    saved for backward)."""
    ROPE._tables.clear()
    model = rope_gpt()
    generate(model, [1, 2, 3], 40, seed=0)  # past the window: the table grows here
    assert ROPE._tables and not any(t.is_inference() for t in ROPE._tables.values())
    model.train()
    loss = model(torch.tensor([[1, 2, 3, 4, 5]])).logsumexp(-1).mean()
    loss.backward()  # would raise "Inference tensors cannot be saved for backward"
    assert all(p.grad is not None for p in model.parameters() if p.requires_grad)
    ids = generate(model.eval(), [1, 2, 3], 40, seed=0)
    assert ids == generate(model, [1, 2, 3], 40, seed=0, use_cache=False)
