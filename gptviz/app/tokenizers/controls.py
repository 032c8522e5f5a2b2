"""Streamlit pieces of the Tokenizers page: corpus choice, training settings and
cached tokenizers. Trained tokenizers are cached globally for bundled corpora
(deterministic, read-only) and per session for uploads."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import streamlit as st

from gptviz.app.shared.picker import model_picker
from gptviz.app.shared.widgets import problem
from gptviz.data import CorpusError, bundled_corpora, decode_text, read_corpus
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

UPLOAD = "Upload a .txt file…"
# Short, since a bound widget writes its label into the URL (?tokenizer=GPT-2).
LABELS = {"char": "Character", "word": "Word", "bpe": "BPE", "gpt2": "GPT-2",
          "cl100k_base": "cl100k", "o200k_base": "o200k"}
MODEL = "model"  # the tokenizer of the model the other pages show (the sidebar's picker)
MODEL_LABEL = "This model's"
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
    choice = st.sidebar.pills("Corpus to train on", [*names, UPLOAD], key="corpus",
                              required=True, default=names[0],
                              help="What the character, word and BPE tokenizers learn from."
                              ) or names[0]  # pills that came back empty: the first corpus
    if choice == UPLOAD:
        upload = st.sidebar.file_uploader("Plain-text file (UTF-8)", type=["txt"], key="upload")
        if upload is not None:
            data = upload.getvalue()
            try:
                text = decode_text(data, f"“{upload.name}”")
                digest = hashlib.sha256(data).hexdigest()[:16]
                return Corpus(upload.name, text, f"upload-{digest}", True)
            except CorpusError as exc:
                st.sidebar.error(f"{exc} Using the bundled corpus meanwhile.")
        else:
            st.sidebar.info("No file yet: using the bundled corpus meanwhile.")
        choice = names[0]
    try:
        return Corpus(choice, read_corpus(choice), f"bundled-{choice}", False)
    except (CorpusError, OSError) as exc:
        problem(f"The corpus {choice!r} cannot be read: {exc}")
        return Corpus("(none)", "", "none", False)


def train_settings() -> TrainSettings:
    with st.sidebar.expander("Training settings", expanded=True, icon=":material/tune:"):
        bpe_vocab = st.number_input(
            "BPE vocab size", min_value=1, max_value=16384, value=512, step=64, key="bpe_vocab",
            help="256 bytes + merges + 4 special tokens.")
        first = next(iter(PATTERNS))
        pattern = st.segmented_control("BPE split pattern", list(PATTERNS), key="bpe_pattern",
                                       required=True, default=first,
                                       help="Merges never cross the chunks this regex "
                                            "cuts; 'none' merges across the whole text."
                                       ) or first  # empty: the first pattern
        word_vocab = st.number_input(
            "Word vocab size (0 = every word)", min_value=0, max_value=100_000, value=0,
            step=50, key="word_vocab",
            help=f"Keep only the most frequent words: the others become {UNK}.")
        char_vocab = st.number_input(
            "Character vocab size (0 = every character)", min_value=0, max_value=10_000,
            value=0, step=10, key="char_vocab")
    return TrainSettings(char_vocab or None, word_vocab or None, int(bpe_vocab), pattern)


@st.cache_resource(max_entries=24, show_spinner="Training tokenizer…")
def _train_shared(kind: str, key: str, vocab: int | None, pattern: str, _text: str) -> Tokenizer:
    """Bundled corpora: deterministic results, shared by every session (read-only)."""
    return train_tokenizer(kind, _text, vocab, pattern)


@st.cache_resource(max_entries=6, scope="session", show_spinner="Training tokenizer…")
def _train_private(kind: str, key: str, vocab: int | None, pattern: str, _text: str) -> Tokenizer:
    """Uploaded corpora stay in the uploader's session."""
    return train_tokenizer(kind, _text, vocab, pattern)


@st.cache_resource(show_spinner="Checking OpenAI's rank files…")
def pretrained() -> tuple[dict[str, Tokenizer], dict[str, str]]:
    """The OpenAI encodings whose files are here and sound, and a message for each whose
    file is corrupted (an encoding whose file is simply absent is not offered, and needs no
    message). Their files are checked now; each encoding is built when a view first uses
    it (``TiktokenTokenizer(lazy=True)``), once per server: o200k's holds ~45 MB."""
    problems = encoding_problems()
    broken = {name: f"{LABELS[name]}: {exc}" for name, exc in problems.items()
              if not isinstance(exc, MissingEncoding)}
    return {name: TiktokenTokenizer(name, lazy=True) for name in OPENAI_ENCODINGS
            if name not in problems}, broken


def loaded(toks: dict[str, Tokenizer], kinds=None) -> dict[str, Tokenizer]:
    """``toks``, with the OpenAI encodings among ``kinds`` (all by default) built, under a
    spinner the first time (a second or two for o200k)."""
    waiting = [t for k, t in toks.items() if isinstance(t, TiktokenTokenizer)
               and not t.loaded and (kinds is None or k in kinds)]
    if waiting:
        with st.spinner(f"Loading {', '.join(LABELS.get(t.name, t.name) for t in waiting)}…"):
            for tok in waiting:
                tok.load()
    return toks


@st.cache_resource(show_spinner="Rebuilding GPT-2's merges from its ranks…")
def gpt2_as_our_bpe(_gpt2: TiktokenTokenizer) -> ByteLevelBPE:
    """Our ByteLevelBPE with the merges recovered from the shared GPT-2 encoding's ranks
    (the rank file is not read again), built once per server for the Compare view's check."""
    return ByteLevelBPE.from_ranks(_gpt2.mergeable_ranks(), "gpt2", _gpt2.special_tokens)


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
            errors[kind] = f"{LABELS[kind]} tokenizer: {exc}"
    read = getattr(toks.get("bpe"), "trained_chars", None)
    if read is not None and read < len(corpus.text):
        limits = ByteLevelBPE.limits
        st.sidebar.warning(
            f"BPE learned its merges from the first {read:,} of the corpus's "
            f"{len(corpus.text):,} characters: the rest holds too many different chunks for the "
            f"memory one training may use on this shared server ({limits.chunks:,} distinct "
            f"chunks or {limits.chunk_bytes / 1e6:.1f} MB of them). A shorter or less random "
            "text trains it on all of it.",
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
    kind = LABELS.get(str(card.get("tokenizer", "")), "its own")
    corpus = f", learned from {card['corpus']}" if card.get("corpus") else ""
    st.caption(f"The tokenizer of the model **{picked.name}** ({kind}, |V| = "
               f"{picked.checkpoint.tokenizer.vocab_size:,}{corpus}): the tokens the model "
               "reads, as the Lesson and the model pages show them. Choose another model in the "
               "sidebar.")
    return picked.checkpoint.tokenizer
