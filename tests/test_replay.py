"""The Training replay's engine (gptviz.analysis.replay): where each step's greedy sample
starts, and that on induction-2layer the trained model's sample copies the repeat of the data
while the
seed's initialisation does not."""

from __future__ import annotations

import pytest

from gptviz.analysis.replay import (
    MIN_REPEAT,
    copy_prompt_length,
    final_step,
    model_at,
    replay_steps,
)
from gptviz.app.learning.controls import split_encode
from gptviz.checkpoints.folder import bundled_models, load_checkpoint
from gptviz.data import read_corpus
from gptviz.generation.sampling import generate

SAMPLE = 30  # greedy tokens, as the page writes


def test_the_prompt_ends_on_the_first_token_of_the_longest_repeat():
    short, long_ = "abcdefgh", "ABCDEFGHIJKL"  # both at least MIN_REPEAT long
    text = f"{short}|{short}-{long_}|{long_}."
    assert copy_prompt_length(list(text)) == text.index(f"|{long_}") + 2  # the longer wins
    assert copy_prompt_length(list(f"xy{short}|{short}")) == 2 + len(short) + 2
    assert copy_prompt_length(list("abcdefg|abcdefg")) is None  # 7 < MIN_REPEAT
    assert MIN_REPEAT == 8
    # a stretch may only be copied from before it: "aaaa…" repeats its first half
    assert copy_prompt_length([1] * 20) == 11
    assert copy_prompt_length(list(range(40))) is None


@pytest.mark.skipif("induction-2layer" not in bundled_models(),
                    reason="induction-2layer is not bundled")
def test_the_induction_model_copies_the_data_s_repeat_once_trained():
    ckpt = load_checkpoint(bundled_models()["induction-2layer"])
    text = read_corpus("induction")
    first, second = text.split("\n")[0].split("|")  # the corpus's first line: X|X
    assert first == second and len(first) >= MIN_REPEAT
    ids, _ = split_encode(ckpt, text, True)
    window = ids[:ckpt.config.context_length].tolist()  # the page's default window
    p = copy_prompt_length(window)
    assert ckpt.tokenizer.decode(window[:p]) == f"{first}|{first[0]}"

    def sample(step: int) -> str:
        out = generate(model_at(ckpt, step), window[:p], SAMPLE, temperature=0.0)
        return ckpt.tokenizer.decode(out[p:])

    steps = replay_steps(ckpt)
    assert steps[-1] == final_step(ckpt.card)
    for step in steps[-2:]:  # the last snapshot and the checkpoint's own weights
        assert sample(step).startswith(first[1:] + "\n"), step
    assert not sample(0).startswith(first[1:4])  # the initialisation copies nothing
