"""Offering OpenAI's encodings costs no tiktoken and no copy of a rank file: the files
are found where tiktoken's own definitions look (their url and sha256 known here) and
hashed in small chunks."""

from __future__ import annotations

import gzip
import subprocess
import sys
from pathlib import Path

import pytest

from gptviz.tokenizers import TokenizerError
from gptviz.tokenizers import openai as oa
from gptviz.tokenizers.ranks import rank_file_chunks
from tests.test_openai import tiktokens_definition


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_the_url_and_hash_checked_are_tiktokens_own(name):
    """``check_encoding`` finds and checks a file without tiktoken: with the url and sha256
    that tiktoken's own definition asks its loader for."""
    url, expected, _ = tiktokens_definition(name)
    assert oa.RANK_URL.format(name=name) == url
    assert oa.RANK_SHA256[name] == expected


def test_checking_the_encodings_imports_no_tiktoken():
    """Offering the encodings loads neither tiktoken nor its Rust core (a fresh process)."""
    code = ("import sys; from gptviz.tokenizers.openai import encoding_problems; "
            "print(encoding_problems(), sorted(m for m in sys.modules if 'tiktoken' in m))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=Path(__file__).resolve().parents[1]).stdout
    assert out.split() == ["{}", "[]"]


def test_rank_file_chunks_join_to_the_plain_file(tmp_path):
    """Chunked reading, plain or gzipped, gives the file's bytes; over the limit it stops."""
    data = oa.GPT2_FILE.read_bytes()
    (tmp_path / "r.tiktoken.gz").write_bytes(gzip.compress(data))
    for path in (oa.GPT2_FILE, tmp_path / "r.tiktoken.gz"):
        chunks = list(rank_file_chunks(path, 1000))
        assert b"".join(chunks) == data and max(map(len, chunks)) == 1000
    oa.check_rank_file(oa.GPT2_FILE, oa.GPT2_SHA256)  # no error: the bundled file is sound
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("gptviz.tokenizers.ranks.MAX_RANK_BYTES", len(data) - 1)
        with pytest.raises(TokenizerError, match="unpacks to more than"):
            oa.check_rank_file(tmp_path / "r.tiktoken.gz")
