"""The Learning page's inputs: the text to learn from, the window, the target position.

The text is the corpus the model was trained on when its card names one we have (a
bundled corpus, or a synthetic task of the Training page), or a text the user pastes.
It is encoded once and cut into the trainer's windows: N inputs, then the next token,
N being the model's context, or less for a long context (``window_length``).
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import streamlit as st

from gptviz.analysis.learning import LearningError, Window, check_position, take_window
from gptviz.app.learning.figures import window_chips_html
from gptviz.app.shared.cache import vocab_labels
from gptviz.app.shared.picker import Picked
from gptviz.app.shared.spinner import said
from gptviz.app.shared.widgets import cap_text, problem
from gptviz.checkpoints.folder import Checkpoint
from gptviz.data import CorpusError, bundled_corpora, read_corpus
from gptviz.i18n import N_, _, ngettext, number
from gptviz.model import GPT
from gptviz.model.config import TrainConfig
from gptviz.tokenizers import TokenizerError
from gptviz.tokenizers.specials import UNK
from gptviz.train.plan import SYNTHETIC_TASKS, synthetic_text

PASTE = "paste"  # the text source "a text the user pastes"
SYNTHETIC = "synthetic-"  # how the Training page names a synthetic corpus on the card
PASTE_LIMIT = 20_000  # characters of a pasted text (cap_text says so when it cuts)
# Each η of the step slider costs a forward pass over the window with every parameter stepped
# (at 1,024 tokens GPT-2 small's microscope took 8 minutes and 11 GB); the loss at t reads
# x_0 … x_t only (the causal mask), so a shorter window changes no number at t.
WINDOW_TOKENS = 128  # the longest window: the largest bundled context
BIG_MODEL, BIG_WINDOW = 10_000_000, 32  # parameters above which windows are BIG_WINDOW long


def window_length(model: GPT) -> int:
    """N of the page's windows: the context, at most WINDOW_TOKENS (BIG_WINDOW for a model
    of more than BIG_MODEL parameters)."""
    cap = BIG_WINDOW if model.num_params() > BIG_MODEL else WINDOW_TOKENS
    return min(model.config.context_length, cap)


def median_position(losses: np.ndarray) -> int:
    """The position of the median loss (the lower middle one for an even count): a
    typical prediction of the window, the page's default target.

    >>> median_position(np.array([0.1, 3.0, 1.2, 0.9, 5.0, 2.0]))
    2
    """
    return int(np.argsort(losses, kind="stable")[(len(losses) - 1) // 2])


@dataclass(frozen=True)
class Source:
    """The encoded text windows are cut from."""

    name: str  # "mathematics", "synthetic-induction" or PASTE
    ids: np.ndarray  # (n_tokens,) int32
    val_from: int | None  # first token of the held-out validation tail, when known


def trained_corpus(ckpt: Checkpoint) -> str | None:
    """The corpus the card names, when we can read it: 'mathematics.txt' -> 'mathematics';
    a Training-page model's 'synthetic-induction' stays as it is; anything else -> None."""
    name = str(ckpt.card.get("corpus", ""))
    if name.startswith(SYNTHETIC) and name[len(SYNTHETIC):] in SYNTHETIC_TASKS:
        return name
    stem = Path(name).stem
    return stem if stem and stem in bundled_corpora() else None


def _text(corpus: str) -> str:
    if corpus.startswith(SYNTHETIC):
        return synthetic_text(corpus[len(SYNTHETIC):])
    return read_corpus(corpus)


def split_encode(ckpt: Checkpoint, text: str, corpus: bool) -> tuple[np.ndarray, int | None]:
    """The text's ids as the model's trainer made them, and the first token of the held-out
    validation tail (None for a pasted text).

    The command line that made the bundled models (its card has "world_size") holds out the
    text's last characters ("val_chars", else val_fraction of them) and encodes the two
    parts apart; the Training page encodes the whole text and holds out its last tokens.
    """
    def enc(s: str) -> list[int]:
        return ckpt.tokenizer.encode(s)

    if not corpus:
        return np.asarray(enc(text), dtype=np.int32), None
    card = ckpt.card
    fraction = (card.get("train_config") or {}).get("val_fraction")
    if not isinstance(fraction, float) or not 0 < fraction < 1:
        fraction = TrainConfig().val_fraction
    if "world_size" in card:
        held = card.get("val_chars")
        cut = len(text) - (held if isinstance(held, int) else round(len(text) * fraction))
        head, tail = enc(text[:cut]), enc(text[cut:])
        return np.asarray(head + tail, dtype=np.int32), len(head)
    ids = enc(text)
    return np.asarray(ids, dtype=np.int32), len(ids) - round(len(ids) * fraction)


@said(st.cache_data, N_("Encoding the corpus…"), max_entries=8)
def _encode_shared(model_key: str, corpus: str, _ckpt: Checkpoint
                   ) -> tuple[np.ndarray, int | None]:
    return split_encode(_ckpt, _text(corpus), True)


def _encode_own(model_key: str, text_key: str, corpus: bool, _ckpt: Checkpoint,
                _text: str) -> tuple[np.ndarray, int | None]:
    return split_encode(_ckpt, _text, corpus)


# One cache (a session's own model, or a pasted text), said two ways
_OWN = dict(max_entries=3, scope="session")
_encode_private = said(st.cache_data, N_("Encoding the corpus…"), **_OWN)(_encode_own)
_encode_pasted = said(st.cache_data, N_("Encoding the text…"), **_OWN)(_encode_own)


def source_or_stop(picked: Picked) -> Source:
    """The text box or corpus choice, encoded; stops the page after a message if unusable."""
    ckpt = picked.checkpoint
    corpus = trained_corpus(ckpt)
    options = [corpus, PASTE] if corpus else [PASTE]
    choice = st.segmented_control(
        _("Text to learn from"), options, default=options[0], required=True, key="learn_source",
        format_func=lambda o: _("paste a text") if o == PASTE else _(
            "{corpus} (the training corpus)").format(corpus=o))
    if choice not in options:
        choice = options[0]
    if choice != PASTE:
        try:
            if picked.bundled:
                ids, val_from = _encode_shared(picked.cache_key, choice, ckpt)
            else:
                ids, val_from = _encode_private(picked.cache_key, choice, True, ckpt,
                                                _text(choice))
        except (CorpusError, OSError, TokenizerError) as exc:
            problem(_("The corpus {corpus} cannot be used: {reason} Paste a text instead."
                      ).format(corpus=repr(choice), reason=exc))
            st.stop()
        return Source(choice, ids, val_from)
    if corpus is None:
        st.info(_("This model's card names no corpus this app has ({corpus}): paste a text "
                  "like the one it was trained on.").format(
                      corpus=repr(ckpt.card.get("corpus", "none"))),
                icon=":material/edit_note:")
    text = cap_text(st.text_area(_("Text"), key="learn_text", height=120,
                                 value=read_corpus("sample") if "sample" in bundled_corpora()
                                 else "", help=_("The window is cut from this text.")),
                    PASTE_LIMIT)
    if not text.strip():
        problem(_("The text is empty: paste a few sentences (at least the window's length, "
                  "{n} tokens, plus one).").format(n=window_length(ckpt.model)))
        st.stop()
    try:
        key = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        ids = _encode_pasted(picked.cache_key, key, False, ckpt, text)[0]
    except TokenizerError as exc:
        problem(_("This model's tokenizer cannot read the text: {reason}").format(reason=exc))
        st.stop()
    return Source(PASTE, ids, None)


def grouped(n: int) -> str:
    """A count as the page writes it: thousands grouped in the reader's way (1,024)."""
    return number(n, 0, grouping=True)


def _random_start(last: int) -> None:
    st.session_state["start"] = random.randint(0, max(last, 0))


def _url_note(raw: str | None, message: str, value: int | None) -> None:
    """Streamlit drops a URL value its widget cannot take (``?t=abc``): say so. ``raw`` is
    the link's value, read before the widget replaced it; ``message`` has {raw} and {value}."""
    if raw not in (None, "") and raw != str(value):
        st.warning(message.format(raw=raw, value=value if value is not None else _(
            "the default")), icon=":material/link_off:")


def window_or_stop(picked: Picked, source: Source) -> Window:
    """The window start (a token offset, ``?start=``), checked; the window drawn as chips."""
    n = window_length(picked.checkpoint.model)
    last = len(source.ids) - n - 1
    left, right = st.columns([3, 1], vertical_alignment="bottom")
    raw = st.query_params.get("start")
    start = left.number_input(
        _("Window start (a token offset in the text)"), min_value=0, value=0, step=1,
        key="start", bind="query-params",
        help=_("The window is the N = {n} tokens from here, and the token after them.").format(
            n=n))
    right.button(_("Random window"), icon=":material/casino:", on_click=_random_start,
                 args=(last,), disabled=last < 0)
    _url_note(raw, _("The link asks for window start “{raw}”, which is not a whole number "
                     "≥ 0; using {value} instead."), start)
    _window_note(picked.checkpoint.model, n)
    if 0 <= last < start:  # past the end: keep the page, take the last window
        st.warning(_("Window start {start} is past the end of the text: the last "
                     "window starts at {last}, so that one is shown. Pick a start from 0 to "
                     "{last}.").format(start=grouped(int(start)), last=grouped(last)),
                   icon=":material/last_page:")
        start = last
    try:
        window = take_window(source.ids, int(start), n)
    except LearningError as exc:
        problem(_("Cannot cut a window: {reason}").format(reason=exc))
        st.stop()
    where = ""
    if source.val_from is not None:
        where = " " + (_("It lies in the part of the corpus the model was trained on.")
                       if window.start + n < source.val_from else
                       _("It reaches into the held-out validation tail (tokens {start} on), "
                         "which training never used.").format(start=grouped(source.val_from)))
    st.caption(_("Window {start} of {count} (tokens {start} to {end} of {total}).").format(
        start=grouped(window.start), count=grouped(last + 1), end=grouped(window.start + n),
        total=grouped(len(source.ids))) + where)
    _unknown_note(picked, window)
    return window


def _window_note(model: GPT, n: int) -> None:
    """Say so when the window is shorter than the model's context, and why."""
    n_ctx, params = model.config.context_length, model.num_params()
    if n >= n_ctx:
        return
    cap = (_("a model of more than {big} parameters gets windows of {n}").format(
        big=grouped(BIG_MODEL), n=BIG_WINDOW) if params > BIG_MODEL else
           _("windows are at most {n} tokens, the longest bundled context").format(
               n=WINDOW_TOKENS))
    st.info(_("Windows here are N = {n} tokens, not this model's full context of {context}: "
              "every η of the step slider runs the model over the whole window with all "
              "{params} parameters moved, so {why}. The numbers at position t do not depend "
              "on it: L at t reads x_0 … x_t only (the causal mask), so they are what a "
              "{context}-token window from the same start gives. Only the mean loss of the "
              "“other positions” covers fewer: the other {rest} of this window.").format(
                  n=n, context=grouped(n_ctx), params=grouped(params), why=cap, rest=n - 1),
            icon=":material/crop:")


def _unknown_note(picked: Picked, window: Window) -> None:
    unk = picked.checkpoint.tokenizer.special_tokens.get(UNK)
    count = sum(i == unk for i in (*window.x, window.y[-1])) if unk is not None else 0
    if count:
        st.warning(ngettext(
            "{n} token of this window is {unk}: text this model's vocabulary does not have. "
            "Its predictions there mean little; try another window or text.",
            "{n} tokens of this window are {unk}: text this model's vocabulary does not have. "
            "Its predictions there mean little; try another window or text.", count).format(
                n=grouped(count), unk=UNK), icon=":material/help:")


def position_or_stop(picked: Picked, window: Window, typical: int) -> int:
    """The target position t (``?t=``), checked; empty means ``typical``, the window's
    prediction of median loss."""
    raw = st.query_params.get("t")
    t = st.number_input(
        _("Target position t"), min_value=0, value=None, step=1, key="t", bind="query-params",
        placeholder=_("{t} (a typical prediction: the median loss of this window)").format(
            t=typical),
        help=_("The model reads x_0 … x_t and is scored on the token that follows x_t. Empty: "
               "the position whose loss is the window's median."))
    _url_note(raw, _("The link asks for target position “{raw}”, which is not a whole number "
                     "≥ 0; using {value} instead."), t)
    t = typical if t is None else int(t)
    try:
        check_position(t, window)
    except LearningError as exc:
        problem(str(exc))  # a whole sentence: "The target position … is out of range …"
        st.stop()
    labels = vocab_labels(picked)
    st.html(window_chips_html([labels[i] for i in (*window.x, window.y[-1])], t))
    return t
