"""The Generation page's controls: the prompt's tokens, the history kept in
``st.session_state``, the buttons, and the "Generate n" stream.

"Next token" counts its clicks in the browser (``click_button``) and the page appends
one token per click not yet seen, so fast clicks are never merged. Undo, Reset, Stop
and Generate n change the history in their callbacks. Every change holds the
history's lock, so a rerun never sees half a step.
"""

from __future__ import annotations

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
from gptviz.i18n import _, ngettext, number
from gptviz.model import GPT
from gptviz.tokenizers import TokenizerError
from gptviz.tokenizers.base import TokenInfo, Tokenizer
from gptviz.tokenizers.specials import BOS, UNK

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
            problem(_("Cannot start: {why}").format(why=exc))
            return None
        st.info(_("The prompt is empty, so generation starts from the start-of-text token "
                  "{bos} alone: the model writes whatever its training text makes likely at the "
                  "beginning.").format(bos=BOS), icon=":material/edit_note:")
        return PromptTokens("", [token_info(tok, ids[0])])
    try:
        tokens = tok.tokens(text)
    except TokenizerError as exc:
        problem(_("This model's tokenizer cannot read the prompt: {why}").format(why=exc))
        return None
    unknown = sorted({text[t.span[0]:t.span[1]] for t in tokens if t.unknown})
    if unknown:
        shown = ", ".join(repr(u) for u in unknown[:8]) + (" …" if len(unknown) > 8 else "")
        st.warning(_("This model's vocabulary has no token for {shown}: each became {unk} (id "
                     "{id}, red chips). The model reads it as 'something unknown' and saw it "
                     "rarely in training, so its guesses after it are poor. Remove those "
                     "characters or pick a model with a byte-level BPE tokenizer.").format(
                         shown=shown, unk=UNK, id=tok.special_tokens.get(UNK, "?")),
                   icon=":material/help:")
    return PromptTokens(text, tokens)


def _n(n: int) -> str:
    """A count in running text, grouped as the reader's language groups it."""
    return number(n, 0, grouping=True)


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


def history(picked: Picked, prompt: PromptTokens, sampling: Sampling) -> History:
    """This session's history, started again when the model or the prompt changes; the
    session's first one grows the tree of branches its link holds (``?branches=``)."""
    key = (picked.name, id(picked.checkpoint.model), prompt.text)
    hist = st.session_state.get(HISTORY)
    if hist is None or hist.key != key:
        if hist is not None and hist.nodes:
            st.toast(_("The model or the prompt changed: the history and its branches start "
                       "again."), icon=":material/restart_alt:")
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
        hist.note = ngettext("Only {n} more token fits in the history (at most {most}); undo "
                             "or reset to make room.",
                             "Only {n} more tokens fit in the history (at most {most}); undo or "
                             "reset to make room.", got).format(n=_n(got), most=_n(MAX_TOKENS))


def _undo(hist: History) -> None:
    if hist.undo() is None:
        hist.note = _("Nothing to undo: the text is just the prompt.")
    st.session_state[STEP] = len(hist.turns)


def _reset(hist: History) -> None:
    hist.reset()
    st.session_state.pop(STEP, None)


def _stop(hist: History) -> None:
    with hist.lock:
        running, planned, done = hist.pending > 0, hist.planned, hist.stop()
    hist.note = (_("Stopped after {done} of {planned} tokens; all {done} are kept in the text "
                   "and the history.").format(done=_n(done), planned=_n(planned)) if running else
                 _("Nothing was running: the last Generate n had already finished."))
    st.session_state[STEP] = len(hist.turns)


def buttons(hist: History, model: GPT, sampling: Sampling) -> None:
    """Next token · Generate n · Stop · Undo · Reset, and the last action's message."""
    row = st.container(horizontal=True, vertical_alignment="bottom")
    with row:
        clicks = click_total(_("Next token"), "gen_next", hist.clicks_seen, disabled=hist.full,
                             help=_("Append one token drawn from P_T (each click is one token)."))
    asked = clicks - hist.clicks_seen
    made = hist.catch_up(model, sampling, clicks)
    if made:
        st.session_state[STEP] = len(hist.turns)
    if asked > made:
        hist.note = _("The history holds at most {most} generated tokens: undo or reset.").format(
            most=_n(MAX_TOKENS))
    row.number_input("n", 1, MAX_N, 20, key="gen_n", width=110,
                     help=_("How many tokens *Generate n* appends (at most {most}).").format(
                         most=MAX_N))
    row.button(_("Generate n"), icon=":material/fast_forward:", key="gen_run",
               on_click=_generate, args=(hist,), disabled=hist.full or hist.pending > 0)
    row.button(_("Stop"), icon=":material/stop_circle:", key="gen_stop", on_click=_stop,
               args=(hist,), type="primary" if hist.pending else "secondary",
               help=_("Stops a running Generate n; every token made so far is kept."))
    row.button(_("Undo"), icon=":material/undo:", key="gen_undo", on_click=_undo, args=(hist,),
               disabled=not hist.turns)
    row.button(_("Reset"), icon=":material/restart_alt:", key="gen_reset", on_click=_reset,
               args=(hist,), disabled=not hist.turns)
    row.caption(ngettext("{made} generated · {n} token in all", "{made} generated · {n} tokens "
                         "in all", len(hist.ids)).format(made=_n(len(hist.turns)),
                                                         n=_n(len(hist.ids))))
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
                            text=_("Generating: {done} of {planned} tokens").format(
                                done=_n(done), planned=_n(hist.planned)))
                st.text(_tail(tok, hist.ids))
    done = hist.finish(me)
    if done is None:
        return  # Stop, Undo, Reset or a newer run took over: they say what happened
    made = ngettext("Generated {n} token.", "Generated {n} tokens.", done).format(n=_n(done))
    hist.note = made if not hist.full else _(
        "{generated} The history is full ({most} tokens): undo or reset to go on.").format(
            generated=made, most=_n(MAX_TOKENS))
    st.rerun()
