"""The class's question at a lesson step, as a snapshot the store keeps: the step's own
multiple-choice question, or at some steps a number to guess (a count, a length, a
probability), with the model's value computed from the same forward pass.

A snapshot carries everything a student's page shows, so students need no model. Its
texts (the title, the question, the choices, the unit, the why) are written when the teacher
opens the step, in the teacher's language (the class's, ``Pinned.lang``): a student who picks
another language reads the page around them in it, and the question as the teacher asked it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import numpy as np

from gptviz.analysis.core import to_numpy
from gptviz.app.lesson.questions import Question, md
from gptviz.app.lesson.run import Lesson, StepView
from gptviz.app.lesson.steps import title
from gptviz.classroom.records import Snapshot, number_text
from gptviz.i18n import _, number
from gptviz.model.names import act_name

MAX_TOKENS = 1_000_000  # a token count's highest guess


def _key(*parts: object) -> str:
    """A question's fingerprint: the same question opened again keeps its answers."""
    return hashlib.sha1("\x1f".join(map(str, parts)).encode("utf-8")).hexdigest()[:16]


def choice_snapshot(step: int, q: Question) -> Snapshot:
    """The step's own question, as the class is asked it."""
    return Snapshot(step, title(step), q.text, "choice", tuple(q.choices), q.answer,
                    why=q.why, key=q.key)


def _tokens(ls: Lesson) -> Snapshot:
    n, limit = ls.n, ls.config.context_length
    why = (_("The model reads **{n}** tokens (your prompt was longer than its context window, "
             "so the model reads only the last {limit}): pieces it learned while it was "
             "trained, often shorter than words.") if ls.prompt.dropped else
           _("The model reads **{n}** tokens: pieces it learned while it was trained, often "
             "shorter than words."))
    return Snapshot(1, title(1), _("How many tokens does this model's tokenizer make of your "
                                   "whole prompt? Guess a number."), "number", value=float(n),
                    low=0, high=MAX_TOKENS, unit=_("tokens"),
                    why=why.format(n=n, limit=limit), key=_key("tokens", ls.prompt.ids))


def _ffn_length(ls: Lesson) -> Snapshot:
    last, layer = ls.n - 1, ls.layer
    y, x = (float(np.linalg.norm(to_numpy(ls.cache[act_name(name, layer)][0, last])))
            for name in ("resid_mid", "resid_post"))  # (d,) rows of the last token
    label = md(ls.labels[last])
    return Snapshot(9, title(9), _(
        "Before block {layer}'s feed-forward network, the last token **“{token}”** has a "
        "vector of length ‖y‖ = {y}. The network adds its output: x' = y + FFN(y). Guess the "
        "length ‖x'‖.").format(layer=layer, token=label, y=number(y, 2)), "number",
        value=round(x, 4), low=0, high=max(1e4, 100 * x),
        why=_("‖x'‖ = **{x}** (‖y‖ was {y}): adding a vector can lengthen or shorten another, "
              "depending on where it points.").format(x=number(x, 2), y=number(y, 2)),
        key=_key("ffn", ls.picked.cache_key, ls.prompt.ids, layer))


def _top_probability(ls: Lesson) -> Snapshot:
    y = np.asarray(ls.logits, np.float64)  # (|V|,)
    p = np.exp(y - y.max())
    p /= p.sum()
    best = int(np.argmax(p))
    value = round(100 * float(p[best]), 2)
    token = md(ls.vocab[best])
    return Snapshot(11, title(11), _(
        "After **“{token}”**, the model's most likely next token gets some probability P at "
        "T = 1. Guess it, in {unit}.").format(token=md(ls.labels[-1]), unit="%"), "number",
        value=value, low=0, high=100, unit="%",
        why=_("Its most likely next token is **“{token}”**, with P = **{p}**: the softmax of "
              "its logit over all {n} logits.").format(
            token=token, p=number_text(value, "%"), n=number(len(p), 0, grouping=True)),
        key=_key("top-p", ls.picked.cache_key, ls.prompt.ids))


NUMBERS: dict[int, Callable[[Lesson], Snapshot]] = {1: _tokens, 9: _ffn_length,
                                                    11: _top_probability}


def class_question(ls: Lesson, step: int, view: StepView, number: bool) -> Snapshot | None:
    """The question the class answers at ``step``: a number to guess when ``number`` and
    the step has one, else the step's own question, else None."""
    if number and step in NUMBERS:
        return NUMBERS[step](ls)
    return None if view.question is None else choice_snapshot(step, view.question)
