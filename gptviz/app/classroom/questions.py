"""The class's question at a lesson step, as a snapshot the store keeps: the step's own
multiple-choice question, or at some steps a number to guess (a count, a length, a
probability), with the model's value computed from the same forward pass.

A snapshot carries everything a student's page shows, so students need no model.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import numpy as np

from gptviz.analysis.core import to_numpy
from gptviz.app.lesson.questions import Question, md
from gptviz.app.lesson.run import Lesson, StepView
from gptviz.app.lesson.steps import TITLES
from gptviz.classroom.records import Snapshot, number_text
from gptviz.model.names import act_name

MAX_TOKENS = 1_000_000  # a token count's highest guess


def _key(*parts: object) -> str:
    """A question's fingerprint: the same question opened again keeps its answers."""
    return hashlib.sha1("\x1f".join(map(str, parts)).encode("utf-8")).hexdigest()[:16]


def choice_snapshot(step: int, q: Question) -> Snapshot:
    """The step's own question, as the class is asked it."""
    return Snapshot(step, TITLES[step - 1], q.text, "choice", tuple(q.choices), q.answer,
                    why=q.why, key=q.key)


def _tokens(ls: Lesson) -> Snapshot:
    n, limit = ls.n, ls.config.context_length
    crop = (f" (your prompt was longer than its context window, so the model reads only the "
            f"last {limit})") if ls.prompt.dropped else ""
    return Snapshot(1, TITLES[0], "How many tokens does this model's tokenizer make of your "
                    "whole prompt? Guess a number.", "number", value=float(n), low=0,
                    high=MAX_TOKENS, unit="tokens",
                    why=f"The model reads **{n}** tokens{crop}: pieces it learned while it was "
                        "trained, often shorter than words.", key=_key("tokens", ls.prompt.ids))


def _ffn_length(ls: Lesson) -> Snapshot:
    last, layer = ls.n - 1, ls.layer
    y, x = (float(np.linalg.norm(to_numpy(ls.cache[act_name(name, layer)][0, last])))
            for name in ("resid_mid", "resid_post"))  # (d,) rows of the last token
    label = md(ls.labels[last])
    return Snapshot(9, TITLES[8], f"Before block {layer}'s feed-forward network, the last "
                    f"token **“{label}”** has a vector of length ‖y‖ = {y:.2f}. The network "
                    "adds its output: x' = y + FFN(y). Guess the length ‖x'‖.", "number",
                    value=round(x, 4), low=0, high=max(1e4, 100 * x),
                    why=f"‖x'‖ = **{x:.2f}** (‖y‖ was {y:.2f}): adding a vector can lengthen "
                        "or shorten another, depending on where it points.",
                    key=_key("ffn", ls.picked.cache_key, ls.prompt.ids, layer))


def _top_probability(ls: Lesson) -> Snapshot:
    y = np.asarray(ls.logits, np.float64)  # (|V|,)
    p = np.exp(y - y.max())
    p /= p.sum()
    best = int(np.argmax(p))
    value = round(100 * float(p[best]), 2)
    token = md(ls.vocab[best])
    return Snapshot(11, TITLES[10], f"After **“{md(ls.labels[-1])}”**, the model's most likely "
                    "next token gets some probability P at T = 1. Guess it, in %.", "number",
                    value=value, low=0, high=100, unit="%",
                    why=f"Its most likely next token is **“{token}”**, with P = "
                        f"**{number_text(value, '%')}**: the softmax of its logit over all "
                        f"{len(p):,} logits.", key=_key("top-p", ls.picked.cache_key,
                                                       ls.prompt.ids))


NUMBERS: dict[int, Callable[[Lesson], Snapshot]] = {1: _tokens, 9: _ffn_length,
                                                    11: _top_probability}


def class_question(ls: Lesson, step: int, view: StepView, number: bool) -> Snapshot | None:
    """The question the class answers at ``step``: a number to guess when ``number`` and
    the step has one, else the step's own question, else None."""
    if number and step in NUMBERS:
        return NUMBERS[step](ls)
    return None if view.question is None else choice_snapshot(step, view.question)
