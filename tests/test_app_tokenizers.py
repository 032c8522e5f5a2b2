"""AppTest of the Home and Tokenizers pages: widgets change the output, bad
input gets a message, nothing raises."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import pytest

from gptviz.app.shared.widgets import box_key
from gptviz.tokenizers import ByteLevelBPE, TiktokenTokenizer, make_tokenizer
from gptviz.tokenizers.openai import GPT2_FILE
from tests.helpers import app_test, metric, rerun, run_page, text_blocks, texts

if TYPE_CHECKING:
    from streamlit.testing.v1 import AppTest


def chips_html(at: AppTest) -> str:
    return "".join(h.value for h in at.get("html"))


def show(at: AppTest, view: str) -> AppTest:
    """Open the view tab ``view`` (as a click on it would: the state and the URL's ?view=)
    and rerun."""
    at.session_state["view"] = at.query_params["view"] = view
    return rerun(at)


def comparison(at: AppTest):
    """The Compare view's table."""
    return next(d.value for d in at.dataframe if "chars per token" in d.value.columns)


@pytest.fixture(scope="module")
def at_default():
    return run_page("tokenizers")


def test_home_page_links_to_the_tokenizers_page():
    at = run_page(timeout=60)
    assert "a GPT, step by step" in at.title[0].value
    at.switch_page("app_pages/tokenizers.py")
    assert rerun(at).title[0].value == "Tokenizers"


def test_default_page_shows_chips_and_math(at_default):
    at = at_default
    assert at.segmented_control(key="tokenizer").value == "bpe"
    first = at.get("html")[0].value  # the Tokens tab; the BPE tab has its own chips
    assert first.count('<span class="gv-chip') == int(metric(at, "Tokens"))
    assert any(r"\mathrm{Seq}(V)" in x.value for x in at.latex)
    assert any(r"\mathrm{OH}(t_{1})" in x.value for x in at.latex)


def test_compare_view_shows_every_tokenizer_and_the_parity_line():
    at = run_page("tokenizers", view="Compare")
    table = comparison(at)
    assert list(table["tokenizer"]) == ["Character", "Word", "BPE", "GPT-2", "cl100k", "o200k"]
    n = len(make_tokenizer("gpt2").encode(at.text_area(key=box_key("text")).value))
    assert f"gives **the same ids** ✓ as tiktoken on this text ({n:,} tokens)" in \
        texts(at, "markdown")
    rates = dict(zip(table["tokenizer"], table["UNK rate (%)"], strict=True))  # in percent
    assert rates["GPT-2"] == 0.0 and all(0.0 <= r <= 100.0 for r in rates.values())


def test_gpt2_merges_are_rebuilt_once_per_server_from_the_shared_encoding():
    """The Compare view's ByteLevelBPE: built once (a global cache, whichever session asks),
    from the loaded encoding's ranks, with the same merges as from the rank file."""
    from gptviz.app.tokenizers.controls import gpt2_as_our_bpe

    ours = gpt2_as_our_bpe(TiktokenTokenizer("gpt2"))
    assert gpt2_as_our_bpe(TiktokenTokenizer("gpt2")) is ours
    from_file = ByteLevelBPE.from_tiktoken_file(GPT2_FILE)
    assert ours.merges == from_file.merges and ours.special_tokens == {"<|endoftext|>": 50256}
    assert ours.encode("Hello world") == [15496, 995]


def test_switching_tokenizer_changes_the_tokens():
    at = run_page("tokenizers")
    bpe_tokens = metric(at, "Tokens")
    at.segmented_control(key="tokenizer").set_value("char").run()
    assert metric(at, "Tokens") == metric(at, "Characters") != bpe_tokens
    at.segmented_control(key="tokenizer").set_value("gpt2").run()
    assert metric(at, "Vocabulary |V|") == "50,257"


def test_tokenizer_choice_comes_from_the_url():
    at = run_page("tokenizers", tokenizer="GPT-2")
    assert at.segmented_control(key="tokenizer").value == "gpt2"
    assert metric(at, "Vocabulary |V|") == "50,257"


def test_editing_the_text_changes_the_output():
    at = run_page("tokenizers")
    at.text_area(key=box_key("text")).input("manifold manifold").run()
    assert metric(at, "Characters") == "17"
    assert "manifold" in chips_html(at)


def test_bpe_vocab_size_changes_vocabulary_and_merge_table():
    at = run_page("tokenizers")
    at.number_input(key="bpe_vocab").set_value(300).run()
    assert not at.exception
    assert metric(at, "Vocabulary |V|") == "300"
    merges = next(d.value for d in show(at, "BPE merges").dataframe
                  if "new token" in d.value.columns)
    assert len(merges) == 300 - 256 - 4


def test_replay_slider_changes_the_token_count():
    at = run_page("tokenizers", view="BPE merges")
    at.slider(key="replay_k").set_value(0).run()
    zero = [m.value for m in at.markdown if m.value.startswith("After **0 merges**")]
    at.slider(key="replay_k").set_value(200).run()
    many = [m.value for m in at.markdown if m.value.startswith("After **200 merges**")]
    assert zero and many and zero[0] != many[0]


def test_empty_text_gets_a_message():
    at = run_page("tokenizers")
    at.text_area(key=box_key("text")).input("").run()
    assert not at.exception
    assert "empty" in texts(at, "info")


def test_very_long_text_is_capped_with_a_message():
    at = run_page("tokenizers")
    at.text_area(key=box_key("text")).input("manifold " * 22_300).run()  # ~200k characters
    assert not at.exception
    assert "only the first 20,000" in texts(at, "warning")
    assert metric(at, "Characters") == "20,000"


HARD = {
    "emoji": "I 💜 🙂👍🏽",
    "zwj": "👨‍👩‍👧‍👦 family",
    "combining": "e\u0301 n\u0303 a\u0308\u0304",
    "rtl": "שלום עולם مرحبا",
    "control": "a\x07b\x1bc\x7f",
    "nul": "before\x00after",
    "special-looking": "x <|endoftext|> <|BOS|> y",
}


@pytest.mark.parametrize("kind", ["char", "word", "bpe", "gpt2", "o200k_base"])
@pytest.mark.parametrize("name", list(HARD))
def test_hard_text_never_raises(kind, name):
    at = app_test("tokenizers", tokenizer={"char": "Character", "word": "Word", "bpe": "BPE",
                                            "gpt2": "GPT-2", "o200k_base": "o200k"}[kind])
    at.session_state["text"] = HARD[name]
    rerun(at)
    assert 'class="gv-chip' in chips_html(at)
    assert not at.error


def test_special_token_toggle_with_gpt2():
    at = run_page("tokenizers", tokenizer="GPT-2")
    at.text_area(key=box_key("text")).input("<|endoftext|>").run()
    assert 'title="position 0 · id 50256' not in chips_html(at)
    assert "looks like a special token" in texts(at, "info")
    at.toggle(key="specials").set_value(True).run()
    assert metric(at, "Tokens") == "1"
    assert "id 50256" in chips_html(at)


def test_bos_eos_toggle_adds_markers():
    at = run_page("tokenizers", tokenizer="Character")
    n = int(metric(at, "Tokens"))
    at.toggle(key="markers").set_value(True).run()
    assert int(metric(at, "Tokens")) == n + 2
    assert "&lt;|BOS|&gt;" in chips_html(at)


@pytest.mark.parametrize("ids, message", [
    ("15496, banana", "not a whole number"),
    ("1, 2, 99999999", "outside the vocabulary"),
    ("-3", "outside the vocabulary"),
])
def test_decoding_bad_ids_is_explained(ids, message):
    at = run_page("tokenizers", tokenizer="GPT-2", view="Decode")
    at.text_input(key="decode_ids").input(ids).run()
    assert not at.exception
    assert message in texts(at, "error")


def test_decoding_good_ids():
    at = run_page("tokenizers", tokenizer="GPT-2", view="Decode")
    at.text_input(key="decode_ids").input("[15496, 11, 995, 0]").run()
    assert "Hello, world!" in text_blocks(at)


@pytest.mark.parametrize("vocab, message", [(100, "at least 260"), (16000, "at most")])
def test_bad_bpe_vocab_sizes_are_explained(vocab, message):
    at = run_page("tokenizers")
    at.pills(key="corpus").set_value("sample").run()
    at.number_input(key="bpe_vocab").set_value(vocab).run()
    assert not at.exception
    assert message in texts(at, "error")
    # the other tokenizers still work
    at.segmented_control(key="tokenizer").set_value("word").run()
    assert 'class="gv-chip' in chips_html(at)


def test_small_word_vocab_shows_unknown_words():
    at = run_page("tokenizers", tokenizer="Word")
    at.number_input(key="word_vocab").set_value(50).run()
    assert "<|UNK|>" in texts(at, "info")
    table = comparison(show(at, "Compare"))
    assert table.loc[table["tokenizer"] == "Word", "round trip"].item() == "✗"


def test_the_corpus_and_pattern_survive_a_page_switch():
    """Away to Home and back: the sidebar's corpus pills and split-pattern control give a
    corpus and a pattern (never None), and the page draws its tokens."""
    at = app_test()
    at.switch_page("app_pages/tokenizers.py")
    rerun(at)
    at.pills(key="corpus").set_value("sample").run()
    at.switch_page("app_pages/home.py")
    rerun(at)
    at.switch_page("app_pages/tokenizers.py")
    rerun(at)
    assert at.pills(key="corpus").value in ("sample", "mathematics")
    assert at.segmented_control(key="bpe_pattern").value is not None
    assert 'class="gv-chip' in chips_html(at) and not texts(at, "error")


def test_a_smaller_vocabulary_brings_the_replay_slider_within_its_merges():
    """A review lowered the BPE vocabulary from 280 to 265 with the replay at 40 merges:
    "The value 40 is greater than the max_value 5", and the page crashed."""
    at = run_page("tokenizers", view="BPE merges")
    at.number_input(key="bpe_vocab").set_value(280).run()
    assert not at.exception and at.slider(key="replay_k").value == 20
    at.number_input(key="bpe_vocab").set_value(265).run()
    assert not at.exception
    assert at.slider(key="replay_k").value == 265 - 256 - 4
    at.number_input(key="bpe_vocab").set_value(261).run()
    assert not at.exception and "After **1 merge**" in texts(at, "markdown")


def test_a_bad_id_is_answered_with_ids_of_the_chosen_tokenizer():
    """The message suggested GPT-2's ids 15496, 995 for every tokenizer; for BPE-512 they
    are themselves outside the vocabulary."""
    at = run_page("tokenizers", tokenizer="BPE", view="Decode")
    at.text_input(key="decode_ids").input("abc, 5").run()
    (message,) = [e for e in at.error if "not a whole number" in e.value]
    suggested = [int(i) for i in re.findall(r"\d+", message.value.split("such as")[1])]
    assert suggested and all(0 <= i < 512 for i in suggested)


@pytest.mark.parametrize("model", ["mathematics-bpe", "mathematics-char"])
def test_a_link_naming_a_model_opens_on_that_models_own_tokenizer(model):
    """From the Lesson, "Explore this step on the Tokenizers page" showed a BPE of |V| = 512
    trained on the corpus (39 tokens, "The" = 473) where the lesson's model has |V| = 1,024
    (23 tokens, "The" = 491)."""
    from gptviz.checkpoints.folder import bundled_models, load_checkpoint

    tok = load_checkpoint(bundled_models()[model]).tokenizer
    text = "The Steenrod problem asks which homology classes are images of manifolds."
    at = run_page("tokenizers", model=model, text=text)
    assert at.segmented_control(key="tokenizer").value == "model"
    assert at.segmented_control(key="tokenizer").format_func("model") == "This model's"
    assert at.pills(key="model").value == model
    assert metric(at, "Vocabulary |V|") == f"{tok.vocab_size:,}"
    assert metric(at, "Tokens") == f"{len(tok.encode(text)):,}"
    ids = [int(i) for i in re.findall(r"<small>(\d+)</small>", chips_html(at))]
    assert ids == tok.encode(text)
    show(at, "Compare")
    assert "This model's" in comparison(at)["tokenizer"].tolist()


def test_the_models_tokenizer_is_offered_and_a_plain_visit_opens_on_bpe(at_default):
    kinds = at_default.segmented_control(key="tokenizer")
    assert kinds.value == "bpe" and "This model's" in kinds.options
    at = run_page("tokenizers", tokenizer="This model's")
    assert at.pills(key="model").value == "mathematics-bpe"  # the default model's
    assert metric(at, "Vocabulary |V|") == "1,024"
