"""Every tokenizer through the one interface: round trips, golden ids, specials,
UNK, spans and save/load (parametrized over all of them, as minbpe does)."""

from __future__ import annotations

import json
from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gptviz.tokenizers import (
    BOS,
    EOS,
    PAD,
    UNK,
    ByteLevelBPE,
    CharTokenizer,
    TiktokenTokenizer,
    Tokenizer,
    TokenizerError,
    WordTokenizer,
    train_tokenizer,
)
from gptviz.tokenizers.openai import GPT2_FILE

CORPUS = (
    "The Steenrod problem for closed orientable manifolds was solved by Thom.\n"
    "A symplectic manifold is a manifold with a closed nondegenerate two-form.\n"
    "The manifold is closed, and the form is closed.\n"
)


@cache
def _make(kind: str) -> Tokenizer:
    if kind == "gpt2-tiktoken":
        return TiktokenTokenizer("gpt2")
    if kind == "gpt2-ours":
        return ByteLevelBPE.from_tiktoken_file(GPT2_FILE)
    return train_tokenizer(kind, CORPUS, 256 + 4 + 40 if kind == "bpe" else None)


ALL = ["char", "word", "bpe", "gpt2-tiktoken", "gpt2-ours"]
LOSSLESS = ["bpe", "gpt2-tiktoken", "gpt2-ours"]


@pytest.fixture(params=ALL)
def tok(request) -> Tokenizer:
    return _make(request.param)


# ---- round trips -----------------------------------------------------------------
@pytest.mark.parametrize("kind", LOSSLESS)
@settings(max_examples=150, deadline=None)
@given(text=st.text(max_size=120))
def test_lossless_round_trip_on_arbitrary_unicode(kind, text):
    tok = _make(kind)
    assert tok.decode(tok.encode(text)) == text


@settings(max_examples=100, deadline=None)
@given(pieces=st.lists(st.sampled_from(sorted(set(CORPUS))), max_size=60))
def test_char_round_trip_on_known_characters(pieces):
    tok = _make("char")
    text = "".join(pieces)
    assert tok.decode(tok.encode(text)) == text


@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_word_round_trip_on_known_words(data):
    """Any stretch of the corpus, cut at token boundaries, comes back exactly."""
    tok = _make("word")
    words = [w for w, _, _ in WordTokenizer.split(CORPUS)]
    start = data.draw(st.integers(0, len(words)))
    stop = data.draw(st.integers(start, len(words)))
    text = "".join(words[start:stop])
    assert tok.decode(tok.encode(text)) == text


@settings(max_examples=100, deadline=None)
@given(text=st.text(max_size=80))
def test_tokens_agree_with_encode_and_cover_the_text(text):
    for kind in ALL:
        tok = _make(kind)
        infos = tok.tokens(text)
        assert [t.id for t in infos] == tok.encode(text)
        ends = [0] + [t.span[1] for t in infos]
        # spans run left to right without gaps; a partial token may share its character
        for t, prev_end in zip(infos, ends, strict=False):
            assert t.span[0] <= prev_end <= t.span[1] or t.span[0] == prev_end
        if infos:
            assert infos[-1].span[1] == len(text)
        if kind in LOSSLESS:
            assert b"".join(t.bytes for t in infos) == text.encode("utf-8")


@pytest.mark.parametrize("kind", ["char", "word"])
@settings(max_examples=100, deadline=None)
@given(pieces=st.lists(st.sampled_from(["The ", "manifold", "Ω", "\n", "<|EOS|>", "<|UNK|>",
                                        " ", "ω,", "closed."]), max_size=12),
       bos=st.booleans(), eos=st.booleans(), allowed=st.sampled_from(["none", "all"]))
def test_symbol_encode_is_the_ids_of_tokens(kind, pieces, bos, eos, allowed):
    """encode skips the TokenInfo records (a corpus is 250k of them) and gives their ids:
    with markers, unknown symbols and specials typed in the text, recognised or not."""
    tok, text = _make(kind), "".join(pieces)
    kw = dict(bos=bos, eos=eos, allowed_special=allowed)
    assert tok.encode(text, **kw) == [t.id for t in tok.tokens(text, **kw)]


def test_symbol_encode_refuses_a_marker_it_does_not_have():
    tok = CharTokenizer(specials=[UNK])
    tok.train("ab")
    for call in (tok.encode, tok.tokens):
        with pytest.raises(TokenizerError, match="not a special token"):
            call("ab", bos=True)


# ---- golden ids ------------------------------------------------------------------
def test_char_golden_ids():
    tok = CharTokenizer()
    tok.train("banana")
    assert tok.symbols == ["a", "b", "n"]
    assert tok.encode("nab") == [2, 0, 1]
    assert tok.special_tokens == {BOS: 3, EOS: 4, UNK: 5, PAD: 6}
    assert tok.encode("cab", bos=True, eos=True) == [3, 5, 0, 1, 4]


def test_ids_are_sorted_not_set_ordered():
    """The same corpus always gives the same ids, whatever the hash seed."""
    assert CharTokenizer(["z", "a", "m"]).symbols == ["a", "m", "z"]
    tok = WordTokenizer()
    tok.train("b a c a")
    assert tok.symbols == [" ", "a", "b", "c"]


def test_word_golden_ids_keep_punctuation_and_whitespace():
    tok = WordTokenizer()
    tok.train("Hi, you.\nHi!")
    assert tok.symbols == ["\n", " ", "!", ",", ".", "Hi", "you"]
    assert tok.encode("Hi, you!") == [5, 3, 1, 6, 2]
    assert tok.decode(tok.encode("Hi, you.\nHi!")) == "Hi, you.\nHi!"


def test_bpe_golden_ids():
    tok = ByteLevelBPE()
    trace = tok.train("abab abab", 256 + 2 + 4)
    assert [(m.pair, m.new_id, m.token) for m in trace] == [((97, 98), 256, b"ab"),
                                                           ((256, 256), 257, b"abab")]
    assert tok.encode("abab ab") == [257, 32, 256]
    assert tok.special_tokens == {BOS: 258, EOS: 259, UNK: 260, PAD: 261}


def test_gpt2_golden_ids():
    for tok in (_make("gpt2-tiktoken"), _make("gpt2-ours")):
        assert tok.encode("Hello world") == [15496, 995]
        assert tok.encode(" the") == [262]
        assert tok.decode([15496, 11, 995, 0]) == "Hello, world!"


# ---- UNK and specials ------------------------------------------------------------
def test_unknown_symbols_become_unk():
    tok = _make("char")
    ids = tok.encode("The Ω")
    assert ids[-1] == tok.special_tokens[UNK]
    info = tok.tokens("The Ω")[-1]
    assert info.unknown and info.span == (4, 5)
    assert tok.decode(ids) == "The " + UNK


def test_max_vocab_turns_rare_words_into_unk():
    full = train_tokenizer("word", CORPUS)
    small = train_tokenizer("word", CORPUS, vocab_size=4 + 6)
    assert len(small.symbols) == 6 and small.vocab_size == 10
    text = "The symplectic manifold"
    assert UNK not in full.decode(full.encode(text))
    assert small.decode(small.encode(text)).count(UNK) >= 1
    # the kept words are the most frequent ones
    assert {"manifold", " "} <= set(small.symbols)


def test_symbol_vocab_too_small_is_explained():
    with pytest.raises(TokenizerError, match="at least 5"):
        train_tokenizer("char", "abc", vocab_size=3)


def test_special_strings_are_text_unless_allowed(tok):
    name = next(iter(tok.special_tokens))
    text = f"The{name}The"
    plain = tok.encode(text)
    assert tok.special_tokens[name] not in plain
    special = tok.encode(text, allowed_special="all")
    assert special.count(tok.special_tokens[name]) == 1
    assert tok.decode(special) == text


def test_endoftext_typed_as_text_in_gpt2():
    tok = _make("gpt2-ours")
    assert 50256 not in tok.encode("<|endoftext|>")
    assert tok.encode("<|endoftext|>", allowed_special="all") == [50256]
    with pytest.raises(TokenizerError, match="not special tokens"):
        tok.encode("x", allowed_special={"<|BOS|>"})


@pytest.mark.parametrize("kind", ["char", "word", "bpe"])
def test_bos_eos_are_optional(kind):
    tok = _make(kind)
    ids = tok.encode("The", bos=True, eos=True)
    assert ids[0] == tok.special_tokens[BOS] and ids[-1] == tok.special_tokens[EOS]
    assert ids[1:-1] == tok.encode("The")


def test_decode_rejects_bad_ids(tok):
    with pytest.raises(TokenizerError, match="outside the vocabulary"):
        tok.decode([0, tok.vocab_size])
    with pytest.raises(TokenizerError, match="outside the vocabulary"):
        tok.decode([-1])
    with pytest.raises(TokenizerError, match="not an integer"):
        tok.decode([1, "2"])


def test_empty_text(tok):
    assert tok.encode("") == [] and tok.tokens("") == [] and tok.decode([]) == ""


def test_training_on_empty_corpus_is_refused():
    for kind in ("char", "word", "bpe"):
        with pytest.raises(TokenizerError, match="empty"):
            train_tokenizer(kind, "", 300)


def test_pretrained_cannot_be_retrained():
    with pytest.raises(TokenizerError, match="pretrained"):
        _make("gpt2-tiktoken").train("abc")


# ---- persistence -----------------------------------------------------------------
def test_save_load_round_trip(tok, tmp_path):
    path = tok.save(tmp_path)
    assert path.name == "tokenizer.json"
    loaded = Tokenizer.load(tmp_path)
    assert type(loaded) is type(tok)
    text = CORPUS + " Ω 🙂 <|BOS|>"
    assert loaded.encode(text) == tok.encode(text)
    assert loaded.vocab_size == tok.vocab_size
    assert loaded.special_tokens == tok.special_tokens


@pytest.mark.parametrize("content, message", [
    ("not json", "cannot read"),
    (json.dumps({"type": "nope"}), "unknown tokenizer"),
    (json.dumps({"type": "bpe", "pattern": "gpt2"}), "malformed bpe"),
    (json.dumps({"type": "bpe", "pattern": "gpt2", "merges": [[1, 999, 256]],
                 "special_ids": {}}), "not defined"),
    (json.dumps({"type": "char", "symbols": [1, 2]}), "strings"),
])
def test_load_rejects_malformed_files(tmp_path, content, message):
    (tmp_path / "tokenizer.json").write_text(content)
    with pytest.raises(TokenizerError, match=message):
        Tokenizer.load(tmp_path)
