"""Bundled corpora exist, and uploads that cannot be used are explained."""

from __future__ import annotations

import pytest

from gptviz.data import CorpusError, bundled_corpora, decode_text, read_corpus


def test_bundled_mathematics_corpus_is_large_and_first():
    corpora = bundled_corpora()
    assert list(corpora)[0] == "mathematics"
    text = read_corpus("mathematics")
    assert len(text.encode("utf-8")) >= 200_000
    assert "Steenrod problem for closed orientable" in text


def test_decode_text_accepts_utf8_and_strips_bom_and_crlf():
    assert decode_text("\ufeffa\r\nb é".encode()) == "a\nb é"


@pytest.mark.parametrize("data, message", [
    (b"", "empty"),
    (b"   \n\t", "empty"),
    ("café".encode("latin-1"), "not UTF-8"),
    (b"abc\x00def", "binary"),
    (b"x" * 101, "limit"),
])
def test_decode_text_refuses_unusable_uploads(data, message):
    with pytest.raises(CorpusError, match=message):
        decode_text(data, "upload.txt", limit=100)


def test_unknown_corpus():
    with pytest.raises(CorpusError, match="no bundled corpus"):
        read_corpus("nope")
