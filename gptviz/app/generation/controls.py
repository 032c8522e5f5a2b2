"""The Generation page's controls: the prompt's tokens, the sampling settings, the history
kept in ``st.session_state``, the buttons, and the "Generate n" stream.

"Next token" counts its clicks in the browser (``click_button``) and the page appends
one token per click not yet seen, so fast clicks are never merged. Undo, Reset, Stop
and Generate n change the history in their callbacks. Every change holds the
history's lock, so a rerun never sees half a step.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import streamlit as st

from gptviz.app.generation import link
from gptviz.app.generation.figures import sequence_chips_html
from gptviz.app.generation.state import MAX_TOKENS, History
from gptviz.app.shared.picker import Picked
from gptviz.app.shared.widgets import cap_text, problem
from gptviz.app.speedups.click_button import click_total
from gptviz.checkpoints.folder import Checkpoint
from gptviz.generation import sampling as gen
from gptviz.generation.sampling import Sampling
from gptviz.model import GPT
from gptviz.tokenizers import TokenizerError
from gptviz.tokenizers.base import TokenInfo, Tokenizer
from gptviz.tokenizers.specials import BOS, UNK
from gptviz.words import counted

HISTORY = "gen_history"  # st.session_state key of the History
STEP = "gen_step"  # the replayed step (1-based)
MAX_N = 500  # tokens one "Generate n" may ask for
DRAW_EVERY_S = 0.15  # the stream redraws at most this often (each redraw is a Stop point)
STREAM_CHARS = 600  # characters of the text the stream shows (plain text: cheap to redraw)


@dataclass(frozen=True)
class PromptTokens:
    text: str
    tokens: list[TokenInfo]  # the prompt's tokens (<|BOS|> alone for an empty prompt)

    @property
    def ids(self) -> list[int]:
        return [t.id for t in self.tokens]


def prompt_tokens(ckpt: Checkpoint, raw: str) -> PromptTokens | None:
    """The prompt's tokens with a note for each oddity; None (after saying why) if unusable."""
    text, tok = cap_text(raw), ckpt.tokenizer
    if not text:
        try:
            ids = gen.encode_prompt(tok, "")
        except ValueError as exc:
            problem(f"Cannot start: {exc}")
            return None
        st.info("The prompt is empty, so generation starts from the start-of-text token "
                f"{BOS} alone: the model writes whatever its training text makes likely "
                "at the beginning.", icon=":material/edit_note:")
        return PromptTokens("", [token_info(tok, ids[0])])
    try:
        tokens = tok.tokens(text)
    except TokenizerError as exc:
        problem(f"This model's tokenizer cannot read the prompt: {exc}")
        return None
    unknown = sorted({text[t.span[0]:t.span[1]] for t in tokens if t.unknown})
    if unknown:
        shown = ", ".join(repr(u) for u in unknown[:8]) + (" …" if len(unknown) > 8 else "")
        st.warning(f"This model's vocabulary has no token for {shown}: each became {UNK} "
                   f"(id {tok.special_tokens.get(UNK, '?')}, red chips). The model reads it as "
                   "'something unknown' and saw it rarely in training, so its guesses after it "
                   "are poor. Remove those characters or pick a model with a byte-level BPE "
                   "tokenizer.", icon=":material/help:")
    return PromptTokens(text, tokens)


def token_info(tok: Tokenizer, idx: int) -> TokenInfo:
    """How a chip shows one id (a generated token has no source text)."""
    data = tok.id_to_bytes(idx)
    specials = tok.special_tokens
    try:
        data.decode("utf-8")
        partial = False
    except UnicodeDecodeError:
        partial = True
    return TokenInfo(idx, tok.id_to_string(idx), data, (0, 0), special=idx in specials.values(),
                     unknown=idx == specials.get(UNK, -1), partial=partial)


def sampling_controls(vocab_size: int) -> Sampling:
    """Temperature, top-p, min-p and seed (``?temperature=…&top_p=…&min_p=…&seed=…`` in the
    URL: the Lesson's links draw as it does), top-k, with their notes."""
    raw, raw_min = st.query_params.get("temperature"), st.query_params.get("min_p")
    c1, c2, c3, c5, c4 = st.columns([3, 2, 2, 2, 1.4])
    t = c1.slider("Temperature T", 0.0, 3.0, 1.0, 0.05, key="temperature", bind="query-params",
                  help="P_T = softmax(y_N / T). T = 0 is greedy (always the argmax); T < 1 "
                       "sharpens the distribution, T > 1 flattens it.")
    k = c2.number_input("top-k (0 = off)", 0, 1_000_000, 0, key="top_k",
                        help="Keep only the k most probable tokens, then renormalise.")
    p = c3.slider("top-p (1 = off)", 0.05, 1.0, 1.0, 0.05, key="top_p", bind="query-params",
                  help="Keep the smallest set of most probable tokens whose probabilities "
                       "add up to at least p, then renormalise.")
    m = c5.slider("min-p (0 = off)", 0.0, 1.0, 0.0, 0.01, key="min_p", bind="query-params",
                  help="Keep only the tokens whose probability is at least min-p times the "
                       "largest one, P_T(i) ≥ min-p · max P_T, then renormalise.")
    seed = c4.number_input("Seed", 0, 2**31 - 1, 0, key="seed", bind="query-params",
                           help="Step i draws with a generator seeded by (seed, i): the same "
                                "seed gives the same text.")
    if raw is not None and not _same(raw, t):
        st.warning(f"The link asks for temperature “{raw}”, which is not a number from 0 to "
                   f"3; using T = {t:g}.", icon=":material/link_off:")
    if raw_min is not None and not _same(raw_min, m):
        st.warning(f"The link asks for min-p “{raw_min}”, which is not a number from 0 to 1 "
                   "(min-p keeps the tokens whose probability is at least min-p times the "
                   f"largest, so it lies in [0, 1]); using min-p = {m:g}"
                   f"{' (off)' if m == 0 else ''}.", icon=":material/link_off:")
    return settings(t, k, p, seed, vocab_size, m)


def _same(raw: str, value: float) -> bool:
    try:
        return math.isclose(float(raw), value)
    except ValueError:
        return False


def settings(t: float, k: int, p: float, seed: int, vocab_size: int,
             min_p: float = 0.0) -> Sampling:
    """The widgets' values as a Sampling, explaining settings that change nothing."""
    top_k = int(k) if k and k < vocab_size else None
    top_p = float(p) if p < 1 else None
    m = float(min_p) if min_p else None
    if m is not None and not 0 < m <= 1:  # the slider cannot, a caller might
        problem(f"min-p must lie in [0, 1], got {min_p}: min-p is off. Choose a value from 0 "
                "(off) to 1 (only the most probable token).")
        m = None
    if k and k >= vocab_size:
        st.info(f"top-k = {k:,} is at least the vocabulary size |V| = {vocab_size:,}: it keeps "
                "every token, so it filters nothing. Choose k < |V| to cut the tail.",
                icon=":material/info:")
    if t == 0:
        active = [n for n, on in (("top-k", top_k), ("top-p", top_p), ("min-p", m)) if on]
        names = " and ".join(active) if len(active) < 3 else "top-k, top-p and min-p"
        extra = (f" {names} change{'s' if len(active) == 1 else ''} nothing here (the argmax is "
                 "always kept), and") if active else ""
        st.info(f"**Greedy decoding (T = 0):** each step takes the most probable token;{extra} "
                "the seed is not used. Raise T above 0 to sample.", icon=":material/target:")
    return Sampling(float(t), top_k, top_p, int(seed), m)


def history(picked: Picked, prompt: PromptTokens, sampling: Sampling) -> History:
    """This session's history, started again when the model or the prompt changes; the
    session's first one grows the tree of branches its link holds (``?branches=``)."""
    key = (picked.name, id(picked.checkpoint.model), prompt.text)
    hist = st.session_state.get(HISTORY)
    if hist is None or hist.key != key:
        if hist is not None and hist.nodes:
            st.toast("The model or the prompt changed: the history and its branches start "
                     "again.", icon=":material/restart_alt:")
        seen = hist.clicks_seen if hist is not None else 0  # the button's total goes on
        new = History(key, prompt.ids, clicks_seen=seen)
        if hist is None:
            link.restore(new, picked, sampling)
        hist = new
        st.session_state[HISTORY] = hist
        st.session_state.pop(STEP, None)
    return hist


# ---- buttons: each callback is one atomic change of the history ---------------------------

def _generate(hist: History) -> None:
    n = int(st.session_state.get("gen_n", 0) or 0)
    got = hist.start(n)
    if got < n:
        hist.note = (f"Only {got:,} more tokens fit in the history (at most {MAX_TOKENS:,}); "
                     "undo or reset to make room.")


def _undo(hist: History) -> None:
    if hist.undo() is None:
        hist.note = "Nothing to undo: the text is just the prompt."
    st.session_state[STEP] = len(hist.turns)


def _reset(hist: History) -> None:
    hist.reset()
    st.session_state.pop(STEP, None)


def _stop(hist: History) -> None:
    with hist.lock:
        running, planned, done = hist.pending > 0, hist.planned, hist.stop()
    hist.note = (f"Stopped after {done:,} of {planned:,} tokens; all {done:,} are kept in the "
                 "text and the history." if running else
                 "Nothing was running: the last Generate n had already finished.")
    st.session_state[STEP] = len(hist.turns)


def buttons(hist: History, model: GPT, sampling: Sampling) -> None:
    """Next token · Generate n · Stop · Undo · Reset, and the last action's message."""
    row = st.container(horizontal=True, vertical_alignment="bottom")
    with row:
        clicks = click_total("Next token", "gen_next", hist.clicks_seen, disabled=hist.full,
                             help="Append one token drawn from P_T (each click is one token).")
    asked = clicks - hist.clicks_seen
    made = hist.catch_up(model, sampling, clicks)
    if made:
        st.session_state[STEP] = len(hist.turns)
    if asked > made:
        hist.note = f"The history holds at most {MAX_TOKENS:,} generated tokens: undo or reset."
    row.number_input("n", 1, MAX_N, 20, key="gen_n", width=110,
                     help=f"How many tokens *Generate n* appends (at most {MAX_N}).")
    row.button("Generate n", icon=":material/fast_forward:", key="gen_run",
               on_click=_generate, args=(hist,), disabled=hist.full or hist.pending > 0)
    row.button("Stop", icon=":material/stop_circle:", key="gen_stop", on_click=_stop,
               args=(hist,), type="primary" if hist.pending else "secondary",
               help="Stops a running Generate n; every token made so far is kept.")
    row.button("Undo", icon=":material/undo:", key="gen_undo", on_click=_undo, args=(hist,),
               disabled=not hist.turns)
    row.button("Reset", icon=":material/restart_alt:", key="gen_reset", on_click=_reset,
               args=(hist,), disabled=not hist.turns)
    row.caption(f"{len(hist.turns):,} generated · {counted(len(hist.ids), 'token')} in all")
    if hist.note:
        st.info(hist.note, icon=":material/info:")
        hist.note = ""


def text_html(hist: History, prompt: PromptTokens, tok: Tokenizer, n_ctx: int) -> str:
    """Chips of the whole text: the cut before the context window, the generated tokens."""
    tokens = prompt.tokens + [token_info(tok, t.chosen) for t in hist.turns]
    return sequence_chips_html(tokens, len(prompt.tokens), max(0, len(tokens) - n_ctx))


def _tail(tok: Tokenizer, ids: list[int]) -> str:
    """The end of the text so far, decoded (a partial UTF-8 token shows as U+FFFD)."""
    text = b"".join(tok.id_to_bytes(i) for i in ids[-STREAM_CHARS:])
    return "…" + text.decode("utf-8", errors="replace")[-STREAM_CHARS:]


def stream(hist: History, model: GPT, sampling: Sampling, box, tok: Tokenizer) -> None:
    """Run the planned "Generate n", redrawing the text as tokens arrive, then rerun.

    Each token is appended before anything is drawn; a click on Stop interrupts the
    script at the next redraw, so every token made so far is already in the history.
    """
    me, last = hist.claim(), 0.0
    while hist.stream_step(model, sampling, me):
        st.session_state[STEP] = len(hist.turns)
        now = time.perf_counter()
        if now - last >= DRAW_EVERY_S:
            last = now
            done = hist.planned - hist.pending
            with box.container():
                st.progress(done / max(hist.planned, 1),
                            text=f"Generating: {done:,} of {hist.planned:,} tokens")
                st.text(_tail(tok, hist.ids))
    done = hist.finish(me)
    if done is None:
        return  # Stop, Undo, Reset or a newer run took over: they say what happened
    hist.note = f"Generated {counted(done, 'token')}." + (
        f" The history is full ({MAX_TOKENS:,} tokens): undo or reset to go on."
        if hist.full else "")
    st.rerun()
