"""Tokenizers: T: TEXTS -> Seq(V), four ways, side by side."""

import streamlit as st

from gptviz.app.shared.presenter import page_top
from gptviz.app.shared.views import url_bound
from gptviz.app.shared.widgets import cap_text, linked_text_area, problem, view_tabs
from gptviz.app.tokenizers import view as sections
from gptviz.app.tokenizers.controls import (
    KIND_LABELS,
    LABELS,
    MODEL,
    all_tokenizers,
    corpus_picker,
    model_tokenizer,
    train_settings,
)
from gptviz.i18n import _, ngettext, number
from gptviz.tokenizers import BOS, ENDOFTEXT, EOS, TokenizerError

DEFAULT_TEXT = ("The Steenrod problem for closed orientable manifolds was solved by Thom in 1954.\n"
                "Its orbifold analogue: représentation des classes — “naïve” 🙂 ∫ω = 0")

page_top(
    _("Tokenizers"),
    _("A tokenizer is a map $T:\\mathrm{TEXTS}\\to\\mathrm{Seq}(V)$: it cuts a text into tokens "
      "from a vocabulary $V$ and numbers them. Compare a character, a word and a byte-level "
      "BPE tokenizer trained on the corpus in the sidebar with OpenAI's encodings: GPT-2's, "
      "GPT-4's cl100k and GPT-4o's o200k, and with the tokenizer of the model the other pages "
      "show (“This model's”)."))

corpus = corpus_picker()
settings = train_settings()
toks, errors = all_tokenizers(corpus, settings)
for message in errors.values():
    st.sidebar.error(message, icon=":material/error:")
st.sidebar.caption(ngettext("Corpus: **{name}**, {n} character.",
                            "Corpus: **{name}**, {n} characters.", len(corpus.text)).format(
    name=corpus.name, n=number(len(corpus.text), 0, grouping=True)))

kinds = [MODEL, *(k for k in LABELS if k in toks or k in errors)]
# A link from another page names its model: open on that model's tokenizer.
kind = st.segmented_control(_("Tokenizer"), kinds, format_func=lambda k: _(KIND_LABELS[k]),
                            default=MODEL if "model" in st.query_params else "bpe",
                            key="tokenizer", required=True,
                            **url_bound("tokenizer", kinds, KIND_LABELS.get))
if kind == MODEL:
    mine = model_tokenizer()
    if mine is not None:
        toks[MODEL] = mine
    else:
        errors[MODEL] = _("No model could be loaded, so there is no model's tokenizer to show.")
raw = linked_text_area(_("Text to tokenize"), "text", DEFAULT_TEXT, height=110)
c1, c2 = st.columns(2)
markers = c1.toggle(_("Add {bos} and {eos}").format(bos=BOS, eos=EOS), key="markers",
                    disabled=kind not in ("char", "word", "bpe", MODEL),
                    help=_("The seeds' begin/end-of-text markers (not in OpenAI's encodings)."))
specials = c2.toggle(_("Recognise special tokens written in the text"), key="specials",
                     help=_("Off: '{special}' typed in the text is ordinary characters. "
                            "On: it becomes the single special token.").format(
                         special=ENDOFTEXT))

text = cap_text(raw or "")
tok = toks.get(kind)
if not text:
    st.info(_("The text box is empty: type or paste some text to see its tokens."),
            icon=":material/edit_note:")
elif tok is None:
    problem(errors.get(kind) or _("{name} is not available.").format(
        name=_(KIND_LABELS.get(kind, kind))))
else:
    allowed = "all" if specials else "none"
    error = None
    try:
        tokens = tok.tokens(text, bos=markers, eos=markers, allowed_special=allowed)
    except TokenizerError as exc:
        tokens, error = None, str(exc)
    view_tabs(sections.VIEWS, dict(tok=tok, text=text, tokens=tokens, kind=kind, error=error,
                                   toks=toks, errors=errors,
                                   cache_key=f"{corpus.key}|{settings}"))
