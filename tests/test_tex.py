"""Text set in KaTeX's ``\\text{}`` never breaks it: any user text comes out as TeX
specials escaped and only characters KaTeX can set, the others shown as ``⟨U+XXXX⟩``.

The last tests render with the real KaTeX when ``node`` and the ``katex`` package are
here (``npm install --prefix /tmp/katex katex``, or point ``KATEX_DIR`` at a folder whose
``node_modules`` holds it); they skip otherwise.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import subprocess
import unicodedata
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from gptviz.app.generation.formulas import mapsto_line
from gptviz.app.shared.tex import TEX_ESCAPES, addends, tex_escape, tex_running, tex_text
from gptviz.app.tokenizers.formulas import tokenizer_map
from gptviz.tokenizers import TiktokenTokenizer, train_tokenizer

NASTY = [
    "𝔄𝔅ℭ 𓀀 🜁",  # math alphanumerics, a letterlike ℭ (KaTeX: \mathfrak), astral symbols
    "\u0301\u0302abc",  # combining accents with no base
    "a\u0327\u0301b q\u0303",  # accents KaTeX does not know, and on a base with no é-like form
    "\x00\x01\x7f\x85 nul",  # control characters
    "\ud800 \udfff",  # lone surrogates
    "\ue000\uf8ff",  # private use
    "‼ ∑ ≠ ⟦x⟧ ⌜ ∉ ≔",  # symbols KaTeX maps to math-only commands
    "\u2028\u2029\u200b\u00ad\ufeff",  # separators and format characters
    r"\{}$&#%_^~ \textbf{x} $x^2$ {",  # TeX specials
    "😀👍🏽 नमस्ते Привет 日本語 ελληνικά é ß ∅ → …",  # ordinary text that must stay itself
]


def allowed(ch: str) -> bool:
    """The safe set: printable ASCII, or a BMP letter, digit, punctuation, symbol, space or
    script mark outside the blocks where KaTeX defines math-only commands (letterlike
    symbols, mathematical operators, miscellaneous technical, the math brackets and
    operators of U+27C0–U+27E7 and U+2980–U+2AFF, ‼) and outside the generic combining
    accents. The KaTeX tests below check this set against KaTeX itself."""
    cp = ord(ch)
    if cp < 0x80:
        return 0x20 <= cp <= 0x7E
    cat = unicodedata.category(ch)
    if cp < 0xA0 or cp > 0xFFFF or not (cat[0] in "LNPSM" or cat == "Zs"):
        return False
    return not (0x0300 <= cp <= 0x036F or 0x1AB0 <= cp <= 0x1AFF or 0x1DC0 <= cp <= 0x1DFF
                or 0x20D0 <= cp <= 0x20FF or 0xFE20 <= cp <= 0xFE2F or cp == 0x203C
                or 0x2100 <= cp <= 0x214F or 0x2200 <= cp <= 0x23FF
                or 0x27C0 <= cp <= 0x27E7 or 0x27EA <= cp <= 0x27EF or 0x2980 <= cp <= 0x2AFF)


_TOKEN = re.compile(r"\\[a-zA-Z]+(\{\})?|\\.|.", re.S)


def check_safe(body: str) -> None:
    """Only safe characters, balanced braces, every TeX special escaped."""
    assert all(allowed(ch) for ch in body), [c for c in body if not allowed(c)]
    depth = 0
    for tok in _TOKEN.finditer(body):
        t = tok.group()
        if t.startswith("\\"):
            assert t in TEX_ESCAPES.values(), f"unexpected command {t!r} in {body!r}"
        else:
            assert t not in TEX_ESCAPES, f"unescaped {t!r} in {body!r}"
        depth += {"{": 1, "}": -1}.get(t, 0)
        assert depth >= 0
    assert depth == 0


@pytest.mark.parametrize("text", NASTY)
def test_escape_is_safe_on_nasty_text(text):
    check_safe(tex_escape(text))
    for tex in (tex_text(text, 12), tex_running(text, 12)):
        assert tex.startswith(r"\text{") and tex.endswith("}")
        check_safe(tex[len(r"\text{"):-1])


def test_unsettable_characters_show_their_code_point():
    assert tex_escape("𝔄ℭ") == "⟨U+1D504⟩⟨U+212D⟩"
    assert tex_escape("\u0301a") == "⟨U+0301⟩a"
    assert tex_escape("e\u0301") == "é"  # composed first: the accent is kept
    assert tex_escape("नमस्ते Привет 日本語 ß") == "नमस्ते Привет 日本語 ß"
    assert tex_text("\x00") == r"\text{\textbackslash{}x00}"  # controls shown by visible()


@settings(max_examples=300, deadline=None)
@given(st.text(st.characters(exclude_categories=())))
def test_escape_is_safe_on_any_text(text):
    check_safe(tex_escape(text))
    check_safe(tex_text(text, 16)[len(r"\text{"):-1])
    check_safe(tex_running(text, 16)[len(r"\text{"):-1])


# ---- the real KaTeX -----------------------------------------------------------------------

def _katex_dir() -> Path | None:
    for d in (os.environ.get("KATEX_DIR"), "/tmp/katex", "/tmp/katex_t"):
        if d and (Path(d) / "node_modules" / "katex").is_dir():
            return Path(d)
    return None


_RENDER = """
const katex = require("katex");
const out = [];
for (const s of JSON.parse(require("fs").readFileSync(0, "utf8"))) {
  try { katex.renderToString(s, {throwOnError: true, strict: "ignore"}); }
  catch (e) { out.push([s, e.message]); }
}
console.log(JSON.stringify(out));
"""


def streamlit_katex_version() -> str | None:
    """The KaTeX version Streamlit's Markdown draws with (from its bundled JavaScript)."""
    import streamlit

    for chunk in (Path(streamlit.__file__).parent / "static" / "static" / "js").glob(
            "rehype-katex.*.js"):
        found = re.search(r"version:`(\d+\.\d+\.\d+)`", chunk.read_text(encoding="utf-8"))
        if found:
            return found.group(1)
    return None


def katex_errors(formulas: list[str]) -> list[tuple[str, str]]:
    """The formulas KaTeX refuses, with its messages: the KaTeX of ``npm install katex@V``
    in ``$KATEX_DIR`` or /tmp/katex, V being the version Streamlit draws with (KaTeX 0.19,
    for one, refuses ``\\text{↤}``, which Streamlit's 0.16.47 draws)."""
    where = _katex_dir()
    if shutil.which("node") is None or where is None:
        pytest.skip("node or the katex npm package is missing")
    wanted = streamlit_katex_version()
    have = json.loads((where / "node_modules" / "katex" / "package.json").read_text())["version"]
    if wanted is not None and have != wanted:
        pytest.skip(f"KaTeX {have} is installed; Streamlit draws with {wanted}: "
                    f"npm install katex@{wanted}")
    done = subprocess.run(["node", "-e", _RENDER], cwd=where, capture_output=True, text=True,
                          input=json.dumps(formulas), timeout=300, check=True,
                          encoding="utf-8", errors="surrogatepass")
    return json.loads(done.stdout)


def test_katex_renders_every_code_point_and_the_nasty_texts():
    rng = random.Random(0)
    cps = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    texts = [chr(c) for c in range(0x10000) if not 0xD800 <= c <= 0xDFFF]
    texts += ["".join(chr(rng.choice(cps)) for _ in range(rng.randint(1, 30)))
              for _ in range(2000)]
    texts += NASTY
    formulas = [tex_text(t, 40) for t in texts] + [tex_running(t) for t in NASTY]
    assert katex_errors(formulas) == []


def test_katex_renders_whole_formulas_on_nasty_text():
    gpt2 = TiktokenTokenizer("gpt2")
    formulas = []
    for text in NASTY:
        clean = text.encode("utf-8", "replace").decode("utf-8")  # tokenizers take valid text
        char = train_tokenizer("char", clean)
        for tok in (char, gpt2):
            formulas.append(tokenizer_map(clean, tok.tokens(clean), tok.vocab_size))
        formulas.append(mapsto_line(list(clean), 0, True, [(clean[:5], 0.5)], False))
    assert katex_errors(formulas) == []


def test_a_token_of_spaces_says_so_beside_a_full_stop():
    """A review could not tell “·” (a space, 67.7 %) from “.” (<1 %) in the seeds' picture:
    the two differ only in the dot's height."""
    assert tex_text(" ") == r"\text{“·” (space)}" and tex_text(".") == r"\text{“.”}"
    assert "(space)" not in tex_text(" a") and "(space)" not in tex_text("\n")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=1, max_size=25))
def test_shown_terms_add_up_to_the_shown_total(values):
    """What a reader checks: the terms as written, added and rounded to the total's
    decimals (halves up), give the total as written; that total is the exact sum rounded,
    and each term is its value rounded. Left out: an exact sum closer to a rounding boundary
    than the terms' own rounding at 6 decimals can tell (n × 0.5e-6)."""
    exact = sum(Decimal(v) for v in values)
    assume(abs((exact * 1000) % 1 - Decimal("0.5")) / 1000 > len(values) * Decimal("5e-7"))
    terms, total = addends(values)
    added = sum(Decimal(t) for t in terms).quantize(Decimal("0.001"), ROUND_HALF_UP)
    assert str(added) == total
    assert abs(Decimal(total) - exact) <= Decimal("0.0005")
    places = len(terms[0].split(".")[1])
    assert all(len(t.split(".")[1]) == places for t in terms)
    assert all(abs(Decimal(t) - Decimal(v)) <= Decimal(5).scaleb(-places - 1)
               for t, v in zip(terms, values, strict=True))
