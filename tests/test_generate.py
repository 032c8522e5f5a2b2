"""Next-token distributions, step traces, KV-cache generation and sampling."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gptviz.generation.sampling import (
    encode_prompt,
    entropy,
    generate,
    next_token_probs,
    sample_counts,
    step,
    step_through,
)
from gptviz.model import GPT, GPTConfig
from gptviz.tokenizers.char import CharTokenizer


def make_model(positional: str = "learned") -> GPT:
    torch.manual_seed(0)
    config = GPTConfig(vocab_size=13, context_length=8, d_model=16, n_layer=2, n_head=2,
                       positional=positional)
    model = GPT(config).eval()
    with torch.no_grad():  # larger logits than at init, so sampling is not near-uniform
        model.unembed.weight.mul_(20)
    return model


# ---- the distribution ------------------------------------------------------------------
def test_temperature_one_is_softmax_and_zero_is_greedy():
    logits = torch.tensor([1.0, 3.0, 2.0])
    torch.testing.assert_close(next_token_probs(logits, 1.0), torch.softmax(logits, 0))
    assert next_token_probs(logits, 0).tolist() == [0.0, 1.0, 0.0]
    cold = next_token_probs(logits, 0.05)  # T -> 0 approaches greedy
    assert cold[1] > 0.99


def test_top_k_and_top_p_golden():
    probs = torch.tensor([0.5, 0.3, 0.2])
    logits = probs.log()
    two = torch.tensor([0.625, 0.375, 0.0])  # the best two, renormalised
    torch.testing.assert_close(next_token_probs(logits, 1.0, top_k=2), two)
    torch.testing.assert_close(next_token_probs(logits, 1.0, top_p=0.6), two)
    torch.testing.assert_close(next_token_probs(logits, 1.0, top_p=0.5), torch.tensor([1.0, 0, 0]))
    torch.testing.assert_close(next_token_probs(logits, 1.0, top_p=1.0), probs)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(-20, 20), min_size=1, max_size=30), st.floats(0, 5),
       st.one_of(st.none(), st.integers(1, 40)), st.one_of(st.none(), st.floats(0.01, 1.0)))
def test_distribution_properties(values, temperature, top_k, top_p):
    logits = torch.tensor(values)
    p = next_token_probs(logits, temperature, top_k, top_p)
    assert (p >= 0).all() and p.sum().item() == pytest.approx(1.0, abs=1e-5)
    if top_k is not None:
        assert (p > 0).sum() <= top_k
    assert p[logits.argmax()] > 0  # the best id always survives


@pytest.mark.parametrize("kw,message", [
    (dict(temperature=-0.1), "temperature must be >= 0"),
    (dict(temperature=float("nan")), "temperature"),
    (dict(top_p=0.0), r"top_p must be in \(0, 1\]"),
    (dict(top_p=1.5), r"top_p must be in \(0, 1\]"),
    (dict(top_k=0), "top_k"),
])
def test_bad_sampling_settings_are_clear_value_errors(kw, message):
    with pytest.raises(ValueError, match=message):
        next_token_probs(torch.zeros(3), **kw)
    with pytest.raises(ValueError, match=message):
        generate(make_model(), [1], 2, **kw)


def test_entropy():
    assert entropy(torch.tensor([1.0, 0.0])) == 0.0
    assert entropy(torch.full((4,), 0.25)) == pytest.approx(math.log(4))


def test_sample_counts_follow_the_distribution():
    probs = torch.tensor([0.1, 0.0, 0.6, 0.3])
    counts = sample_counts(probs, 20_000, seed=0)
    assert counts.sum() == 20_000 and counts[1] == 0
    torch.testing.assert_close(counts / 20_000, probs, atol=0.02, rtol=0)
    assert torch.equal(counts, sample_counts(probs, 20_000, seed=0))


# ---- steps and generation --------------------------------------------------------------
def test_step_shows_its_work():
    model = make_model()
    s = step(model, [1, 2, 3], temperature=0.7, top_k=5, generator=torch.Generator().manual_seed(0))
    assert s.context == [1, 2, 3] and s.cropped == 0
    torch.testing.assert_close(s.logits, model([1, 2, 3])[0, -1])
    torch.testing.assert_close(s.probs, next_token_probs(s.logits, 0.7, top_k=5))
    assert [i for i, _ in s.top[:5]] == s.logits.topk(5).indices.tolist()
    assert s.probs[s.chosen] > 0 and s.entropy == pytest.approx(entropy(s.probs))


def test_long_contexts_are_cropped_to_the_window():
    s = step(make_model(), list(range(12)) + [0, 1], temperature=0)
    assert s.cropped == 6 and s.context == list(range(6, 12)) + [0, 1]


@pytest.mark.parametrize("positional", ["learned", "sinusoidal", "none"])
@pytest.mark.parametrize("kw", [dict(temperature=1.0), dict(temperature=0.8, top_k=4, top_p=0.9),
                                dict(temperature=0)])
def test_kv_cache_gives_the_same_tokens(positional, kw):
    model = make_model(positional)
    for prompt in ([5], [1, 2, 3, 4, 5, 6, 7, 8, 9]):  # the second starts past the window
        cached = generate(model, prompt, 20, seed=7, use_cache=True, **kw)
        plain = generate(model, prompt, 20, seed=7, use_cache=False, **kw)
        assert cached == plain and len(cached) == len(prompt) + 20


def test_step_through_matches_generate():
    model = make_model()
    steps = list(step_through(model, [3], 12, temperature=1.0, seed=4))
    assert [s.chosen for s in steps] == generate(model, [3], 12, seed=4)[1:]
    assert steps[-1].cropped == 4  # 12 ids at the last step (prompt + 11), window of 8


def test_stop_id_ends_generation():
    model = make_model()
    greedy = generate(model, [1], 10, temperature=0)
    stop = greedy[3]
    assert generate(model, [1], 10, temperature=0, stop_id=stop)[-1] == stop


def test_empty_prompt_and_bad_ids():
    tok = CharTokenizer()
    tok.train("abc")
    assert encode_prompt(tok, "") == [tok.special_tokens["<|BOS|>"]]
    assert encode_prompt(tok, "ab") == tok.encode("ab")
    with pytest.raises(ValueError, match="prompt is empty"):
        generate(make_model(), [], 3)
    with pytest.raises(ValueError, match="outside the vocabulary"):
        generate(make_model(), [1, 13], 3)
    with pytest.raises(ValueError, match="outside the vocabulary"):
        step(make_model(), [99])


@pytest.mark.parametrize("temperature, top_k, top_p", [(1.0, None, None), (0.7, 5, 0.9),
                                                        (0.0, None, None)])
def test_the_page_and_generate_write_the_same_text_for_a_seed(temperature, top_k, top_p):
    """One seeding rule (Sampling.generator): n clicks of "Next token" on the Generation
    page and generate() with the same seed give the same ids, past the context window."""
    from gptviz.app.generation.state import History
    from gptviz.generation.sampling import Sampling

    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=12, context_length=8, d_model=16, n_layer=1,
                          n_head=2)).eval()
    sampling = Sampling(temperature, top_k, top_p, seed=5)
    hist = History(("tiny", "prompt"), [1, 2, 3])
    for _ in range(12):
        hist.advance(model, sampling)
    assert hist.ids == generate(model, [1, 2, 3], 12, temperature, top_k, top_p, seed=5)
