"""The Generation page and the Lesson decode as the engine does: through a KV cache of the
text (``TextCache``), reading only the ids it has not seen.

Its logits stay within 1e-4 of the module path's (a whole pass over the cropped window) for
any text grown a token at a time, cut back (Undo) and branched, past the context window
too; the page writes the same tokens as before (a full pass a token) and as ``generate``
with the same seed; a step inside the window reads one id; the cache's memory follows the
text, not the window.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gptviz.app.generation.state import History
from gptviz.checkpoints.folder import load_checkpoint
from gptviz.checkpoints.gpt2_weights import save_hf_gpt2
from gptviz.generation import sampling as gen
from gptviz.generation.sampling import Sampling, TextCache, generate, step_through
from gptviz.model import GPT, GPTConfig
from gptviz.model.decode import Decoder

TOL = dict(atol=1e-4, rtol=0)  # the bound; a wrong position or row is ~1 off
POSITIONALS = ["learned", "sinusoidal", "none", "rope"]
N_CTX = 8


def make_model(positional: str, vocab: int = 17) -> GPT:
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=vocab, context_length=N_CTX, d_model=16, n_layer=2,
                          n_head=2, positional=positional, bias=True)).eval()
    with torch.no_grad():  # logits of a few units and LayerNorms away from (1, 0)
        for p in model.parameters():
            p.add_(0.1 * torch.randn_like(p))
        model.unembed.weight.mul_(2)
    return model


MODELS = {p: make_model(p) for p in POSITIONALS}


def module_path(model: GPT, ids: list[int]) -> torch.Tensor:
    """y_N as ``step`` computed it before: one pass over the cropped window, no cache."""
    with torch.no_grad():
        return model(ids[-N_CTX:], last_only=True)[0, -1]


class Reads:
    """How many ids each pass reads: ``GPT._forward`` (its T) and ``Decoder.step`` (1)."""

    def __init__(self, monkeypatch) -> None:
        self.passes: list[tuple[str, int, bool]] = []  # (path, ids read, with a cache)
        forward, decode = GPT._forward, Decoder.step

        def modules(model, ids, cache=None, last_only=False):
            self.passes.append(("modules", ids.shape[1], cache is not None))
            return forward(model, ids, cache, last_only)

        def decoder(dec, token, cache):
            self.passes.append(("decoder", 1, True))
            return decode(dec, token, cache)

        monkeypatch.setattr(GPT, "_forward", modules)
        monkeypatch.setattr(Decoder, "step", decoder)

    def take(self) -> list[tuple[str, int, bool]]:
        out, self.passes[:] = list(self.passes), []
        return out


# an edit of the text: append an id, or cut back to a shorter prefix (Undo, a branch)
EDITS = st.lists(st.one_of(st.tuples(st.just("append"), st.integers(0, 16)),
                           st.tuples(st.just("cut"), st.integers(1, 6))), min_size=1,
                 max_size=30)


@pytest.mark.parametrize("positional", POSITIONALS)
@settings(max_examples=25, deadline=None)
@given(prompt=st.lists(st.integers(0, 16), min_size=1, max_size=10), edits=EDITS)
def test_any_text_grown_cut_and_branched_reads_the_module_paths_logits(positional, prompt,
                                                                       edits):
    model, cache = MODELS[positional], None
    cache = TextCache(model)
    ids = list(prompt)
    for kind, value in [("append", None)] + edits:
        if kind == "append" and value is not None:
            ids.append(value)
        elif kind == "cut":
            ids = ids[:max(1, len(ids) - value)]
        got = cache.logits(ids)
        torch.testing.assert_close(got, module_path(model, ids), **TOL)
        assert got.shape == (17,) and got.dtype == torch.float32
    if cache.cache is not None:  # what it holds is the text it read, inside the window
        assert cache.ids == tuple(ids) and len(ids) <= N_CTX
        assert cache.cache.length == cache.cache.position == len(ids)


def test_a_wrong_prefix_would_be_caught():
    """The check above can fail: the logits after another text differ by far more than TOL."""
    model = MODELS["learned"]
    a, b = module_path(model, [1, 2, 3]), module_path(model, [4, 2, 3])
    assert (a - b).abs().max() > 0.05


@pytest.mark.parametrize("positional", POSITIONALS)
@pytest.mark.parametrize("temperature, top_k, top_p, seed", [
    (1.0, None, None, 0), (1.3, 6, None, 3), (0.8, None, 0.9, 11), (0.0, None, None, 0)])
@pytest.mark.parametrize("prompt", [[3], [5, 1, 4, 1, 5, 9]])
def test_the_page_writes_the_same_tokens_as_before_and_as_generate(
        positional, temperature, top_k, top_p, seed, prompt):
    """20 tokens on the page (past the window of 8) equal the old path's (a full pass per
    token, ``step_through(use_cache=False)``) and, where the engine crops too (every model
    but RoPE, whose generate rolls its window), ``generate``'s with the same seed."""
    model = MODELS[positional]
    sampling = Sampling(temperature, top_k, top_p, seed)
    hist = History(("m", ""), list(prompt))
    for _ in range(20):
        hist.advance(model, sampling)
    old = [s.chosen for s in step_through(model, prompt, 20, temperature, top_k, top_p, seed,
                                          use_cache=False)]
    assert hist.ids == prompt + old
    cached = [s.chosen for s in step_through(model, prompt, 20, temperature, top_k, top_p,
                                             seed)]
    assert cached == old  # the Lesson's continuation
    if positional != "rope":
        assert hist.ids == generate(model, prompt, 20, temperature, top_k, top_p, seed)
    if temperature:
        assert len(set(old)) > 3  # drawn, not one repeated id: the test could fail


def test_the_pages_steps_are_step_by_step_within_the_bound():
    model, sampling = MODELS["learned"], Sampling(1.0, seed=2)
    hist = History(("m", ""), [2, 7])
    for _ in range(12):
        s = hist.preview(model, sampling)
        torch.testing.assert_close(s.logits, module_path(model, hist.ids), **TOL)
        want = gen.step(model, hist.ids, 1.0, generator=sampling.generator(len(hist.turns)))
        assert s.chosen == want.chosen and s.context == want.context
        assert s.cropped == want.cropped and s.top[0][0] == want.top[0][0]
        hist.advance(model, sampling)


def test_a_step_reads_only_the_new_id_inside_the_window(monkeypatch):
    """Next token, Generate n, Undo, and a branch then Generate n: inside the window every
    pass after the prompt's reads one id by the decoder; past it, the window is read
    afresh without a cache (the positions moved), as generate does."""
    model, sampling = MODELS["learned"], Sampling(seed=1)
    reads = Reads(monkeypatch)
    hist = History(("m", ""), [3, 1, 4])
    hist.preview(model, sampling)
    assert reads.take() == [("modules", 3, True)]  # the prompt, once
    for _ in range(4):  # 7 ids: inside the window; the first click takes the step shown
        hist.advance(model, sampling)
    assert reads.take() == [("decoder", 1, True)] * 3
    hist.undo()
    hist.undo()
    hist.advance(model, sampling)  # the cache is cut back, then reads the new id
    assert reads.take() == [("decoder", 1, True)]
    hist.branch(1, 9, hist.path[:1], model)  # step 2 takes id 9: its logits are kept
    reads.take()
    hist.start(2)
    me = hist.claim()
    while hist.stream_step(model, sampling, me):  # "Branch and continue"
        pass
    assert reads.take() == [("decoder", 1, True), ("decoder", 1, True)]  # 5, 6 of the prefix
    assert len(hist.ids) == 7
    for _ in range(3):  # steps after 7 and 8 ids; after 9, past the window: recomputed
        hist.advance(model, sampling)
    assert reads.take() == [("decoder", 1, True), ("decoder", 1, True),
                            ("modules", N_CTX, False)]
    assert hist.reader.cache is None  # past the window nothing is kept


def test_the_cache_grows_with_the_text_not_the_window():
    """Room for the text read, doubled as it grows (64, 128, …), at most the window."""
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=11, context_length=300, d_model=8, n_layer=1,
                          n_head=1)).eval()
    cache = TextCache(model)
    ids = [1] * 5
    rooms = []
    for n in (5, 64, 65, 130, 260, 300):
        ids = (ids * 300)[:n]
        cache.logits(ids)
        rooms.append(cache.cache.capacity)
        torch.testing.assert_close(cache.logits(ids), module_path_long(model, ids), **TOL)
    assert rooms == [64, 64, 128, 256, 300, 300]
    cache.logits(ids + [2])  # past the window: released
    assert cache.cache is None and cache.ids == ()


def module_path_long(model: GPT, ids: list[int]) -> torch.Tensor:
    with torch.no_grad():
        return model(ids[-model.config.context_length:], last_only=True)[0, -1]


def test_bad_ids_say_what_is_wrong_and_keep_the_cache_usable():
    model = MODELS["learned"]
    cache = TextCache(model)
    cache.logits([1, 2])
    with pytest.raises(ValueError, match="outside the vocabulary"):
        cache.logits([1, 2, 99])
    torch.testing.assert_close(cache.logits([1, 2, 3]), module_path(model, [1, 2, 3]), **TOL)
    with pytest.raises(ValueError, match="prompt is empty"):
        cache.logits([])


@pytest.fixture(scope="module")
def gpt2_shaped(tmp_path_factory) -> GPT:
    """A tiny model of GPT-2's format read back from a Hugging Face folder: 12 layers of
    12 heads, GPT-2's 50,257 ids, a window of 64."""
    torch.manual_seed(1)
    folder = tmp_path_factory.mktemp("models") / "tiny-gpt2"
    save_hf_gpt2(folder, GPT(GPTConfig(vocab_size=50257, context_length=64, d_model=24,
                                       n_layer=12, n_head=12, activation="gelu_tanh")))
    return load_checkpoint(Path(folder)).model.eval()


@pytest.mark.parametrize("seed", [0, 5])
def test_a_gpt2_shaped_model_writes_the_same_text(gpt2_shaped, seed):
    """The page's 70 tokens (past GPT-2's-format window of 64) are generate's and the old
    path's, each step's logits within the bound."""
    model, prompt = gpt2_shaped, [464, 3139, 286, 4881, 318]  # "The capital of France is"
    sampling = Sampling(1.0, seed=seed)
    hist = History(("gpt2", ""), prompt)
    for _ in range(70):
        s = hist.preview(model, sampling)
        torch.testing.assert_close(s.logits, module_path_long(model, hist.ids), **TOL)
        hist.advance(model, sampling)
    assert hist.ids == generate(model, prompt, 70, seed=seed)
    assert hist.ids[5:] == [s.chosen for s in step_through(model, prompt, 70, seed=seed,
                                                            use_cache=False)]
