"""How tokens are shown (``gptviz/app/shared/chips.py``, the Tokenizers page's formulas and
``gptviz.tokenizers.compare``): visible whitespace, escaped HTML, partial bytes, LaTeX."""

from __future__ import annotations

from gptviz.app.shared.chips import merges_table, show_bytes, token_chips_html, token_table, visible
from gptviz.app.tokenizers import formulas as latex
from gptviz.tokenizers import ByteLevelBPE, TiktokenTokenizer, train_tokenizer
from gptviz.tokenizers.compare import compare


def test_visible_whitespace_and_controls():
    assert visible("a b\tc\nd") == "a·b→c↵d"
    assert visible("\x00\x1b\x7f") == "\\x00\\x1b\\x7f"
    assert visible("a\u200db\u200f") == "a⟨U+200D⟩b⟨U+200F⟩"
    assert visible("é 中") == "é·中"


def test_chips_escape_html_and_mark_partial_bytes():
    tok = TiktokenTokenizer("gpt2")
    text = "<script>alert(1)</script> 🤗"
    html = token_chips_html(tok.tokens(text), text)
    assert "<script>" not in html.split("</style>", 1)[1]
    assert "&lt;" in html
    assert html.count('<span class="gv-chip') == len(tok.encode(text))
    assert 'gv-chip partial' in html and "‹97›" in html  # the emoji is split into bytes


def test_chips_colour_unknown_and_special_tokens():
    tok = train_tokenizer("char", "abc")
    text = "abz"
    html = token_chips_html(tok.tokens(text, bos=True), text)
    assert 'class="gv-chip special"' in html  # <|BOS|>
    assert "#ff8a80" in html  # the unknown 'z'
    assert "from &#x27;z&#x27;" in html  # hover tells what the UNK replaced


def test_chips_are_capped():
    tok = train_tokenizer("char", "ab")
    html = token_chips_html(tok.tokens("ab" * 100), "ab" * 100, max_tokens=10)
    assert html.count('<span class="gv-chip') == 10


def test_token_table_lists_every_token():
    tok = TiktokenTokenizer("gpt2")
    text = "Hi 🤗"
    df = token_table(tok.tokens(text), text)
    assert list(df["id"]) == tok.encode(text)
    assert "partial UTF-8" in set(df["kind"])


def test_merges_table_shows_pairs_and_tokens():
    tok = ByteLevelBPE()
    tok.train("the the the", 262)
    df = merges_table(tok.trace, tok.id_to_bytes)
    assert list(df["new token"]) == ["he", "the"]  # ties: smallest ids, (h,e) < (t,h)
    assert list(df["pair"]) == ["h + e", "t + he"]
    assert show_bytes(b"\xe2\x80") == "‹e2 80›"


def test_latex_escapes_and_fills_in_values():
    tok = TiktokenTokenizer("gpt2")
    text = "50% of $x_1$ & {y}"
    tex = latex.tokenizer_map(text, tok.tokens(text), tok.vocab_size)
    assert r"\%" in tex and r"\$" in tex and r"\_" in tex and r"\&" in tex and r"\{" in tex
    assert "50{,}257" in tex
    oh = latex.one_hot_formula(tok.tokens("Hello world"), tok.vocab_size)
    assert r"e_{15496}" in oh and r"\underset{995}{1}" in oh
    assert r"\{0,1\}^{2 \times 50257}" in oh


def test_compare_counts_unk_and_round_trip():
    char = train_tokenizer("char", "ab")
    rows = compare("abc", {"char": char, "gpt2": TiktokenTokenizer("gpt2")})
    assert rows[0]["UNK rate"] == round(1 / 3, 4) and rows[0]["round trip"] is False
    assert rows[1]["UNK rate"] == 0 and rows[1]["round trip"] is True
