"""The pages' shared forward passes: a page whose activations a stored pass of the same
prompt already holds reads that pass (one copy, one forward) and gets exactly what its own
pass would have given; the untrained twin is the trainer's step 0 and is not kept."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from gptviz.app.shared import cache as model_cache
from gptviz.app.shared.picker import Picked
from gptviz.checkpoints import Checkpoint, initial_model
from gptviz.model import GPTConfig
from gptviz.model.names import block_page_names, embedding_names
from gptviz.tokenizers.char import CharTokenizer

LESSON = list(dict.fromkeys([*block_page_names(2), "blocks.1.attn.hook_q"]))


@pytest.fixture
def picked():
    tok = CharTokenizer()
    tok.train("abcdefgh ")
    model = initial_model(GPTConfig(vocab_size=tok.vocab_size, context_length=16, d_model=16,
                                    n_layer=2, n_head=2), 3)
    model.eval()
    model_cache._shared().clear()
    yield Picked("tiny-cache-test", Checkpoint(model, tok), bundled=True)
    model_cache._shared().clear()


def _forwards() -> list:
    """The stored forward passes (a ByteLRU's keys: (function, model, args))."""
    stored = model_cache._shared().keys()
    return [k for k in stored if k[0] == model_cache._forward.__qualname__]


def test_a_subset_reads_the_stored_pass_and_equals_its_own(picked):
    ids = picked.checkpoint.tokenizer.encode("bad cafe")
    wide, wide_last = model_cache.activations(picked, ids, LESSON)
    names = [*embedding_names(), "blocks.1.hook_resid_post"]
    narrow, last = model_cache.activations(picked, ids, names[::-1])  # order asked: any
    assert len(_forwards()) == 1  # no second pass stored
    assert list(narrow) == names  # forward order, only those asked for
    logits, direct = picked.checkpoint.model.run_with_cache(ids, names_filter=names)
    for name in names:
        assert np.shares_memory(narrow[name].numpy(), wide[name].numpy())  # one copy
        torch.testing.assert_close(narrow[name], direct[name], rtol=0, atol=0)
    np.testing.assert_array_equal(last, logits[0, -1].numpy())
    assert last is wide_last


def test_another_prompt_or_a_name_not_kept_runs_its_own_pass(picked):
    tok = picked.checkpoint.tokenizer
    model_cache.activations(picked, tok.encode("bad cafe"), LESSON)
    model_cache.activations(picked, tok.encode("bad"), embedding_names())  # another prompt
    model_cache.activations(picked, tok.encode("bad cafe"),
                            ["blocks.0.attn.hook_scores"])  # not in LESSON
    assert len(_forwards()) == 3
    assert model_cache._covering(picked, tuple(tok.encode("bad cafe")), ()) is None  # "all"


def test_the_untrained_twin_is_step_0_and_not_kept(picked):
    picked.checkpoint.card["train_config"] = {"seed": 3}
    a, b = model_cache.untrained_twin(picked), model_cache.untrained_twin(picked)
    assert a is not b  # built at each call: nothing holds its weights afterwards
    want = initial_model(picked.checkpoint.config, 3).state_dict()
    for name, tensor in a.state_dict().items():
        torch.testing.assert_close(tensor, want[name], rtol=0, atol=0)
    assert not any(p.requires_grad for p in a.parameters())
