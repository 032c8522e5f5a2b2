"""One short passage in many languages and scripts, and what it costs each tokenizer.

The passage (``assets/corpora/languages.json``, written for this project) says the
same thing in every language, so the number of tokens it takes measures the
tokenizer, not the content. ``language_costs`` counts, for every language and
tokenizer, the tokens per character, the tokens per word and the cost against
English: tokens for the passage / tokens for the English passage.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from gptviz.i18n import _
from gptviz.tokenizers.base import Tokenizer, TokenizerError
from gptviz.tokenizers.specials import UNK

SAMPLE_FILE = Path(__file__).resolve().parents[2] / "assets" / "corpora" / "languages.json"
REFERENCE = "English"  # the language every cost is measured against
# Scripts that do not put spaces between words: there a "word" is one letter or digit.
NO_SPACES = frozenset({"Chinese", "Japanese"})
_LETTER_OR_DIGIT = re.compile(r"\w")


def load_sample(path: str | Path = SAMPLE_FILE) -> dict[str, str]:
    """Language -> the passage in it, in the file's order (English first).

    >>> sample = load_sample(); next(iter(sample)), len(sample) >= 12
    ('English', True)
    """
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise TokenizerError(_("the multilingual sample {path} cannot be read "
                               "({exc}).").format(path=path, exc=exc)) from exc
    if not isinstance(data, dict) or REFERENCE not in data \
            or not all(isinstance(v, str) and v for v in data.values()):
        raise TokenizerError(_("{path} must map language names to non-empty "
                               "texts, {reference} among them.").format(
                                 path=path, reference=REFERENCE))
    return data


def count_words(text: str, language: str) -> int:
    """Words as the page counts them: the whitespace-separated pieces of the text (so
    "town." is one word), except in Chinese and Japanese, which write no spaces between
    words: there every letter or digit is one word and punctuation is not counted.

    >>> count_words("the old bridge.", "English"), count_words("老桥被淹没。", "Chinese")
    (3, 5)
    """
    if language in NO_SPACES:
        return len(_LETTER_OR_DIGIT.findall(text))
    return len(text.split())


def language_costs(sample: dict[str, str], tokenizers: dict[str, Tokenizer],
                   reference: str = REFERENCE) -> list[dict]:
    """One row per (language, tokenizer): characters, words, UTF-8 bytes, tokens, tokens per
    character, tokens per word, cost against ``reference``, the share of ``<|UNK|>`` tokens
    and whether decoding gives the passage back.

    >>> from gptviz.tokenizers.char import CharTokenizer
    >>> tok = CharTokenizer(); _ = tok.train("the sun")
    >>> rows = language_costs({"English": "the sun", "German": "die Sonne"}, {"char": tok})
    >>> [(r["language"], r["tokens"], r["cost vs English"], r["UNK share"]) for r in rows]
    [('English', 7, 1.0, 0.0), ('German', 9, 1.2857142857142858, 0.4444444444444444)]
    """
    if reference not in sample:
        raise TokenizerError(_("the sample has no {reference} passage to compare "
                               "against.").format(reference=reference))
    rows = []
    for name, tok in tokenizers.items():
        unk = tok.special_tokens.get(UNK)
        counts = {lang: tok.encode(text) for lang, text in sample.items()}
        base = len(counts[reference])
        for lang, text in sample.items():
            ids = counts[lang]
            words = count_words(text, lang)
            rows.append({
                "language": lang,
                "tokenizer": name,
                "characters": len(text),
                "words": words,
                "UTF-8 bytes": len(text.encode("utf-8")),
                "tokens": len(ids),
                "tokens per character": len(ids) / len(text),
                "tokens per word": len(ids) / words if words else float("nan"),
                f"cost vs {reference}": len(ids) / base if base else float("nan"),
                "UNK share": (ids.count(unk) / len(ids)) if ids and unk is not None else 0.0,
                "round trip": tok.decode(ids) == text,
            })
    return rows
