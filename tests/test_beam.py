"""Beam search (gptviz.generation.beam) against greedy decoding and a direct computation,
teacher-forced logits against generation's own, min-p sampling (gptviz.generation.sampling)
against its set, and the
Generation page's tree of branches: its link format and its rebuilding from ids."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from gptviz.app.generation import tree
from gptviz.app.generation.state import History, Sampling
from gptviz.checkpoints.folder import bundled_models, load_checkpoint
from gptviz.generation.beam import beam_search, check_width, prefix_logits, token_logprobs
from gptviz.generation.sampling import generate, next_token_probs, step
from gptviz.model import GPT, GPTConfig
from tests.helpers import MODELS, tiny_gpt
from tests.test_app_external_views import assert_same_step

PROMPT = "The Steenrod problem asks which homology classes of a space are images"


def make_model(positional: str = "learned", vocab: int = 13) -> GPT:
    """Two layers, N = 8, larger logits than at init (so beams and greedy can differ)."""
    torch.manual_seed(1)
    model = GPT(GPTConfig(vocab_size=vocab, context_length=8, d_model=16, n_layer=2,
                          n_head=2, positional=positional)).eval()
    with torch.no_grad():
        model.unembed.weight.mul_(8)
    return model


@pytest.fixture(scope="module", params=MODELS)
def bundled(request):
    ckpt = load_checkpoint(bundled_models()[request.param])
    return ckpt.model.eval(), ckpt.tokenizer.encode(PROMPT)


def direct_logprobs(model: GPT, prompt: list[int], tokens: list[int]) -> list[float]:
    """log P(y_s | x, y_<s) by one plain forward pass per token on its context: the last N
    ids (a RoPE model reads the whole text through its sliding window instead)."""
    out, seq = [], list(prompt)
    crop = 0 if model.config.positional == "rope" else -model.config.context_length
    for t in tokens:
        with torch.no_grad():
            y = model(seq[crop:])[0, -1].double()  # (|V|,)
        out.append(float(torch.log_softmax(y, -1)[t]))
        seq.append(t)
    return out


# ---- width 1 is greedy ------------------------------------------------------------------

@pytest.mark.parametrize("positional", ["learned", "sinusoidal", "none", "rope"])
@pytest.mark.parametrize("prompt", [[1], [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5]])  # 11 > N = 8
def test_width_one_is_greedy(positional, prompt):
    model = make_model(positional)
    found = beam_search(model, prompt, 20, width=1)  # 20 tokens: the window slides
    assert found.best == generate(model, prompt, 20, temperature=0)


def test_width_one_is_greedy_on_the_bundled_models(bundled):
    model, prompt = bundled
    assert beam_search(model, prompt, 50, 1).best == generate(model, prompt, 50, temperature=0)


# ---- the beams and their scores ---------------------------------------------------------

@pytest.mark.parametrize("width", [2, 3, 8])
@pytest.mark.parametrize("positional", ["learned", "rope"])
def test_beams_are_sorted_and_scores_are_sums_of_step_logprobs(width, positional):
    model, prompt = make_model(positional), [3, 1, 4, 1, 5]
    found = beam_search(model, prompt, 9, width)  # past the window of 8
    for t, s in enumerate(found.steps):
        assert len(s.tokens) == width and list(s.scores) == sorted(s.scores, reverse=True)
        seqs = {tuple(found.tokens(t, b)) for b in range(width)}
        assert len(seqs) == width  # k different texts
        for b in range(width):
            tokens = found.tokens(t, b)
            direct = direct_logprobs(model, prompt, tokens)
            assert s.scores[b] == pytest.approx(sum(direct), abs=1e-4)
            assert s.logprobs[b] == pytest.approx(direct[-1], abs=1e-4)
            parent = found.tokens(t - 1, s.parents[b]) if t else []
            assert tokens[:-1] == parent and tokens[-1] == s.tokens[b]
            ranks = found.lineage(t, b)  # the ranks of its ancestors, step by step
            assert [found.steps[u].tokens[r] for u, r in enumerate(ranks)] == tokens


def test_the_first_step_keeps_the_k_most_probable_tokens():
    model, prompt = make_model(), [2, 7]
    found = beam_search(model, prompt, 1, width=4)
    logp = torch.log_softmax(model(prompt)[0, -1].double(), -1)
    assert list(found.steps[0].tokens) == torch.argsort(-logp, stable=True)[:4].tolist()


@pytest.mark.parametrize("seed", range(4))
def test_width_v_over_two_tokens_finds_the_most_probable_text(seed):
    """With k = |V| every first token survives, so two steps search all |V|² texts: the
    result is the most probable one, never below greedy's (a wider search in general is
    not: a beam can prune greedy's prefix; see the next test)."""
    torch.manual_seed(seed)
    model = make_model(vocab=7)
    with torch.no_grad():
        model.unembed.weight.add_(torch.randn_like(model.unembed.weight))
    prompt = [seed, 2]
    with torch.no_grad():
        first = torch.log_softmax(model(prompt)[0, -1].double(), -1)  # (|V|,)
        pairs = torch.stack([first[a] + torch.log_softmax(model(prompt + [a])[0, -1].double(),
                                                          -1) for a in range(7)])  # (|V|, |V|)
    found = beam_search(model, prompt, 2, width=7)
    # float32 logits: the search unembeds y_N alone (a matrix-vector product), which sums in
    # another order than the unembedding of every position here: ~1e-7 apart
    assert found.steps[-1].scores[0] == pytest.approx(float(pairs.max()), abs=1e-6)
    assert found.tokens(1, 0) == list(divmod(int(pairs.argmax()), 7))
    greedy = generate(model, prompt, 2, temperature=0)[2:]
    assert found.steps[-1].scores[0] >= float(pairs[greedy[0], greedy[1]]) - 1e-6


def bigram_model(table: dict[int, dict[int, float]], vocab: int = 13) -> GPT:
    """A GPT whose next-token distribution depends on the last token only, as ``table``
    says (rows not given are uniform): no positions, attention and FFN outputs zero, and
    W_U solved so that W_U · LN(E[t]) = log P(· | t)."""
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=vocab, context_length=8, d_model=16, n_layer=1, n_head=2,
                          positional="none", tie_embeddings=False, bias=False)).eval()
    logp = torch.full((vocab, vocab), -np.log(vocab), dtype=torch.float64)  # (|V|, |V|)
    for t, row in table.items():
        logp[t] = torch.log(torch.tensor([row.get(j, 0.0) + 1e-9 for j in range(vocab)],
                                         dtype=torch.float64))
    with torch.no_grad():
        model.embed.weight.copy_(torch.eye(vocab, 16))  # E[t] = e_t
        model.blocks[0].attn.W_O.weight.zero_()
        model.blocks[0].mlp.W_2.weight.zero_()
        h = model.ln_final(model.embed.weight).double()  # (|V|, d): LN(E[t])
        model.unembed.weight.copy_((torch.linalg.pinv(h) @ logp).T)  # (|V|, d)
    return model


def test_a_wider_search_is_not_always_more_probable_than_greedy():
    """Beam search keeps the k best *prefixes*; greedy's prefix can fall out of them and the
    survivors end worse. Here 0 → 1 (0.5) → 5 (0.22) → 10 → 10 … is greedy's text, but at
    step 2 two continuations of 2 (0.45 · 0.5) beat 0.5 · 0.22, and after those every token
    is equally likely (−log 13 a step). The page says so when it happens (its formula
    turns to <)."""
    model = bigram_model({0: {1: 0.5, 2: 0.45, 3: 0.05},
                          1: {5: 0.22, 6: 0.2, 9: 0.2, 11: 0.19, 12: 0.19},
                          2: {7: 0.5, 8: 0.5}, 5: {10: 1.0}, 10: {10: 1.0}})
    assert generate(model, [0], 8, temperature=0) == [0, 1, 5] + [10] * 6
    narrow, wide = beam_search(model, [0], 8, 2), beam_search(model, [0], 8, 3)
    assert sorted(narrow.tokens(1, b)[1] for b in range(2)) == [7, 8]  # greedy's prefix is out
    greedy = sum(direct_logprobs(model, [0], [1, 5] + [10] * 6))
    assert narrow.steps[-1].scores[0] < greedy - 5  # a uniform step costs log 13 = 2.56
    assert wide.best == [0, 1, 5] + [10] * 6  # k = 3 keeps it and finds it


def test_beam_search_can_beat_greedy():
    """The seed's inequality on a model where it bites: some width finds a better text."""
    model, prompt = make_model(), [3, 1, 4]
    greedy = generate(model, prompt, 8, temperature=0)[len(prompt):]
    best = beam_search(model, prompt, 8, 8).steps[-1].scores[0]
    assert best > sum(direct_logprobs(model, prompt, greedy)) + 1e-3


@pytest.mark.parametrize("width, message", [(0, "whole number >= 1"), (True, "whole number"),
                                            (2.0, "whole number"), (14, "larger than the voc")])
def test_bad_widths_are_clear_value_errors(width, message):
    with pytest.raises(ValueError, match=message):
        beam_search(make_model(), [1], 3, width)
    check_width(13, 13)  # up to |V| is fine


# ---- teacher forcing: the logits generation saw ------------------------------------------

@pytest.mark.parametrize("positional", ["learned", "rope"])
def test_prefix_logits_are_the_logits_each_step_saw(positional):
    model = make_model(positional)
    prompt, tokens = [3, 1, 4], [1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7]  # past the window of 8
    rows = prefix_logits(model, prompt, tokens)
    if positional != "rope":  # step() crops to the window, as the page's steps do
        for s in range(len(tokens)):
            want = step(model, prompt + tokens[:s], temperature=0).logits
            torch.testing.assert_close(rows[s], want, atol=1e-5, rtol=1e-5)
    greedy = generate(model, prompt, 11, temperature=0)[3:]  # a RoPE model slides its window
    assert rows.shape == (11, 13) and prefix_logits(model, prompt, greedy).argmax(1).tolist() \
        == greedy
    lp = token_logprobs(model, prompt, tokens)
    torch.testing.assert_close(lp, torch.log_softmax(rows.double(), 1)[range(11), tokens])


def test_prefix_logits_refuse_ids_outside_the_vocabulary():
    with pytest.raises(ValueError, match="outside the vocabulary"):
        prefix_logits(make_model(), [1], [2, 13])


# ---- min-p ------------------------------------------------------------------------------

def p_t(logits: torch.Tensor, t: float) -> np.ndarray:
    e = np.exp((y := logits.double().numpy() / t) - y.max())
    return e / e.sum()


@settings(max_examples=150, deadline=None)
@given(st.lists(st.floats(-10, 10), min_size=1, max_size=40), st.floats(0.25, 4),
       st.floats(0, 1))
def test_min_p_keeps_exactly_its_set(values, temperature, min_p):
    logits = torch.tensor(values)
    p = p_t(logits, temperature)
    ratio = p / p.max()
    assume(np.all(np.abs(ratio - min_p) > 1e-9))  # no id on the threshold itself
    keep = p >= min_p * p.max()
    out = next_token_probs(logits, temperature, min_p=min_p).double().numpy()
    assert np.array_equal(out > 0, keep)
    np.testing.assert_allclose(out[keep], p[keep] / p[keep].sum(), rtol=1e-5, atol=1e-7)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.floats(-10, 10), min_size=2, max_size=40), st.floats(0.25, 4),
       st.floats(0.001, 1), st.one_of(st.none(), st.integers(1, 40)),
       st.one_of(st.none(), st.floats(0.05, 1.0)))
def test_min_p_composes_with_top_k_and_top_p(values, temperature, min_p, top_k, top_p):
    """S = S_k ∩ S_p ∩ S_min, and P' = P_T / Σ_{j∈S} P_T(j) on S."""
    logits = torch.tensor(values)
    p = p_t(logits, temperature)
    assume(np.all(np.abs(p / p.max() - min_p) > 1e-9))
    without = next_token_probs(logits, temperature, top_k, top_p).double().numpy()
    out = next_token_probs(logits, temperature, top_k, top_p, min_p).double().numpy()
    keep = (without > 0) & (p >= min_p * p.max())
    assert np.array_equal(out > 0, keep) and keep[int(logits.argmax())]  # the best stays
    np.testing.assert_allclose(out[keep], p[keep] / p[keep].sum(), rtol=1e-5, atol=1e-7)


def test_min_p_golden_and_off():
    logits = torch.tensor([0.5, 0.3, 0.15, 0.05]).log()
    kept = torch.tensor([0.5, 0.3, 0.15, 0.0]) / 0.95  # 0.05 < 0.2 · 0.5 = 0.1 ≤ 0.15
    torch.testing.assert_close(next_token_probs(logits, 1.0, min_p=0.2), kept)
    torch.testing.assert_close(next_token_probs(logits, 1.0, min_p=0.0),
                               next_token_probs(logits, 1.0))
    assert next_token_probs(logits, 1.0, min_p=1.0).tolist() == [1.0, 0.0, 0.0, 0.0]
    assert next_token_probs(logits, 0, min_p=0.9).tolist() == [1.0, 0.0, 0.0, 0.0]


@pytest.mark.parametrize("min_p", [-0.1, 1.5, float("nan"), True, "0.2"])
def test_min_p_outside_zero_one_is_a_clear_value_error(min_p):
    with pytest.raises(ValueError, match=r"min_p must be in \[0, 1\]"):
        next_token_probs(torch.zeros(3), 1.0, min_p=min_p)
    with pytest.raises(ValueError, match=r"min_p must be in \[0, 1\]"):
        generate(tiny_gpt(5), [1], 2, min_p=min_p)


def test_generate_with_min_p_draws_only_from_its_set():
    model = make_model()
    out = generate(model, [1], 30, temperature=1.0, seed=3, min_p=0.5)
    p = torch.softmax(prefix_logits(model, [1], out[1:]).double(), 1)  # (30, |V|)
    assert (p[range(30), out[1:]] >= 0.5 * p.max(1).values).all()


# ---- the tree of branches: its link, and its rebuilding by teacher forcing ---------------

@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(st.integers(0, 2000), min_size=1, max_size=6).map(tuple),
                min_size=1, max_size=8))
def test_the_link_format_round_trips(leafy):
    nodes = {p: None for p in tree.nodes_of(leafy)}
    leaf_paths = tree.leaves(nodes)
    tag, back = tree.decode_tree(tree.encode_tree("abc123", leaf_paths))
    assert tag == "abc123" and back == leaf_paths
    assert set(tree.nodes_of(back)) == set(nodes)
    assert all(tree.decode_node(tree.encode_node(leaf_paths, p), leaf_paths) == p for p in nodes)


def test_rebuild_gives_the_logits_each_step_saw():
    model = tiny_gpt(12, context_length=6)
    h = History(("tiny", ""), [1, 2, 3])
    for _ in range(5):
        h.advance(model, Sampling(temperature=1.0, seed=2))
    h.branch(2, 7, h.path[:2])
    h.advance(model, Sampling(temperature=1.0, seed=2))  # the window of 6 slides
    rebuilt = tree.rebuild(model, [1, 2, 3], tree.leaves(h.nodes), Sampling())
    assert set(rebuilt) == set(h.nodes)
    for path, turn in h.nodes.items():
        assert_same_step(rebuilt[path], turn, atol=1e-5)
        assert rebuilt[path].chosen == turn.chosen == path[-1]
