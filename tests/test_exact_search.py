"""The exact search for the most probable n-token text (gptviz.generation.exact) against
brute force: every one of the |V|ⁿ texts of a tiny model scored by plain forward passes.
It finds the best text whatever the known text it is pruned by, also past the context
window, and says "not checked" (never a wrong answer) at its caps and where it cannot run."""

from __future__ import annotations

import itertools

import pytest
import torch

from gptviz.generation.beam import beam_search
from gptviz.generation.exact import Exact, most_probable
from gptviz.model import GPT, GPTConfig
from tests.test_beam import bigram_model


def peaked(positional: str, seed: int, vocab: int = 5) -> GPT:
    """A two-layer model, N = 8, with logits large enough that beams and the best differ."""
    torch.manual_seed(seed)
    model = GPT(GPTConfig(vocab_size=vocab, context_length=8, d_model=16, n_layer=2,
                          n_head=2, positional=positional)).eval()
    with torch.no_grad():
        model.unembed.weight.mul_(6)
    return model


def text_logprob(model: GPT, prompt: list[int], text: tuple[int, ...]) -> float:
    """log P(text | prompt), one plain forward pass per token on its last N ids."""
    seq, total = list(prompt), 0.0
    n_ctx = model.config.context_length
    for t in text:
        with torch.no_grad():
            y = model(seq[-n_ctx:])[0, -1].double()  # (|V|,)
        total += float(torch.log_softmax(y, -1)[t])
        seq.append(t)
    return total


def brute_force(model: GPT, prompt: list[int], n: int) -> tuple[tuple[int, ...], float]:
    """The most probable n-token text and its log P, over all |V|ⁿ of them (each prefix's
    next-token log-probabilities from one plain forward pass on its last N ids)."""
    n_ctx = model.config.context_length
    scored = {(): 0.0}
    for _ in range(n):
        grown = {}
        for text, score in scored.items():
            with torch.no_grad():
                y = model((list(prompt) + list(text))[-n_ctx:])[0, -1].double()  # (|V|,)
            for t, lp in enumerate(torch.log_softmax(y, -1).tolist()):
                grown[text + (t,)] = score + lp
        scored = grown
    best = max(scored, key=scored.get)
    return best, scored[best]


def assert_finds(found: Exact, model: GPT, prompt: list[int], n: int) -> None:
    best, score = brute_force(model, prompt, n)
    assert found.checked
    # float32 logits computed in another order (a cache, a batch): ~1e-6 apart
    assert found.score == pytest.approx(score, abs=1e-5)
    assert text_logprob(model, prompt, found.tokens) == pytest.approx(score, abs=1e-5)
    assert found.tokens == best


@pytest.mark.parametrize("positional", ["learned", "sinusoidal", "none", "rope"])
@pytest.mark.parametrize("seed", range(3))
def test_the_search_finds_the_brute_force_best_pruned_by_the_beam(positional, seed):
    model, prompt, n = peaked(positional, seed), [seed % 5, 2], 4
    beams = beam_search(model, prompt, n, 2)
    found = most_probable(model, prompt, n, beams.tokens(n - 1, 0), beams.steps[-1].scores[0])
    assert_finds(found, model, prompt, n)
    assert found.score >= beams.steps[-1].scores[0] - 1e-6


@pytest.mark.parametrize("seed", range(3))
def test_any_known_text_only_prunes(seed):
    """A poor known text prunes little, the best one prunes most: the answer is the same."""
    model, prompt, n = peaked("learned", seed), [1], 3
    best, score = brute_force(model, prompt, n)
    worst = min(itertools.product(range(5), repeat=n),
                key=lambda t: text_logprob(model, prompt, t))
    loose = most_probable(model, prompt, n, worst, text_logprob(model, prompt, worst))
    tight = most_probable(model, prompt, n, best, score + 1e-9)
    assert_finds(loose, model, prompt, n)
    assert tight.tokens == best and tight.nodes <= loose.nodes


@pytest.mark.parametrize("seed", range(2))
def test_past_the_context_window_each_prefix_reads_its_last_window(seed):
    model, prompt, n = peaked("learned", seed), [3, 1, 4, 1, 0, 2, 4], 3  # 7 + 2 > N = 8
    beams = beam_search(model, prompt, n, 1)
    found = most_probable(model, prompt, n, beams.tokens(n - 1, 0), beams.steps[-1].scores[0])
    assert_finds(found, model, prompt, n)


def test_the_search_finds_the_text_a_narrow_beam_pruned():
    """test_beam's bigram model: width 2 drops greedy's prefix 0 → 1 at step 2 and ends
    5 log 13 below it; the exact search finds greedy's text 1 5 10 10 10 10."""
    model = bigram_model({0: {1: 0.5, 2: 0.45, 3: 0.05},
                          1: {5: 0.22, 6: 0.2, 9: 0.2, 11: 0.19, 12: 0.19},
                          2: {7: 0.5, 8: 0.5}, 5: {10: 1.0}, 10: {10: 1.0}})
    narrow = beam_search(model, [0], 6, 2)
    found = most_probable(model, [0], 6, narrow.tokens(5, 0), narrow.steps[-1].scores[0])
    assert found.checked and found.tokens == (1, 5, 10, 10, 10, 10)
    assert found.score > narrow.steps[-1].scores[0] + 5


def test_the_caps_say_not_checked():
    model, prompt, n = peaked("learned", 0, vocab=7), [1, 2], 4
    beams = beam_search(model, prompt, n, 1)
    args = (model, prompt, n, beams.tokens(n - 1, 0), beams.steps[-1].scores[0] - 20)
    full = most_probable(*args)
    assert full.checked and full.nodes > 10
    for capped in (most_probable(*args, max_nodes=10), most_probable(*args, max_work=10**7)):
        assert not capped.checked and capped.tokens is None and capped.score is None
        assert "cap" in capped.reason


def test_a_rope_model_past_its_window_is_not_checked():
    model = peaked("rope", 0)
    found = most_probable(model, list(range(5)) * 2, 2, [0, 0], -50.0)
    assert not found.checked and "RoPE" in found.reason and found.tokens is None


@pytest.mark.parametrize("n, known, message", [(0, [], "at least 1 token"),
                                               (2, [1], "has 1 tokens, not n = 2")])
def test_bad_arguments_are_clear_value_errors(n, known, message):
    with pytest.raises(ValueError, match=message):
        most_probable(peaked("learned", 0), [1], n, known, 0.0)
