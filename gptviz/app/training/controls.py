"""Streamlit pieces of the Training page: presets, the setup widgets, and the
resources that own training (one job per session, a few trainers per server).

Tokenizers trained on bundled or synthetic corpora are shared (deterministic,
read-only); anything from an upload stays in the uploader's session.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, fields, replace

import numpy as np
import streamlit as st

from gptviz.app.generation.prose import sentences
from gptviz.app.shared.spinner import said
from gptviz.app.speedups.choice import select
from gptviz.app.tokenizers.controls import _train_private, _train_shared
from gptviz.data import CorpusError, bundled_corpora, decode_text, read_corpus
from gptviz.i18n import N_, _, number, pgettext, separators
from gptviz.model import RunConfig
from gptviz.model.config import ACTIVATIONS, POSITIONALS
from gptviz.tokenizers import Tokenizer, TokenizerError
from gptviz.train.device import pick_dtype
from gptviz.train.jobs import SessionTrainer
from gptviz.train.plan import (
    PRESETS,
    TrainingCaps,
    TrainingSpec,
    check_caps,
    check_corpus_length,
    run_config,
    synthetic_text,
)
from gptviz.train.timing import estimate_run_seconds

CORPUS_UPLOAD_LIMIT = 2_000_000  # bytes of an uploaded .txt: a few minutes of training
UPLOAD, SYNTHETIC = "upload", "synthetic:"
TASKS = {"induction": N_("r|r: copy a random string of 6–14 letters"),
         "sorting": N_("s>sorted(s): sort 6 digits")}
LEARNING_RATES = (1e-4, 3e-4, 1e-3, 3e-3, 6e-3, 1e-2, 3e-2, 0.1, 1.0, 10.0, 100.0)
K = "tr_"  # prefix of this page's widget keys


@dataclass
class Setup:
    """What the setup widgets produced: the spec, the corpus, and whether it can run."""

    spec: TrainingSpec
    corpus_name: str
    text: str = ""
    tokenizer: Tokenizer | None = None
    ids: np.ndarray | None = None  # (n_tokens,) int32
    run: RunConfig | None = None
    estimate_s: float = 0.0
    problems: tuple[str, ...] = ()  # each blocks the Start button
    notes: tuple[str, ...] = ()  # worth knowing, not blocking


@st.cache_resource(scope="session", show_spinner=False, on_release=SessionTrainer.close)
def session_trainer() -> SessionTrainer:
    """This browser session's trainer; released (thread stopped) when the tab closes."""
    return SessionTrainer()


def caps() -> TrainingCaps:
    return TrainingCaps.from_env()


def apply_preset(name: str) -> None:
    """Widget callback: copy a preset's values into the setup widgets."""
    for f in fields(TrainingSpec):
        st.session_state[K + f.name] = getattr(PRESETS[name], f.name)
    corpus = st.session_state[K + "corpus"]
    if not corpus.startswith(SYNTHETIC) and corpus not in bundled_corpora():
        st.session_state[K + "corpus"] = next(iter(bundled_corpora()), SYNTHETIC + "induction")


def _on_tokenizer_change() -> None:
    kind = st.session_state[K + "tokenizer"]
    st.session_state[K + "vocab_size"] = 512 if kind == "bpe" else 0


def _init_state() -> None:
    """Settings not chosen yet start at the "30-second demo" preset."""
    demo = PRESETS["30-second demo"]
    for f in fields(TrainingSpec):
        st.session_state.setdefault(K + f.name, getattr(demo, f.name))


@said(st.cache_data, N_("Making the synthetic corpus…"), max_entries=4)
def _synthetic(task: str) -> str:
    return synthetic_text(task)


def _corpus_name(option: str) -> str:
    if option == UPLOAD:
        return _("Upload a .txt file…")
    if option.startswith(SYNTHETIC):
        return _("synthetic — {task}").format(task=_(TASKS[option[len(SYNTHETIC):]]))
    return _("{name} (bundled)").format(name=option)


def _corpus(disabled: bool) -> tuple[str, str, str, bool] | None:
    """(display name, text, cache key, uploaded) or None with a message shown."""
    names = list(bundled_corpora())
    options = [*names, *(SYNTHETIC + t for t in TASKS), UPLOAD]
    choice = select(
        _("Corpus"), options, K + "corpus", disabled=disabled,
        format_func=_corpus_name)
    if choice.startswith(SYNTHETIC):
        task = choice[len(SYNTHETIC):]
        text = _synthetic(task)
        return f"synthetic-{task}", text, choice, False
    if choice == UPLOAD:
        upload = st.file_uploader(_("Plain-text file (UTF-8, at most 2 MB)"), type=["txt"],
                                  key=K + "upload", disabled=disabled)
        if upload is None:
            st.info(_("Choose a .txt file to train on."), icon=":material/upload_file:")
            return None
        data = upload.getvalue()
        try:
            text = decode_text(data, f"“{upload.name}”", limit=CORPUS_UPLOAD_LIMIT)
        except CorpusError as exc:
            st.error(_("Cannot train on this file: {why}").format(why=exc),
                     icon=":material/error:")
            return None
        key = "upload-" + hashlib.sha256(data).hexdigest()[:16]
        return upload.name.removesuffix(".txt"), text, key, True
    try:
        return choice, read_corpus(choice), f"bundled-{choice}", False
    except (CorpusError, OSError) as exc:
        st.error(_("The corpus {name} cannot be read: {why}").format(name=repr(choice), why=exc),
                 icon=":material/error:")
        return None


def _encoded(tok: Tokenizer, text: str) -> np.ndarray:
    """The corpus as ids (n_tokens,) int32, read-only: the caches below hand out this one
    array (``st.cache_data`` would keep it pickled and unpickle a copy at every run)."""
    ids = np.asarray(tok.encode(text), dtype=np.int32)
    ids.flags.writeable = False
    return ids


@said(st.cache_resource, N_("Encoding the corpus…"), max_entries=8)
def _encode_shared(kind: str, key: str, vocab: int | None, _tok: Tokenizer, _text: str
                   ) -> np.ndarray:
    return _encoded(_tok, _text)


@said(st.cache_resource, N_("Encoding the corpus…"), max_entries=2, scope="session")
def _encode_private(kind: str, key: str, vocab: int | None, _tok: Tokenizer, _text: str
                    ) -> np.ndarray:
    return _encoded(_tok, _text)


def _kw(name: str, disabled: bool) -> dict:
    """Common widget arguments: this page's key, kept across page switches."""
    return dict(key=K + name, disabled=disabled, persist_state="session")


def schedule_help(steps: int, learning_rate: float) -> str:
    """What ``lr_at`` does with the schedule ``run_config`` sets for these steps and peak.

    >>> schedule_help(800, 0.01)[:60]
    'The peak is η = 0.01. Linear warmup over the first w = 80 st'
    """
    tc = run_config(replace(PRESETS["30-second demo"], steps=int(steps),
                            learning_rate=float(learning_rate)), 256).train
    w, lr, floor = tc.warmup_steps, tc.learning_rate, tc.min_lr
    facts = dict(lr=_g(lr), w=w, w1=w + 1, first=_g(float(f"{lr / (w + 1):.3g}")),
                 floor=_g(floor), n=number(tc.steps, 0, grouping=True))
    warmup = (_("The peak is η = {lr}. Linear warmup over the first w = {w} steps (10 % of the "
                "steps, at most 100): step s (counted from 0) uses η·(s + 1)/(w + 1), from "
                "η/{w1} = {first} at step 0 up to η at step {w}.") if w else
              _("The peak is η = {lr}. No warmup (fewer than 10 steps): step 0 already uses η."))
    return sentences(warmup, _("Then a half cosine takes it down to η_min = η/10 = {floor}, "
                               "reached as the {n} steps end.")).format(**facts)


def _g(x: float) -> str:
    """``x`` as ``{:g}`` writes it, with the reader's decimal sign."""
    return f"{x:g}".replace(".", separators()[0])


def _model_widgets(disabled: bool) -> None:
    c1, c2, c3 = st.columns(3)
    c1.select_slider(_("d_model (width)"), [16, 32, 48, 64, 96, 128, 192, 256, 384, 512],
                     **_kw("d_model", disabled))
    c1.slider(_("Layers (blocks)"), 1, 12, **_kw("n_layer", disabled))
    c1.select_slider(_("Heads per layer"), [1, 2, 3, 4, 6, 8, 12, 16],
                     **_kw("n_head", disabled),
                     help=_("Must divide d_model: d_k = d_model / heads."))
    c2.select_slider(_("Context length N"), [8, 16, 32, 64, 128, 256, 512, 1024],
                     **_kw("context_length", disabled))
    c3.number_input(pgettext("run step", "Steps"), 1, 100_000, step=100, **_kw("steps", disabled))
    c3.number_input(_("Batch size B"), 1, 1024, **_kw("batch_size", disabled))
    c3.select_slider(_("Peak learning rate"), LEARNING_RATES, **_kw("learning_rate", disabled),
                     format_func=_g,
                     help=schedule_help(st.session_state[K + "steps"],
                                        st.session_state[K + "learning_rate"]))
    c3.number_input(_("Seed"), 0, 2**31 - 1, **_kw("seed", disabled))
    c3.number_input(_("Stride between windows"), 1, 1024, **_kw("stride", disabled))


def setup(disabled: bool = False) -> Setup:
    """Presets, corpus, tokenizer, model and training widgets → a checked ``Setup``."""
    _init_state()
    cols = st.columns(len(PRESETS) + 1)
    cols[0].markdown(_("**Presets**"))
    for col, name in zip(cols[1:], PRESETS, strict=True):
        col.button(_(name), key=f"{K}preset-{name}", on_click=apply_preset, args=(name,),
                   disabled=disabled, width="stretch")
    c1, c3 = st.columns([3, 1])
    with c1:
        corpus = _corpus(disabled)
    c3.number_input(_("Vocabulary size (0 = every symbol)"), 0, 50_000, step=64,
                    **_kw("vocab_size", disabled),
                    help=_("BPE needs at least 260 (256 bytes + 4 specials)."))
    # the choices in a row of their own that wraps: in a column, a narrow window cut them
    # ("rope" read "ro", "bpe" was gone)
    with st.container(horizontal=True, gap="large"):
        kind = st.segmented_control(_("Tokenizer"), ["char", "word", "bpe"], required=True,
                                    on_change=_on_tokenizer_change, **_kw("tokenizer", disabled))
        st.segmented_control(_("Positional encoding"),
                             sorted(POSITIONALS, key=lambda p: p != "learned"),
                             required=True, **_kw("positional", disabled))
        st.segmented_control(_("Activation"), list(ACTIVATIONS), required=True,
                             **_kw("activation", disabled))
    _model_widgets(disabled)
    spec = TrainingSpec(**{f.name: st.session_state[K + f.name] for f in fields(TrainingSpec)
                           if f.name != "corpus"}, corpus=st.session_state[K + "corpus"])
    if corpus is None:
        return Setup(spec, "", problems=(_("Choose a usable corpus first."),))
    name, text, key, uploaded = corpus
    return _check(spec, name, text, key, uploaded, kind)


def _check(spec: TrainingSpec, name: str, text: str, key: str, uploaded: bool, kind: str
           ) -> Setup:
    """Train the tokenizer, encode, and check the plan against the corpus and the caps."""
    vocab = spec.vocab_size or None
    out = Setup(spec, name, text)
    train = _train_private if uploaded else _train_shared
    try:
        tok = train(kind, key, vocab, "gpt2" if kind == "bpe" else "", text)
    except TokenizerError as exc:
        out.problems = (_("Tokenizer: {why}").format(why=exc),)
        return out
    notes = []
    if vocab and vocab > tok.vocab_size:
        notes.append(_(_FEWER.get(kind, _FEWER["char"])).format(
            asked=_grouped(vocab), have=_grouped(tok.vocab_size - 4), v=_grouped(tok.vocab_size)))
    encode = _encode_private if uploaded else _encode_shared
    out.tokenizer, out.ids = tok, encode(kind, key, vocab, tok, text)
    problems = []
    try:
        out.run = run_config(spec, tok.vocab_size, pick_dtype())
    except ValueError as exc:
        problems.append(_("Model: {why}").format(why=exc))
    if (short := check_corpus_length(len(out.ids), spec.context_length)) is not None:
        problems.append(_("Corpus: {why}").format(why=short))
    if out.run is not None:
        out.estimate_s = estimate_run_seconds(out.run)  # timed on this server (timing.py)
        problems += [_("Over the caps: {why}").format(why=m)
                     for m in check_caps(out.run, caps(), out.estimate_s)]
    out.problems, out.notes = tuple(problems), tuple(notes)
    return out


# The corpus has fewer symbols than the vocabulary asked for, by tokenizer
_FEWER = {
    "char": N_("You asked for {asked} tokens but this corpus has only {have} distinct chars "
               "(+ 4 specials): |V| = {v}."),
    "word": N_("You asked for {asked} tokens but this corpus has only {have} distinct words "
               "(+ 4 specials): |V| = {v}."),
    "bpe": N_("You asked for {asked} tokens but this corpus has only {have} distinct bpes "
              "(+ 4 specials): |V| = {v}."),
}


def _grouped(n: int) -> str:
    return number(n, 0, grouping=True)
