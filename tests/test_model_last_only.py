"""``last_only``: a pass that unembeds only its last position (generation samples from y_N
alone; GPT-2's logits for a whole 1,024-token window take 206 MB). Its row is the full
pass's last row, the cache it fills is the same, hooks still see every position, and
generation, stepping and beam search write the same tokens as through the full logits."""

from __future__ import annotations

import pytest
import torch

from gptviz.generation import beam
from gptviz.generation.beam import beam_search, next_logits
from gptviz.generation.sampling import generate, step
from gptviz.model import GPT, GPTConfig, hooks
from gptviz.model.decode import Decoder

POSITIONALS = ["learned", "sinusoidal", "none", "rope"]
# float32: LayerNorm acts on each row alone (the same numbers), but W_U applied to one row
# is a matrix-vector product, which BLAS sums in another order than a matrix product of
# many rows; the two last rows are ~1e-7 apart, and a wrong row would be ~1 apart.
TOL = dict(atol=1e-5, rtol=1e-6)


def make_model(positional: str) -> GPT:
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=13, context_length=8, d_model=16, n_layer=2, n_head=2,
                          positional=positional)).eval()
    with torch.no_grad():  # logits of a few units, so that sampling is not near-uniform
        model.unembed.weight.mul_(4)
    return model


def full_then_last(monkeypatch) -> None:
    """Make ``last_only`` the old path: every position unembedded, then the last row kept."""
    forward = GPT._forward

    def old(self, ids, cache=None, last_only=False):
        logits = forward(self, ids, cache)  # (B, T, |V|)
        return logits[:, -1:] if last_only else logits

    monkeypatch.setattr(GPT, "_forward", old)


@pytest.mark.parametrize("positional", POSITIONALS)
@pytest.mark.parametrize("cached", [False, True])
def test_the_last_row_alone_is_the_full_passs_last_row(positional, cached):
    model = make_model(positional)
    ids = torch.randint(13, (2, 8), generator=torch.Generator().manual_seed(1))  # (B, T)
    caches = [model.new_cache(batch=2) if cached else None for _ in range(2)]
    with torch.no_grad():
        if cached:  # 5 tokens already in each cache: the pass sees positions 5 .. 7
            for cache in caches:
                model(ids[:, :5], cache)
            ids = ids[:, 5:]
        full = model(ids, caches[0])  # (2, T, |V|)
        last = model(ids, caches[1], last_only=True)  # (2, 1, |V|)
    assert last.shape == (2, 1, 13)
    torch.testing.assert_close(last, full[:, -1:], **TOL)
    assert (full[:, -1:] - full[:, -2:-1]).abs().max() > 0.1  # another row would not pass
    if cached:  # the cache is filled alike: the next pass goes on from the same keys
        assert caches[0].position == caches[1].position == 8
        assert torch.equal(caches[0].kv, caches[1].kv)


@pytest.mark.parametrize("positional", ["learned", "rope"])
def test_hooks_still_see_every_position(positional):
    """Hooked callers (the pages' captures) get what they got: every position's logits and
    final LayerNorm pass through their hooks, and the row returned is the hook's last."""
    model = make_model(positional)
    names = ["ln_final.hook_normalized", "hook_logits"]
    seen: dict[str, torch.Tensor] = {}
    with hooks(model, [(names, lambda x, n: seen.__setitem__(n, x.detach()))]), \
            torch.no_grad():
        last = model([3, 1, 4, 1, 5], last_only=True)  # (1, 1, |V|)
    assert seen["ln_final.hook_normalized"].shape == (1, 5, 16)
    assert seen["hook_logits"].shape == (1, 5, 13)
    assert torch.equal(last, seen["hook_logits"][:, -1:])
    full, _ = model.run_with_cache([3, 1, 4, 1, 5], names_filter=names)
    assert torch.equal(full, seen["hook_logits"])


@pytest.mark.parametrize("positional", POSITIONALS)
def test_generation_unembeds_one_position_a_pass(positional, monkeypatch):
    """Each pass of generation, a step, the next logits and beam search (past the window
    too) gives W_U one position per row, never the whole window. (On the module path:
    generation's lean decode step, which unembeds its one row alone, is held equal to it
    in tests/test_decode.py.)"""
    monkeypatch.setattr(Decoder, "of", classmethod(lambda cls, model: None))
    model = make_model(positional)
    rows = []
    handle = model.unembed.register_forward_hook(lambda m, x, y: rows.append(x[0].shape[1]))
    prompt = [3, 1, 4, 1, 5, 9, 2]
    try:
        generate(model, prompt, 6, seed=1)  # crosses the window of 8
        generate(model, prompt, 6, seed=1, use_cache=False)
        step(model, prompt + [6, 5, 3])
        next_logits(model, prompt + [6, 5, 3])
        for budget in (2**30, 0):  # k cached rows, or every beam's window afresh
            monkeypatch.setattr(beam, "KV_BYTES", budget)
            beam_search(model, prompt, 4, width=3)
    finally:
        handle.remove()
    assert len(rows) > 20 and set(rows) == {1}


@pytest.mark.parametrize("positional", POSITIONALS)
@pytest.mark.parametrize("use_cache", [True, False])
def test_generation_writes_the_old_paths_tokens(positional, use_cache, monkeypatch):
    """Seeded sampling and greedy decoding past the window, a step, and beam search: the
    same tokens as when every position was unembedded and the last row kept."""
    model, prompt = make_model(positional), [3, 1, 4, 1, 5]
    runs = []
    for old in (False, True):
        if old:
            full_then_last(monkeypatch)
        runs.append((
            generate(model, prompt, 30, temperature=1.0, top_k=8, seed=4, use_cache=use_cache),
            generate(model, prompt, 30, temperature=0, use_cache=use_cache),
            step(model, prompt + [6, 5, 3, 5], generator=torch.Generator().manual_seed(2)),
            beam_search(model, prompt, 6, width=3),
        ))
    (sampled, greedy, s, found), (sampled_0, greedy_0, s_0, found_0) = runs
    assert sampled == sampled_0 and greedy == greedy_0
    assert len(set(sampled[5:])) > 3  # sampling, not a constant: the test could fail
    assert s.chosen == s_0.chosen
    torch.testing.assert_close(s.logits, s_0.logits, **TOL)
    assert [b.tokens for b in found.steps] == [b.tokens for b in found_0.steps]
    assert [b.parents for b in found.steps] == [b.parents for b in found_0.steps]
