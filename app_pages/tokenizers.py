"""Tokenizers: T: TEXTS -> Seq(V), four ways, side by side."""

import streamlit as st

from gptviz.app.shared.widgets import cap_text, problem
from gptviz.app.tokenizers import view as sections
from gptviz.app.tokenizers.controls import LABELS, all_tokenizers, corpus_picker, train_settings
from gptviz.tokenizers import TokenizerError

DEFAULT_TEXT = ("The Steenrod problem for closed orientable manifolds was solved by Thom in 1954.\n"
                "Its orbifold analogue: représentation des classes — “naïve” 🙂 ∫ω = 0")

st.title("Tokenizers")
st.markdown(
    "A tokenizer is a map $T:\\mathrm{TEXTS}\\to\\mathrm{Seq}(V)$: it cuts a text into tokens "
    "from a vocabulary $V$ and numbers them. Compare a character, a word and a byte-level BPE "
    "tokenizer trained on the corpus in the sidebar with OpenAI's GPT-2 encoding.")

corpus = corpus_picker()
settings = train_settings()
toks, errors = all_tokenizers(corpus, settings)
for message in errors.values():
    st.sidebar.error(message, icon=":material/error:")
st.sidebar.caption(f"Corpus: **{corpus.name}**, {len(corpus.text):,} characters.")

kinds = [k for k in LABELS if k in toks or k in errors]
kind = st.segmented_control("Tokenizer", kinds, format_func=LABELS.get, default="bpe",
                            key="tokenizer", bind="query-params", required=True)
raw = st.text_area("Text to tokenize", value=DEFAULT_TEXT, height=110, key="text",
                   bind="query-params")
c1, c2 = st.columns(2)
markers = c1.toggle("Add <|BOS|> and <|EOS|>", key="markers",
                    disabled=kind not in ("char", "word", "bpe"),
                    help="The seeds' begin/end-of-text markers (not in OpenAI's encodings).")
specials = c2.toggle("Recognise special tokens written in the text", key="specials",
                     help="Off: '<|endoftext|>' typed in the text is ordinary characters. "
                          "On: it becomes the single special token.")

text = cap_text(raw or "")
tok = toks.get(kind)
if not text:
    st.info("The text box is empty: type or paste some text to see its tokens.",
            icon=":material/edit_note:")
elif tok is None:
    problem(errors.get(kind, f"{LABELS.get(kind, kind)} is not available."))
else:
    allowed = "all" if specials else "none"
    tabs = st.tabs(["Tokens", "Compare", "Decode", "BPE merges"])
    try:
        tokens = tok.tokens(text, bos=markers, eos=markers, allowed_special=allowed)
    except TokenizerError as exc:
        tokens = None
        tabs[0].error(f"Cannot tokenize this text: {exc}")
    with tabs[0]:
        if tokens:
            sections.tokens_section(tok, text, tokens, kind)
    with tabs[1]:
        sections.compare_section(text, toks)
    with tabs[2]:
        sections.decode_section(tok, [t.id for t in tokens or []])
    with tabs[3]:
        sections.bpe_section(toks.get("bpe"), errors.get("bpe"), text)
