"""Streamlit pieces of the Tokenizers page: corpus choice, training settings and
cached tokenizers. Trained tokenizers are cached globally for bundled corpora
(deterministic, read-only) and per session for uploads."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import streamlit as st

from gptviz.app.serving.sessions import when_idle
from gptviz.app.shared.picker import model_picker
from gptviz.app.shared.spinner import said
from gptviz.app.shared.widgets import problem
from gptviz.data import CorpusError, bundled_corpora, decode_text, read_corpus
from gptviz.i18n import N_, _, current, number
from gptviz.tokenizers import (
    OPENAI_ENCODINGS,
    PATTERNS,
    ByteLevelBPE,
    MissingEncoding,
    TiktokenTokenizer,
    Tokenizer,
    TokenizerError,
    train_tokenizer,
)
from gptviz.tokenizers.openai import encoding_problems
from gptviz.tokenizers.specials import UNK

UPLOAD = N_("Upload a .txt file…")  # an option's value, shown as _(UPLOAD)
# Short, since a bound widget writes its label into the URL (?tokenizer=GPT-2); the link
# keeps the English (``views.url_bound``), the page shows ``_(label)``.
LABELS = {"char": N_("Character"), "word": N_("Word"), "bpe": "BPE", "gpt2": "GPT-2",
          "cl100k_base": "cl100k", "o200k_base": "o200k"}
MODEL = "model"  # the tokenizer of the model the other pages show (the sidebar's picker)
MODEL_LABEL = N_("This model's")
KIND_LABELS = {MODEL: MODEL_LABEL, **LABELS}


@dataclass(frozen=True)
class Corpus:
    name: str
    text: str
    key: str  # identifies the text in caches
    uploaded: bool


@dataclass(frozen=True)
class TrainSettings:
    char_vocab: int | None  # keep the most frequent characters (None: all)
    word_vocab: int | None
    bpe_vocab: int
    bpe_pattern: str


def corpus_picker() -> Corpus:
    """Sidebar: a bundled corpus or an uploaded ``.txt`` (bad uploads fall back, with a message)."""
    names = list(bundled_corpora())
    choice = st.sidebar.pills(_("Corpus to train on"), [*names, UPLOAD], key="corpus",
                              required=True, default=names[0],
                              format_func=lambda n: _(n) if n == UPLOAD else n,
                              help=_("What the character, word and BPE tokenizers learn from.")
                              ) or names[0]  # pills that came back empty: the first corpus
    if choice == UPLOAD:
        upload = st.sidebar.file_uploader(_("Plain-text file (UTF-8)"), type=["txt"],
                                          key="upload")
        if upload is not None:
            data = upload.getvalue()
            try:
                text = decode_text(data, f"“{upload.name}”")
                digest = hashlib.sha256(data).hexdigest()[:16]
                return Corpus(upload.name, text, f"upload-{digest}", True)
            except CorpusError as exc:
                st.sidebar.error(_("{error} Using the bundled corpus meanwhile.").format(
                    error=exc))
        else:
            st.sidebar.info(_("No file yet: using the bundled corpus meanwhile."))
        choice = names[0]
    try:
        return Corpus(choice, read_corpus(choice), f"bundled-{choice}", False)
    except (CorpusError, OSError) as exc:
        problem(_("The corpus {name} cannot be read: {error}").format(name=repr(choice),
                                                                       error=exc))
        return Corpus(_("(none)"), "", "none", False)


def train_settings() -> TrainSettings:
    with st.sidebar.expander(_("Training settings"), expanded=True, icon=":material/tune:"):
        bpe_vocab = st.number_input(
            _("BPE vocab size"), min_value=1, max_value=16384, value=512, step=64,
            key="bpe_vocab", help=_("256 bytes + merges + 4 special tokens."))
        first = next(iter(PATTERNS))
        pattern = st.segmented_control(_("BPE split pattern"), list(PATTERNS),
                                       key="bpe_pattern", required=True, default=first,
                                       help=_("Merges never cross the chunks this regex "
                                              "cuts; 'none' merges across the whole text.")
                                       ) or first  # empty: the first pattern
        word_vocab = st.number_input(
            _("Word vocab size (0 = every word)"), min_value=0, max_value=100_000, value=0,
            step=50, key="word_vocab",
            help=_("Keep only the most frequent words: the others become {unk}.").format(
                unk=UNK))
        char_vocab = st.number_input(
            _("Character vocab size (0 = every character)"), min_value=0, max_value=10_000,
            value=0, step=10, key="char_vocab")
    return TrainSettings(char_vocab or None, word_vocab or None, int(bpe_vocab), pattern)


@said(st.cache_resource, N_("Training tokenizer…"), max_entries=24)
def _train_shared(kind: str, key: str, vocab: int | None, pattern: str, _text: str) -> Tokenizer:
    """Bundled corpora: deterministic results, shared by every session (read-only)."""
    return train_tokenizer(kind, _text, vocab, pattern)


@said(st.cache_resource, N_("Training tokenizer…"), max_entries=6, scope="session")
def _train_private(kind: str, key: str, vocab: int | None, pattern: str, _text: str) -> Tokenizer:
    """Uploaded corpora stay in the uploader's session."""
    return train_tokenizer(kind, _text, vocab, pattern)


def pretrained() -> tuple[dict[str, Tokenizer], dict[str, str]]:
    """The OpenAI encodings whose files are here and sound, and a message for each whose
    file is corrupted (an encoding whose file is simply absent is not offered, and needs no
    message), in the reader's language. Their files are checked once per server (and once
    more per language, for the messages); each encoding is built when a view first uses it
    (``TiktokenTokenizer(lazy=True)``), once per server: o200k's holds ~45 MB."""
    return _pretrained(), _broken(current())


@said(st.cache_resource, N_("Checking OpenAI's rank files…"))
def _pretrained() -> dict[str, Tokenizer]:
    problems = encoding_problems()
    return {name: TiktokenTokenizer(name, lazy=True) for name in OPENAI_ENCODINGS
            if name not in problems}


@said(st.cache_resource, N_("Checking OpenAI's rank files…"))
def _broken(lang: str) -> dict[str, str]:
    """Why each corrupted encoding does not load, in ``lang`` (the engine's messages are
    written in the language being served when they are raised)."""
    return {name: f"{LABELS[name]}: {exc}" for name, exc in encoding_problems().items()
            if not isinstance(exc, MissingEncoding)}


def loaded(toks: dict[str, Tokenizer], kinds=None) -> dict[str, Tokenizer]:
    """``toks``, with the OpenAI encodings among ``kinds`` (all by default) built, under a
    spinner the first time (a second or two for o200k)."""
    waiting = [t for k, t in toks.items() if isinstance(t, TiktokenTokenizer)
               and not t.loaded and (kinds is None or k in kinds)]
    if waiting:
        with st.spinner(_("Loading {names}…").format(
                names=", ".join(LABELS.get(t.name, t.name) for t in waiting))):
            for tok in waiting:
                tok.load()
    return toks


def gpt2_as_our_bpe(gpt2: TiktokenTokenizer) -> ByteLevelBPE:
    """Our ByteLevelBPE with the merges recovered from the shared GPT-2 encoding's ranks
    (the rank file is not read again), built once per server for the Compare view's check."""
    return _gpt2_as_our_bpe(gpt2)


@said(st.cache_resource, N_("Rebuilding GPT-2's merges from its ranks…"))
def _gpt2_as_our_bpe(_gpt2: TiktokenTokenizer) -> ByteLevelBPE:
    return ByteLevelBPE.from_ranks(_gpt2.mergeable_ranks(), "gpt2", _gpt2.special_tokens)


for _shared_tokenizers in (_train_shared, _pretrained, _gpt2_as_our_bpe):
    when_idle(_shared_tokenizers.clear)  # built again for the next class (a second or two)


def all_tokenizers(corpus: Corpus, s: TrainSettings) -> tuple[dict[str, Tokenizer], dict]:
    """Every tokenizer by kind, trained where needed, and a message per failure (in the
    sidebar too: where BPE learned from part of the corpus only, to bound its memory)."""
    train = _train_private if corpus.uploaded else _train_shared
    wanted = {"char": s.char_vocab, "word": s.word_vocab, "bpe": s.bpe_vocab}
    toks: dict[str, Tokenizer] = {}
    errors: dict[str, str] = {}
    for kind, vocab in wanted.items():
        try:
            pattern = s.bpe_pattern if kind == "bpe" else ""
            toks[kind] = train(kind, corpus.key, vocab, pattern, corpus.text)
        except TokenizerError as exc:
            errors[kind] = _("{name} tokenizer: {error}").format(name=_(LABELS[kind]),
                                                                 error=exc)
    read = getattr(toks.get("bpe"), "trained_chars", None)
    if read is not None and read < len(corpus.text):
        limits = ByteLevelBPE.limits
        st.sidebar.warning(
            _("BPE learned its merges from the first {read} of the corpus's {n} characters: "
              "the rest holds too many different chunks for the memory one training may use "
              "on this shared server ({chunks} distinct chunks or {mb} MB of them). A shorter "
              "or less random text trains it on all of it.").format(
                read=number(read, 0, grouping=True), n=number(len(corpus.text), 0, grouping=True),
                chunks=number(limits.chunks, 0, grouping=True),
                mb=number(limits.chunk_bytes / 1e6, 1)),
            icon=":material/content_cut:")
    ready, broken = pretrained()
    toks.update(ready)
    errors.update(broken)
    return toks, errors


def model_tokenizer() -> Tokenizer | None:
    """The tokenizer of the model chosen in the sidebar (the one the Lesson and the model
    pages use, ``?model=``), with a line naming it; None when no model loads."""
    picked = model_picker()
    if picked is None:
        return None
    card = picked.checkpoint.card
    kind = _(LABELS.get(str(card.get("tokenizer", "")), N_("its own")))
    vocab = number(picked.checkpoint.tokenizer.vocab_size, 0, grouping=True)
    if card.get("corpus"):
        line = _("The tokenizer of the model **{name}** ({kind}, |V| = {vocab}, learned from "
                 "{corpus}): the tokens the model reads, as the Lesson and the model pages "
                 "show them. Choose another model in the sidebar.")
    else:
        line = _("The tokenizer of the model **{name}** ({kind}, |V| = {vocab}): the tokens "
                 "the model reads, as the Lesson and the model pages show them. Choose "
                 "another model in the sidebar.")
    st.caption(line.format(name=picked.name, kind=kind, vocab=vocab, corpus=card.get("corpus")))
    return picked.checkpoint.tokenizer
