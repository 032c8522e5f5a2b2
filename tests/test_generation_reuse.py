"""The Generation page does each piece of work once: the step it shows before a click is the
one "Next token" takes, without a second forward pass; the replay of the step just taken
reuses its logits; a small model's passes run on one intra-op thread, and the thread count is
put back however sessions overlap."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import pytest
import torch

from gptviz.app.generation.state import History, Sampling
from gptviz.app.serving.threads import is_small, one_thread
from gptviz.generation import sampling as gen
from gptviz.generation.beam import next_logits
from gptviz.model import GPT
from gptviz.model.decode import Decoder
from tests.helpers import tiny_gpt


@pytest.fixture(scope="module")
def tiny():
    return tiny_gpt(12, context_length=6)


@contextlib.contextmanager
def passes(model) -> Iterator[list]:
    """The forward passes ``model`` runs inside the block, one entry each: through its
    modules (``GPT._forward``, which ``model(ids)`` calls too) or by the decoding step."""
    calls: list = []
    forward, decode = GPT._forward, Decoder.step

    def modules(self, *args, **kwargs):
        if self is model:
            calls.append("modules")
        return forward(self, *args, **kwargs)

    def decoder(self, *args, **kwargs):
        calls.append("decoder")
        return decode(self, *args, **kwargs)

    GPT._forward, Decoder.step = modules, decoder
    try:
        yield calls
    finally:
        GPT._forward, Decoder.step = forward, decode


def test_a_click_costs_one_forward_pass(tiny):
    h, s = History(("tiny", ""), [1, 2]), Sampling(temperature=0.8, seed=5)
    with passes(tiny) as calls:
        shown = h.preview(tiny, s)  # the page shows the next step
        turn = h.advance(tiny, s)  # the click takes it
        replay = h.step(0, tiny.config.context_length)  # the page draws the step taken
        ahead = h.preview(tiny, s)  # and the one after it
    assert len(calls) == 2  # shown and ahead: the click and the replay reuse them
    direct = gen.step(tiny, [1, 2], 0.8, generator=s.generator(0))
    assert turn.chosen == shown.chosen == replay.chosen == direct.chosen
    assert torch.equal(replay.logits, direct.logits)
    assert torch.allclose(replay.logits, next_logits(tiny, [1, 2]), atol=1e-6)
    assert torch.allclose(replay.probs, direct.probs)
    assert ahead.context == [1, 2, turn.chosen]


def test_reuse_changes_no_token(tiny):
    """A text grown click by click with the page's previews in between is the text grown
    without them, and the text ``generate`` writes with the same seed."""
    s = Sampling(temperature=1.3, top_k=8, seed=2)
    shown, plain = History(("tiny", ""), [3]), History(("tiny", ""), [3])
    for _ in range(9):  # crosses the context window (6)
        shown.preview(tiny, s)
        shown.advance(tiny, s)
        shown.step(len(shown.turns) - 1, 6)
        plain.advance(tiny, s)
    assert shown.ids == plain.ids == gen.generate(tiny, [3], 9, 1.3, top_k=8, seed=2)


def test_the_kept_step_is_not_reused_for_other_settings_or_text(tiny):
    h = History(("tiny", ""), [1])
    a = h.preview(tiny, Sampling(seed=1))
    b = h.preview(tiny, Sampling(seed=2))
    assert b is not a and b.chosen == gen.step(tiny, [1], generator=Sampling(seed=2)
                                               .generator(0)).chosen
    h.advance(tiny, Sampling(seed=2))
    assert h.preview(tiny, Sampling(seed=2)).context == h.ids  # the new text's next step
    h.undo()
    again = h.preview(tiny, Sampling(seed=2))  # back to the prompt alone
    assert again.context == [1] and again.chosen == b.chosen
    assert h.preview(tiny_gpt(12, seed=1, context_length=6), Sampling(seed=2)) is not again


def test_one_thread_is_put_back_after_overlapping_sessions():
    before, small = torch.get_num_threads(), torch.nn.Linear(2, 2)
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    seen: dict[str, int] = {}

    def first() -> None:
        with one_thread(small):
            seen["a"] = torch.get_num_threads()
            a_in.set()
            b_in.wait(10)
        a_out.set()

    def second() -> None:  # enters after the first, leaves after it
        a_in.wait(10)
        with one_thread(small):
            seen["b"] = torch.get_num_threads()
            b_in.set()
            a_out.wait(10)

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    later = threading.Thread(target=lambda: seen.update(later=torch.get_num_threads()))
    later.start()
    later.join()
    assert seen == {"a": 1, "b": 1, "later": before}
    assert torch.get_num_threads() == before


def test_a_large_model_keeps_its_threads():
    big = torch.nn.Linear(4000, 4000, device="meta")  # 16M parameters, no memory
    assert not is_small(big)
    before = torch.get_num_threads()
    with one_thread(big):
        assert torch.get_num_threads() == before
