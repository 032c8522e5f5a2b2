"""The standard induction test (gptviz.analysis.induction): its inputs, and its scores against a
direct loop over the attention patterns and the logits."""

from __future__ import annotations

import pytest
import torch

from gptviz.analysis.induction import (
    STANDARD_LENGTHS,
    induction_test,
    ordinary_ids,
    repeated_random,
    standard_induction,
)
from gptviz.model.names import act_name
from gptviz.tokenizers import CharTokenizer
from tests.helpers import tiny_gpt


@pytest.fixture(scope="module")
def char_tok():
    tok = CharTokenizer()
    tok.train("abcdefghij0123456789|\n .,")
    return tok


def test_ordinary_ids_are_letters_and_digits_only(char_tok):
    shown = {char_tok.id_to_string(i) for i in ordinary_ids(char_tok)}
    assert shown == set("abcdefghij0123456789")
    assert not set(ordinary_ids(char_tok)) & set(char_tok.special_tokens.values())


def test_repeated_random_repeats_once_with_no_separator():
    ids = repeated_random([5, 6, 7], length=10, n=4, seed=3)
    assert ids.shape == (4, 20)
    assert torch.equal(ids[:, :10], ids[:, 10:])
    assert set(ids.flatten().tolist()) <= {5, 6, 7}
    assert torch.equal(ids, repeated_random([5, 6, 7], length=10, n=4, seed=3))  # seeded
    assert not torch.equal(ids, repeated_random([5, 6, 7], length=10, n=4, seed=4))


def test_scores_and_copy_accuracy_equal_a_direct_loop(char_tok):
    model = tiny_gpt(char_tok.vocab_size, seed=1, context_length=24, n_layer=2)
    length, n = 10, 5
    result = induction_test(model, char_tok, length, n=n, seed=7)
    ids = repeated_random(ordinary_ids(char_tok), length, n, seed=7)
    logits, cache = model.run_with_cache(ids)
    for layer in range(2):
        pattern = cache[act_name("pattern", layer)]  # (n, H, 2L, 2L)
        for head in range(2):
            direct = sum(pattern[s, head, i, i - length + 1].item()
                         for s in range(n) for i in range(length, 2 * length)) / (n * length)
            assert result.scores[layer, head].item() == pytest.approx(direct, abs=1e-6)
    hits = sum(int(logits[s, i].argmax() == ids[s, i + 1])
               for s in range(n) for i in range(length, 2 * length - 1))
    assert result.copy_accuracy == pytest.approx(hits / (n * (length - 1)))
    layer, head, score = result.best
    assert score == result.scores.max().item() and result.scores[layer, head] == score


def test_an_untrained_model_neither_attends_back_nor_copies():
    tok = CharTokenizer()
    tok.train("abcdefghijklmnopqrstuvwxyz")
    model = tiny_gpt(tok.vocab_size, context_length=40, n_layer=2)
    low = induction_test(model, tok, 20)
    assert low.best[2] < 0.3 and low.copy_accuracy < 0.3


def test_standard_lengths_that_do_not_fit_are_skipped(char_tok):
    short = tiny_gpt(char_tok.vocab_size, context_length=24)
    assert [r.length for r in standard_induction(short, char_tok)] == [10]
    assert STANDARD_LENGTHS == (10, 20)
    with pytest.raises(ValueError, match="do not fit"):
        induction_test(short, char_tok, 20)


def test_a_vocabulary_without_letters_or_digits_gets_a_message():
    tok = CharTokenizer()
    tok.train("|.,;")
    with pytest.raises(ValueError, match="no letter-or-digit tokens"):
        induction_test(tiny_gpt(tok.vocab_size, context_length=24), tok, 5)
