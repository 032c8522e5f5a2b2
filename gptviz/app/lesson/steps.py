"""The lesson's route: fourteen steps, one screen each, from the text to the next token.

``STEPS`` pairs each title (marked for the catalog) with the function that builds its
``StepView`` from a ``Lesson``; the page shows one at a time and the handout writes them all.
"""

from __future__ import annotations

from collections.abc import Callable

from gptviz.app.lesson import steps_block as sb
from gptviz.app.lesson import steps_input as si
from gptviz.app.lesson import steps_output as so
from gptviz.app.lesson.run import Lesson, StepView
from gptviz.i18n import N_, _

STEPS: list[tuple[str, Callable[[Lesson], StepView]]] = [
    (N_("Text → tokens"), si.tokens),
    (N_("Tokens → ids"), si.ids),
    (N_("Ids → one-hot rows"), si.one_hot),
    (N_("One-hot rows → embedding rows"), si.embedding),
    (N_("+ positions"), si.positions),
    (N_("LayerNorm"), sb.layernorm),
    (N_("One head's attention"), sb.one_head),
    (N_("All the heads"), sb.all_heads),
    (N_("The feed-forward network"), sb.ffn),
    (N_("The residual stream"), sb.residual),
    (N_("Logits"), so.logits),
    (N_("Temperature: from logits to probabilities"), so.temperature),
    (N_("The sampled token"), so.draw),
    (N_("Append and repeat"), so.repeat),
]
TITLES = [title for title, _build in STEPS]  # in English: ``title`` shows one translated


def title(number: int) -> str:
    """Step ``number``'s title (from 1) in the reader's language.

    >>> title(1)
    'Text → tokens'
    """
    return _(TITLES[number - 1])


def build_step(ls: Lesson, number: int) -> StepView:
    """Step ``number`` (from 1, as the URL's ``?step=``) of the lesson.

    >>> TITLES[0], len(TITLES)
    ('Text → tokens', 14)
    """
    return STEPS[number - 1][1](ls)
