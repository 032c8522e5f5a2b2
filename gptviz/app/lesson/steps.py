"""The lesson's route: fourteen steps, one screen each, from the text to the next token.

``STEPS`` pairs each title with the function that builds its ``StepView`` from a
``Lesson``; the page shows one at a time and the handout writes them all.
"""

from __future__ import annotations

from collections.abc import Callable

from gptviz.app.lesson import steps_block as sb
from gptviz.app.lesson import steps_input as si
from gptviz.app.lesson import steps_output as so
from gptviz.app.lesson.run import Lesson, StepView

STEPS: list[tuple[str, Callable[[Lesson], StepView]]] = [
    ("Text → tokens", si.tokens),
    ("Tokens → ids", si.ids),
    ("Ids → one-hot rows", si.one_hot),
    ("One-hot rows → embedding rows", si.embedding),
    ("+ positions", si.positions),
    ("LayerNorm", sb.layernorm),
    ("One head's attention", sb.one_head),
    ("All the heads", sb.all_heads),
    ("The feed-forward network", sb.ffn),
    ("The residual stream", sb.residual),
    ("Logits", so.logits),
    ("Temperature: from logits to probabilities", so.temperature),
    ("The sampled token", so.draw),
    ("Append and repeat", so.repeat),
]
TITLES = [title for title, _ in STEPS]


def build_step(ls: Lesson, number: int) -> StepView:
    """Step ``number`` (from 1, as the URL's ``?step=``) of the lesson.

    >>> TITLES[0], len(TITLES)
    ('Text → tokens', 14)
    """
    return STEPS[number - 1][1](ls)
