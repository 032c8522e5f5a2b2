"""The Generation page's beam search (seed 001): the beams of every step drawn as a tree,
beside the greedy text and a sampled one, with the score formula filled in."""

from __future__ import annotations

import re

import pandas as pd
import streamlit as st

from gptviz.app.generation import formulas as tex
from gptviz.app.generation.controls import token_info
from gptviz.app.generation.figures import sequence_chips_html
from gptviz.app.generation.search_figures import beam_tree
from gptviz.app.generation.state import History
from gptviz.app.generation.turn import sampling_caption
from gptviz.app.shared.cache import per_model, vocab_labels
from gptviz.app.shared.chips import visible
from gptviz.app.shared.picker import Picked
from gptviz.app.shared.widgets import csv_download, data_grid, plot, problem
from gptviz.checkpoints.folder import Checkpoint
from gptviz.generation import beam, exact
from gptviz.generation import sampling as gen
from gptviz.generation.sampling import Sampling
from gptviz.i18n import N_, _, ngettext, number

WIDTH, LENGTH, STEP = "beam", "beam_n", "beam_step"  # widget keys (the first two in the URL)
MAX_LENGTH = 50  # tokens a search may write
SHOWN_PROMPT = 3  # prompt tokens shown before each text


@per_model
def _search(ckpt: Checkpoint, ids: tuple[int, ...], width: int, n: int) -> beam.Beams:
    return beam.beam_search(ckpt.model, list(ids), n, width)


@per_model
def _exact(ckpt: Checkpoint, ids: tuple[int, ...], beam_text: tuple[int, ...],
           beam_score: float) -> exact.Exact:
    """The most probable text of the beam's length, searched exactly and pruned by the
    beam's text and score."""
    return exact.most_probable(ckpt.model, list(ids), len(beam_text), beam_text, beam_score)


@per_model
def _written(ckpt: Checkpoint, ids: tuple[int, ...], n: int, s: Sampling
             ) -> tuple[tuple[int, ...], tuple[float, ...]]:
    """The n tokens ``generate`` writes with ``s`` (as "Generate n" would from the prompt),
    and log P(y_s | x, y_<s) of each under the model itself (T = 1)."""
    out = gen.generate(ckpt.model, list(ids), n, s.temperature, s.top_k, s.top_p,
                       seed=s.seed, min_p=s.min_p)[len(ids):]
    return tuple(out), tuple(beam.token_logprobs(ckpt.model, list(ids), out).tolist())


def _controls(vocab_size: int) -> tuple[int, int] | None:
    """Width k and length n (``?beam=…&beam_n=…``), or None after saying what is wrong."""
    raw = st.query_params.get(WIDTH)
    a, b = st.columns(2)
    width = a.slider(_("Beam width k"), 1, beam.MAX_WIDTH, 3, key=WIDTH, bind="query-params",
                     help=_("How many texts are kept at every step. k = 1 keeps only the most "
                            "probable token: greedy decoding."))
    n = b.slider(_("Tokens to write"), 1, MAX_LENGTH, 12, key=LENGTH, bind="query-params")
    if raw is not None and raw.strip() != str(width):
        st.warning(_("The link asks for beam width “{raw}”, which is not a whole number from 1 "
                     "to {most}; using k = {k}.").format(raw=raw, most=beam.MAX_WIDTH, k=width),
                   icon=":material/link_off:")
    try:
        beam.check_width(width, vocab_size)
    except ValueError as exc:
        problem(_("Cannot search: {why}").format(why=exc))
        return None
    return width, n


def text_of(tok, ids) -> str:
    """The text of ``ids``, whitespace visible, a partial UTF-8 byte as \\xNN (never �)."""
    return visible(b"".join(tok.id_to_bytes(int(i)) for i in ids).decode(
        "utf-8", errors="backslashreplace"))


def _text_html(picked: Picked, prompt: tuple[int, ...], new) -> str:
    tok = picked.checkpoint.tokenizer
    shown = [token_info(tok, i) for i in prompt[-SHOWN_PROMPT:] + tuple(new)]
    return sequence_chips_html(shown, min(SHOWN_PROMPT, len(prompt)), 0)


def beam_view(hist: History, picked: Picked, sampling: Sampling) -> None:
    """Greedy, beam and sampled texts from the prompt; the beams as a tree; the scores."""
    st.markdown(_(
        "Greedy decoding takes the most probable token at every step, but the most probable "
        "*text* can start with a less probable token. **Beam search** keeps the $k$ texts "
        "with the largest log-probability at every step: each is extended by every token, "
        "and the $k$ best of the $k\\cdot|V|$ candidates survive. All three texts below "
        "start from the prompt; $\\log P$ is the model's own (no filter, $T = 1$)."))
    cfg = picked.checkpoint.config
    got = _controls(cfg.vocab_size)
    if got is None:
        return
    width, n = got
    prompt = tuple(hist.prompt_ids)
    found = _search(picked, prompt, width, n)
    greedy, g_lp = _written(picked, prompt, n, Sampling(0.0))
    sampled, s_lp = _written(picked, prompt, n, sampling)
    last = found.steps[-1]
    cols = st.columns(3)
    for col, (name, new, lp) in zip(cols, [
            (_("Greedy (k = 1)"), greedy, sum(g_lp)),
            (_("Beam search, best of k = {k}").format(k=width), found.tokens(n - 1, 0),
             last.scores[0]),
            (_("Sampled ({how})").format(how=sampling_caption(sampling)), sampled, sum(s_lp))],
            strict=True):
        col.markdown(f"**{name}**")
        col.html(_text_html(picked, prompt, new))
        col.caption(_("log P(text | prompt) = {lp} · per token {mean}").format(
            lp=number(lp, 3), mean=number(lp / n, 3)))
    if sampling.greedy:
        st.caption(_("T = 0: the sampled text is the greedy one. Raise T above 0 to sample."))
    labels = vocab_labels(picked)
    lineage = [found.lineage(n - 1, b) for b in range(len(last.tokens))]
    plot(beam_tree(
        [[labels[i] for i in s.tokens] for s in found.steps], [s.parents for s in found.steps],
        [s.logprobs for s in found.steps], [s.scores for s in found.steps], lineage,
        title=ngettext("the {k} beam after every step (hover: log-probabilities)",
                       "the {k} beams after every step (hover: log-probabilities)",
                       width).format(k=width)), key="gen_beam_tree")
    mine = tuple(found.tokens(n - 1, 0))
    best = _exact(picked, prompt, mine, last.scores[0])
    other = best.checked and best.tokens != mine  # y* is another text (or ties with it)
    st.latex(tex.greedy_vs_beam(sum(g_lp), last.scores[0], width, _pruned(found, greedy),
                                tex.beam_vs_best(
                                    last.scores[0], width, best.score,
                                    text_of(picked.checkpoint.tokenizer, best.tokens)
                                    if other else None,
                                    _pruned(found, best.tokens) if other else None)))
    st.caption(_best_caption(picked, best, found, width, n))
    _beams_at(found, labels, picked, width, n)


def _md(text: str) -> str:
    r"""Text that Markdown (a caption) shows as itself: "$M$" is not set as math.

    >>> _md("Let $M$ be *a*")
    'Let \\$M\\$ be \\*a\\*'
    """
    return re.sub(r"([\\`*_{}\[\]<>#$~|])", r"\\\1", text)


def _best_caption(picked: Picked, best: exact.Exact, found: beam.Beams, width: int,
                  n: int) -> str:
    """What the exact search found, how, and when it could not check."""
    if not best.checked:
        return _("y*, the most probable of all {n}-token texts, was **not checked**: {why}. "
                 "{then}").format(n=n, why=best.reason, then=_(
                     "Write fewer tokens for an exact check.") if best.capped else _(
                     "A shorter prompt or text would fit the window."))
    how = ngettext("An exact best-first search checked every {n}-token text: a prefix whose log "
                   "P is already below the beam's score can never end above it (log P only goes "
                   "down as a text grows), so {m} prefix needed the model.",
                   "An exact best-first search checked every {n}-token text: a prefix whose log "
                   "P is already below the beam's score can never end above it (log P only goes "
                   "down as a text grows), so {m} prefixes needed the model.",
                   best.expanded).format(n=n, m=number(best.expanded, 0, grouping=True))
    score, tok = found.steps[-1].scores[0], picked.checkpoint.tokenizer
    if best.score - score <= tex.TIE and best.tokens == tuple(found.tokens(n - 1, 0)):
        return _("The beam's text is the most probable of all {n}-token texts. {how}").format(
            n=n, how=how)
    if best.score - score <= tex.TIE:
        return _("Another text, “{text}”, is as probable as the beam's to 3 decimals; none is "
                 "more. {how}").format(text=_md(text_of(tok, best.tokens)), how=how)
    at = _pruned(found, best.tokens)
    return _("Beam search missed the most probable {n}-token text, “{text}” (log P = {best}, "
             "against the beam's {score}): its prefix “{prefix}” ranked below the {k} kept at "
             "step {at}. {how}").format(
                 n=n, text=_md(text_of(tok, best.tokens)), best=number(best.score, 3),
                 score=number(score, 3), prefix=_md(text_of(tok, best.tokens[:at])), k=width,
                 at=at, how=how)


def _pruned(found: beam.Beams, greedy) -> int | None:
    """The first step (from 1) whose beams no longer hold greedy's text so far, if any."""
    for t in range(len(found.steps)):
        kept = {tuple(found.tokens(t, b)) for b in range(len(found.steps[t].tokens))}
        if tuple(greedy[: t + 1]) not in kept:
            return t + 1
    return None


def _beams_at(found: beam.Beams, labels: list[str], picked: Picked, width: int,
              n: int) -> None:
    """The beams after a chosen step as a table, and beam 0's score written out."""
    if st.session_state.get(STEP) not in range(1, n + 1):
        st.session_state[STEP] = n
    t = n if n == 1 else st.select_slider(_("Beams after step"), list(range(1, n + 1)), key=STEP)
    step = found.steps[t - 1]
    ranks = found.lineage(t - 1, 0)
    terms = [found.steps[s].logprobs[r] for s, r in enumerate(ranks)]
    st.latex(tex.beam_score_formula(terms, step.scores[0], 0, width, len(labels)))
    st.caption(_("No length normalisation (α = 0): after step t every beam holds exactly t "
                 "tokens (none stops early at an end token here), so dividing every score by "
                 "t^α would scale them all alike and change no choice."))
    tok = picked.checkpoint.tokenizer
    df = pd.DataFrame({  # English headers (the CSV's); the page shows them translated
        N_("beam"): range(len(step.tokens)),
        N_("text (after the prompt)"): [text_of(tok, found.tokens(t - 1, b))[-60:]
                                        for b in range(len(step.tokens))],
        N_("last token"): [labels[i] for i in step.tokens],
        N_("from beam"): list(step.parents),
        N_("log P(last token | its beam)"): [round(x, 4) for x in step.logprobs],
        N_("score = log P(text | prompt)"): [round(x, 4) for x in step.scores],
    })
    data_grid(df.rename(columns=_), hide_index=True, width="stretch")
    csv_download(df, "beams.csv")
