"""What the pages keep and make stays small with a GPT-2-sized model (|V| = 50,257).

- The Embeddings page's "Trained vs untrained" draws only the rows of the untrained E it
  shows, never the untrained model (124M parameters): its numbers equal the full twin's,
  ``initial_model(config, seed)``, exactly.
- A Generation page Turn keeps a few numbers, not the step's |V| logits; a replayed step's
  logits are recomputed, and a link rebuilds the same Turns.
- Beam search and teacher forcing never make more than ``LOGIT_BYTES`` of logits in one
  pass, and give the same results as in one pass.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from gptviz.analysis import core as analysis
from gptviz.app.embeddings.figures import drawn_rows
from gptviz.app.embeddings.fresh import untrained_pca
from gptviz.app.embeddings.untrained import fresh_embedding, fresh_neighbours, fresh_rows
from gptviz.app.generation.state import History
from gptviz.checkpoints.folder import initial_model, load_checkpoint, training_seed
from gptviz.checkpoints.gpt2_weights import save_hf_gpt2
from gptviz.generation import beam
from gptviz.generation.sampling import Sampling, generate
from gptviz.model import GPT, GPTConfig
from tests.helpers import app_test, array_of, figures, rerun, tiny_gpt

CONFIGS = {  # d_model a multiple of 16 or not; tied or not; every kind of position
    "tied, d=23": dict(vocab_size=51, context_length=9, d_model=23, n_layer=2, n_head=1),
    "untied, no bias": dict(vocab_size=65, context_length=16, d_model=24, n_layer=2, n_head=3,
                            tie_embeddings=False, bias=False),
    "sinusoidal, d=2": dict(vocab_size=7, context_length=4, d_model=2, n_layer=1, n_head=1,
                            positional="sinusoidal"),
    "rope, gelu_tanh": dict(vocab_size=300, context_length=32, d_model=12, n_layer=3, n_head=2,
                            positional="rope", activation="gelu_tanh"),
}


@pytest.mark.parametrize("name", CONFIGS)
@pytest.mark.parametrize("chunk", [16, 48, 2**20])  # pieces of E smaller and larger than it
@pytest.mark.parametrize("seed", [0, 1337])
def test_untrained_rows_equal_the_full_twin(name, chunk, seed):
    config = GPTConfig(**CONFIGS[name])
    E = initial_model(config, seed).embed.weight.detach().numpy()  # (|V|, d)
    fe = fresh_embedding(config, seed, chunk)
    np.testing.assert_array_equal(fresh_rows(fe, range(config.vocab_size), chunk), E)
    ids = [config.vocab_size - 1, 0, 2]  # any order, the last row included
    np.testing.assert_array_equal(fresh_rows(fe, ids, chunk), E[ids])
    for token in (0, config.vocab_size - 1):
        got_ids, got = fresh_neighbours(fe, token, 4, chunk)
        want_ids, want = analysis.nearest_neighbours(E, token, 4)
        assert got_ids.tolist() == want_ids.tolist()
        np.testing.assert_allclose(got, want, atol=1e-6)


def test_untrained_pca_of_a_small_vocabulary_is_the_twins():
    config = GPTConfig(**CONFIGS["untied, no bias"])
    E = initial_model(config, 1337).embed.weight.detach()
    coords, ratio = untrained_pca(fresh_embedding(config, 1337), [3, 5], 2)
    want_coords, want_ratio = analysis.pca(E, 2)
    np.testing.assert_array_equal(coords, want_coords)
    np.testing.assert_array_equal(ratio, want_ratio)


def test_gpt2_small_shapes_keep_a_generator_state_and_the_drawn_rows():
    """The recorder builds GPT(config) on the meta device: no parameter holds a number."""
    config = GPTConfig(vocab_size=50257, context_length=1024, d_model=768, n_layer=12,
                       n_head=12, activation="gelu_tanh")  # GPT-2 small's shapes
    fe = fresh_embedding(config, 1337, chunk=2**20)
    assert (fe.rows, fe.cols, fe.std) == (50257, 768, 0.02)
    assert fe.state.numel() < 10_000  # the generator's state: all it keeps
    coords, _ = untrained_pca(fe, [50256], 2)
    assert np.isfinite(coords).all(axis=1).sum() == len(np.union1d(drawn_rows(50257), [50256]))


@pytest.fixture(scope="module")
def models_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    torch.manual_seed(0)
    save_hf_gpt2(root / "tiny-gpt2", GPT(GPTConfig(
        vocab_size=50257, context_length=64, d_model=24, n_layer=12, n_head=12,
        activation="gelu_tanh")))
    return root


def test_trained_vs_untrained_with_a_gpt2_vocabulary(models_dir, monkeypatch):
    """The page's untrained numbers are the full twin's, and no twin is built."""
    monkeypatch.setenv("GPTVIZ_MODELS", str(models_dir))
    monkeypatch.setenv("GPTVIZ_HF_CACHE", "0")
    monkeypatch.delenv("GPTVIZ_MODEL_MEMORY_MB", raising=False)

    def no_twin(*args, **kwargs):
        raise AssertionError("the page built the untrained model")

    monkeypatch.setattr("gptviz.app.shared.cache.initial_model", no_twin)
    at = app_test("embeddings", model="tiny-gpt2", view="Trained vs untrained",
                  prompt="The capital of France is")
    rerun(at)
    ckpt = load_checkpoint(models_dir / "tiny-gpt2")
    E = initial_model(ckpt.config, training_seed(ckpt.card)).embed.weight.detach()  # (|V|, d)
    df = next(d.value for d in at.dataframe if "fresh: cosine" in d.value.columns)
    ids = ckpt.tokenizer.encode("The capital of France is")
    want_ids, want = analysis.nearest_neighbours(E, ids[-1], len(df))
    labels = [analysis_label(ckpt, i) for i in want_ids]
    assert df["fresh: token"].tolist() == labels
    np.testing.assert_allclose(df["fresh: cosine"], want, atol=1e-6)
    fresh = next(f for f in figures(at) if f["layout"]["title"]["text"] == "E freshly initialised")
    shown = np.union1d(drawn_rows(50257), ids)
    want_coords, _ = analysis.pca(E[shown], 2)
    cloud = next(t for t in fresh["data"] if t["name"] == "vocabulary")
    at_drawn = np.searchsorted(shown, drawn_rows(50257))
    np.testing.assert_allclose(array_of(cloud["x"]), want_coords[at_drawn, 0], atol=1e-6)
    assert "only those rows of the untrained matrix are made" in " ".join(
        c.value for c in at.caption)


def analysis_label(ckpt, token_id: int) -> str:
    from gptviz.app.shared.chips import show_bytes

    return show_bytes(ckpt.tokenizer.id_to_bytes(int(token_id)))


# ---- the Generation page's Turns ----------------------------------------------------------

def assert_same_step(a, b, atol: float) -> None:
    """Two Turns of the same token after the same text (their samplings may differ only
    in the seed): the same numbers."""
    assert a.chosen == b.chosen and a.cropped == b.cropped
    np.testing.assert_allclose([a.logp, a.p_chosen, a.entropy], [b.logp, b.p_chosen, b.entropy],
                               atol=atol)
    assert [i for i, _ in a.top] == [i for i, _ in b.top]
    np.testing.assert_allclose([p for _, p in a.top], [p for _, p in b.top], atol=atol)


def _tree_bytes(vocab: int) -> float:
    """Bytes per node of a 9-node tree (two branches) grown with a model of ``vocab`` ids."""
    model = tiny_gpt(vocab, context_length=6, d_model=8)
    h = History(("tiny", ""), [1, 2])
    for _ in range(6):
        h.advance(model, Sampling(temperature=1.0, seed=4))
    h.branch(2, 3, h.path[:2], model)
    h.advance(model, Sampling(temperature=1.0, seed=4))  # the window of 6 slides
    h.advance(model, Sampling(temperature=1.0, seed=4))
    return len(pickle.dumps(h.nodes)) / len(h.nodes)


def test_the_tree_keeps_the_same_bytes_per_token_whatever_the_vocabulary():
    small, gpt2 = _tree_bytes(50), _tree_bytes(50257)
    assert small < 1500 and gpt2 < 1.2 * small  # |V| float32 logits alone: 201 KB a token


@pytest.mark.parametrize("temperature, top_k", [(1.0, None), (0.7, 3), (0.0, None)])
def test_a_replayed_step_is_the_step_that_was_drawn(temperature, top_k):
    model = tiny_gpt(12, context_length=6)
    s = Sampling(temperature, top_k, seed=3)
    h = History(("tiny", ""), [1, 2])
    drawn = [h.advance(model, s) for _ in range(8)]  # the window slides
    for i, turn in enumerate(drawn):
        step = h.step(i, 6, model)
        want = model(h.ids[: 2 + i][-6:], last_only=True)[0, -1].detach()  # as generate.step
        torch.testing.assert_close(step.logits, want)
        assert step.chosen == turn.chosen and step.top == list(turn.top)
        assert float(step.probs[turn.chosen]) == pytest.approx(turn.p_chosen, abs=1e-7)
        # drawn through the KV cache, replayed by a whole pass: float rounding apart
        assert turn.logp == pytest.approx(float(torch.log_softmax(want.double(), -1)
                                                [turn.chosen]), abs=1e-6)


# ---- no pass makes more than LOGIT_BYTES of logits ----------------------------------------

def _make(positional: str):
    torch.manual_seed(1)
    model = GPT(GPTConfig(vocab_size=13, context_length=8, d_model=16, n_layer=2, n_head=2,
                          positional=positional)).eval()
    with torch.no_grad():
        model.unembed.weight.mul_(8)  # beams that differ from greedy
    return model


@pytest.fixture
def small_budget(monkeypatch):
    """3 rows of 13 logits a pass; records the largest logits any pass made."""
    monkeypatch.setattr(beam, "LOGIT_BYTES", 4 * 13 * 3)
    made = []
    forward = GPT._forward

    def spy(self, ids, cache=None, **kw):
        out = forward(self, ids, cache, **kw)
        made.append((out.numel(), ids.shape[0]))
        return out

    monkeypatch.setattr(GPT, "_forward", spy)
    return made


@pytest.mark.parametrize("positional", ["learned", "none", "rope"])
def test_teacher_forcing_in_pieces_gives_the_same_rows(positional, small_budget, monkeypatch):
    model = _make(positional)
    prompt, tokens = [3, 1, 4, 1, 5], [9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3, 2]  # past N = 8
    pieces = beam.prefix_logits(model, prompt, tokens)  # (12, |V|)
    got = beam.next_logits(model, prompt + tokens)  # (|V|,)
    assert small_budget and all(n <= max(3, rows) * 13 for n, rows in small_budget)
    with torch.no_grad():
        torch.testing.assert_close(got, model((prompt + tokens)[-8:])[0, -1], atol=1e-5,
                                   rtol=1e-5)
        for s in range(len(tokens)):  # each row is its step's, as one pass gives it
            if positional != "rope" or len(prompt) + s <= 8:  # (RoPE slides: test_beam.py)
                want = model((prompt + tokens[:s])[-8:])[0, -1]
                torch.testing.assert_close(pieces[s], want, atol=1e-5, rtol=1e-5)
    monkeypatch.setattr(beam, "LOGIT_BYTES", 2**30)  # one pass for everything
    torch.testing.assert_close(pieces, beam.prefix_logits(model, prompt, tokens), atol=1e-5,
                               rtol=1e-5)


@pytest.mark.parametrize("positional", ["learned", "none", "rope"])
@pytest.mark.parametrize("width", [1, 4])
@pytest.mark.parametrize("prompt", [[3, 1, 4], [3, 1, 4, 1, 5, 9, 2, 6, 5, 3]])  # 10 > N
def test_beam_search_in_pieces_finds_the_same_beams(positional, width, prompt, small_budget,
                                                   monkeypatch):
    model = _make(positional)
    found = beam.beam_search(model, prompt, 10, width)
    assert small_budget and all(n <= max(3, batch) * 13 for n, batch in small_budget)
    if width == 1:
        assert found.best == generate(model, prompt, 10, temperature=0)
    monkeypatch.setattr(beam, "LOGIT_BYTES", 2**30)  # one pass for each window
    whole = beam.beam_search(model, prompt, 10, width)
    others = [whole]
    k_rows = width * beam._cache(model, len(prompt) + 10).kv.nbytes
    for budget in (0, k_rows - 1, k_rows):  # a beam at a time (twice), or k rows just fit
        monkeypatch.setattr(beam, "KV_BYTES", budget)
        others.append(beam.beam_search(model, prompt, 10, width))
    for other in others:
        assert [s.tokens for s in found.steps] == [s.tokens for s in other.steps]
        assert [s.parents for s in found.steps] == [s.parents for s in other.steps]
        np.testing.assert_allclose([s.scores for s in found.steps],
                                   [s.scores for s in other.steps], atol=1e-5)


@given(st.lists(st.integers(-3, 3), min_size=1, max_size=40), st.integers(1, 40))
def test_top_indices_is_a_stable_sort_cut_short(values, k):
    x = torch.tensor(values, dtype=torch.float64)
    k = min(k, len(values))
    want = x.sort(descending=True, stable=True).indices[:k]
    assert beam.top_indices(x, k).tolist() == want.tolist()
