"""Byte-level BPE: the fast trainer equals the textbook recount loop, encoding
replays merges, and bad settings are explained."""

from __future__ import annotations

from array import array
from collections import Counter

import pytest
import tiktoken
from hypothesis import given, settings
from hypothesis import strategies as st

from gptviz.tokenizers import ByteLevelBPE, TokenizerError
from gptviz.tokenizers.bpe_train import GPT2_PATTERN, count_chunks, learn_merges
from gptviz.tokenizers.byte_tokens import replay_steps
from gptviz.tokenizers.merge_view import MergeView
from gptviz.tokenizers.openai import GPT2_FILE, read_ranks


def naive_merges(chunks: dict[bytes, int], n_merges: int) -> list[tuple]:
    """The seeds'/minbpe's loop: recount every pair after every merge.
    Same rules as ours: highest count, ties to the smallest pair, and a pair
    whose bytes already name a token merges into that token."""
    vocab = {i: bytes([i]) for i in range(256)}
    words = {tuple(c): n for c, n in chunks.items()}
    out = []
    for _ in range(n_merges):
        counts = Counter()
        for w, n in words.items():
            for p in zip(w, w[1:], strict=False):
                counts[p] += n
        if not counts:
            break
        pair = min(counts, key=lambda p: (-counts[p], p))
        token = vocab[pair[0]] + vocab[pair[1]]
        new_id = next((i for i, b in vocab.items() if b == token), max(vocab) + 1)
        vocab[new_id] = token
        out.append((pair, counts[pair], new_id, token))
        merged = Counter()
        for w, n in words.items():
            res, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and (w[i], w[i + 1]) == pair:
                    res.append(new_id)
                    i += 2
                else:
                    res.append(w[i])
                    i += 1
            merged[tuple(res)] += n
        words = merged
    return out


def ours(chunks: dict[bytes, int], n_merges: int) -> list[tuple]:
    vocab = {i: bytes([i]) for i in range(256)}
    return [(m.pair, m.count, m.new_id, m.token) for m in learn_merges(chunks, vocab, n_merges)]


@settings(max_examples=200, deadline=None)
@given(words=st.lists(st.text(alphabet="aab c", min_size=1, max_size=12), min_size=1,
                      max_size=30), n=st.integers(1, 25))
def test_fast_trainer_equals_the_recount_loop(words, n):
    chunks = count_chunks(words)
    assert ours(chunks, n) == naive_merges(chunks, n)


def test_fast_trainer_equals_recount_loop_on_real_text():
    text = (GPT2_FILE.parent.parent / "corpora" / "sample.txt").read_text()
    tok = ByteLevelBPE()
    chunks = count_chunks(tok.split_text(text))
    assert ours(chunks, 120) == naive_merges(chunks, 120)


def test_overlapping_pairs_merge_left_to_right():
    # "aaaaa": (a,a) occurs 4 times, overlapping; merging left to right gives aa|aa|a,
    # whose pairs (aa,aa) and (aa,a) tie: the smaller pair of ids wins.
    merges = ours({b"aaaaa": 1}, 2)
    assert merges[0] == ((97, 97), 4, 256, b"aa")
    assert merges[1] == ((256, 97), 1, 257, b"aaa")


def test_trace_records_rank_pair_count_id_and_bytes():
    tok = ByteLevelBPE()
    trace = tok.train("hug hug hug pug pun bun", 256 + 4 + 3)
    assert [m.rank for m in trace] == [0, 1, 2]
    assert trace[0].token == b"ug" and trace[0].count == 4 and trace[0].new_id == 256
    assert tok.merges == {m.pair: m.new_id for m in trace}


def test_training_is_deterministic():
    text = "the cat sat on the mat with the hat " * 20
    a, b = ByteLevelBPE(), ByteLevelBPE()
    assert a.train(text, 275) == b.train(text, 275)


@pytest.mark.parametrize("vocab", [0, 255, 259])
def test_vocab_below_bytes_plus_specials_is_refused(vocab):
    with pytest.raises(TokenizerError, match="at least 260"):
        ByteLevelBPE().train("some text", vocab)


def test_vocab_above_what_the_corpus_allows_is_refused():
    with pytest.raises(TokenizerError, match="at most 263 tokens"):
        ByteLevelBPE().train("abcd", 2000)  # 3 merges: ab, abc, abcd


def test_pattern_none_merges_across_words_and_bad_regex_is_refused():
    split = ByteLevelBPE(pattern="gpt2")
    whole = ByteLevelBPE(pattern="none")
    text = "a b a b a b a b"
    split.train(text, 256 + 4 + 2)
    whole.train(text, 256 + 4 + 2)
    assert all(b" " not in m.token[1:] for m in split.trace)  # chunks start at a space
    assert [m.token for m in whole.trace] == [b" b", b"a b"]  # across the space
    with pytest.raises(TokenizerError, match="not a valid regex"):
        ByteLevelBPE(pattern="(unclosed")


def test_replay_after_k_merges():
    tok = ByteLevelBPE()
    text = "lower lowest newer newest " * 5
    trace = tok.train(text, 256 + 4 + 12)
    assert tok.encode(text, max_rank=256) == list(text.encode())  # k = 0: bytes
    assert tok.encode(text, max_rank=trace[-1].new_id + 1) == tok.encode(text)
    counts = [len(tok.encode(text, max_rank=m.new_id + 1)) for m in trace]
    assert counts == sorted(counts, reverse=True)  # every merge can only shorten


def test_encode_with_steps_replays_to_encode():
    tok = ByteLevelBPE.from_tiktoken_file(GPT2_FILE)
    text = " Steenrod orientable manifolds"
    for data, steps in tok.encode_with_steps(text):
        states = replay_steps(data, steps, tok.id_to_bytes)
        assert states[0] == [bytes([b]) for b in data]
        assert [tok.ranks[p] for p in states[-1]] == tok.encode_chunk(data)
        assert [r for r, _, _ in steps] == sorted(r for r, _, _ in steps) or len(steps) < 2


@pytest.fixture(scope="module")
def gpt2_ours():
    return ByteLevelBPE.from_tiktoken_file(GPT2_FILE)


@pytest.fixture(scope="module")
def whole_text_tiktoken():
    """tiktoken with GPT-2's ranks and no pre-split: one chunk, like our pattern "none"."""
    return tiktoken.Encoding(name="gpt2-nosplit", pat_str=r"[\s\S]+",
                             mergeable_ranks=read_ranks(GPT2_FILE), special_tokens={})


@settings(max_examples=60, deadline=None)
@given(text=st.text(min_size=40, max_size=400))
def test_long_chunks_use_the_heap_and_still_match_tiktoken(gpt2_ours, whole_text_tiktoken, text):
    tok = ByteLevelBPE(pattern="none", byte_order=gpt2_ours.byte_order,
                       merges=[(a, b, c) for (a, b), c in gpt2_ours.merges.items()],
                       special_ids={})
    assert tok.encode(text) == whole_text_tiktoken.encode(text)


def test_recovered_gpt2_merges_reproduce_the_rank_file(gpt2_ours):
    assert len(gpt2_ours.merges) == 50_000
    assert gpt2_ours.ranks == read_ranks(GPT2_FILE)
    assert gpt2_ours.vocab_size == 50257
    assert gpt2_ours.merges[(220, 83)] == 256  # GPT-2's first merge: " " + "t"


def test_corrupted_rank_file_is_named(tmp_path):
    bad = tmp_path / "gpt2.tiktoken"
    bad.write_bytes(GPT2_FILE.read_bytes()[:-10])
    with pytest.raises(TokenizerError, match="corrupted"):
        read_ranks(bad, "0" * 64)


def test_gpt2_pattern_is_tiktokens():
    import tiktoken_ext.openai_public as public

    assert public.r50k_pat_str == GPT2_PATTERN


def test_merges_are_one_array_read_back_as_a_read_only_mapping():
    tok = ByteLevelBPE()
    tok.train("abab abab abcabc", 256 + 3 + 4)
    merges = tok.merges
    assert len(tok._merges) == 3 * len(merges) == 9  # 12 bytes a merge, no tuples kept
    assert merges == {m.pair: m.new_id for m in tok.trace}
    with pytest.raises(TypeError):
        merges[(1, 2)] = 300  # type: ignore[index]
    again = ByteLevelBPE.from_dict(tok.to_dict())
    assert again.merges == merges and again.encode("abcab abab") == tok.encode("abcab abab")
    with pytest.raises(TokenizerError, match="beyond 2"):
        ByteLevelBPE(merges=[(97, 98, 2**40)])


def test_the_merges_view_reads_the_array_as_the_dict_it_replaces(gpt2_ours):
    """GPT-2's 50,000 merges: the view equals the dict built from the array, in order,
    item by item and key by key, and knows no pair the array does not hold as a triple."""
    flat = gpt2_ours._merges
    as_dict = {(flat[k], flat[k + 1]): flat[k + 2] for k in range(0, len(flat), 3)}
    view = gpt2_ours.merges
    assert list(view.items()) == list(as_dict.items())
    assert list(view) == list(as_dict) and list(view.values()) == list(as_dict.values())
    for pair in list(as_dict)[::997]:  # a spread of lookups, first and last included
        assert view[pair] == as_dict[pair]
    assert view[list(as_dict)[-1]] == as_dict[list(as_dict)[-1]] == 50255
    small = MergeView(array("i", [1, 2, 3, 4, 5, 6]))  # merges (1,2)->3 and (4,5)->6
    assert small == {(1, 2): 3, (4, 5): 6}
    for absent in [(3, 4), (2, 3), (5, 6), (2**40, 1), ("a", 1)]:  # (3,4) spans two triples
        assert absent not in small
        with pytest.raises(KeyError):
            small[absent]


def test_gpt2_from_its_ranks_holds_each_token_once(gpt2_ours):
    """The vocab and the ranks point to the same bytes objects: one copy of GPT-2's tokens."""
    assert all(gpt2_ours.vocab[rank] is token for token, rank in gpt2_ours.ranks.items())
    assert len(gpt2_ours.vocab) == len(gpt2_ours.ranks) == 50_256


def test_two_tokens_with_one_rank_are_refused():
    ranks = {bytes([i]): i for i in range(256)} | {b"ab": 256, b"ba": 256}
    with pytest.raises(TokenizerError, match="same rank"):
        ByteLevelBPE.from_ranks(ranks, "gpt2", {})
