"""The training window one prediction is taken from: N inputs and their N targets, cut as
the trainer cuts them, and the checks a window and a target position must pass (their
messages say what is wrong and what to do).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gptviz.i18n import _, ngettext, number


class LearningError(ValueError):
    """A window or position that cannot be used; the message says why and what to do."""


@dataclass(frozen=True)
class Window:
    """N inputs and their N targets, the inputs shifted by one, from ``start`` in the ids.

    >>> take_window([5, 6, 7, 8], start=1, context_length=2)
    Window(start=1, x=(6, 7), y=(7, 8))
    """

    start: int  # offset of x_0 in the ids
    x: tuple[int, ...]  # (N,) the inputs x_0 … x_{N-1}
    y: tuple[int, ...]  # (N,) the targets: y_i = x_{i+1}, the token after x_i


def take_window(ids: Sequence[int], start: int, context_length: int) -> Window:
    """The training window that starts at ``start``, as the trainer cuts it (N + 1 tokens)."""
    n, need = len(ids), context_length + 1
    if n < need:
        raise LearningError(ngettext(
            "the text has {n} token, but a training window needs N + 1 = {need} "
            "({inputs} inputs and the token after the last one). Paste a text "
            "of at least {need} tokens ({more} more).",
            "the text has {n} tokens, but a training window needs N + 1 = {need} "
            "({inputs} inputs and the token after the last one). Paste a text "
            "of at least {need} tokens ({more} more).", n).format(
                n=number(n, 0, grouping=True), need=need, inputs=context_length,
                more=number(need - n, 0, grouping=True)))
    last = n - need
    if not 0 <= start <= last:
        raise LearningError(ngettext(
            "window start {start} is out of range: the text has {n} token, so a window of "
            "{need} starts at 0 to {last}.",
            "window start {start} is out of range: the text has {n} tokens, so a window of "
            "{need} starts at 0 to {last}.", n).format(
                start=number(start, 0, grouping=True), n=number(n, 0, grouping=True),
                need=need, last=number(last, 0, grouping=True)))
    ids = [int(i) for i in ids[start:start + need]]
    return Window(start, tuple(ids[:-1]), tuple(ids[1:]))


def check_position(position: int, window: Window) -> None:
    """Raise LearningError unless ``position`` is one of the window's 0 … N−1."""
    n = len(window.x)
    if not 0 <= position < n:
        raise LearningError(_("The target position {position} is out of range: this window "
                              "has positions 0 to {last} (position t predicts the token after "
                              "x_t). Choose a position from 0 to {last}.").format(
                                  position=position, last=n - 1))
