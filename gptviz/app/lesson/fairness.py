"""When a lesson question is fair to ask: the model's answer clearly ahead of the runner-up,
and choices a student can tell apart. The question builders (``questions.py``) ask only
then, and return no question otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence

from gptviz.tokenizers.specials import UNK

# The model's answer must beat the runner-up by this much, relatively (0.246 against 0.236
# is a coin flip that no student can be asked to predict): no question is asked otherwise.
MARGIN = 0.10


def leads(best: float, runner_up: float) -> bool:
    """Whether ``best`` beats ``runner_up`` by at least ``MARGIN`` of it (both ≥ 0).

    >>> leads(0.246, 0.236), leads(0.30, 0.236), leads(0.1, 0.0), leads(0.0, 0.0)
    (False, True, True, False)
    """
    return best > 0 and best >= (1 + MARGIN) * runner_up


def fair(choices: Sequence[str]) -> bool:
    """Whether a student can tell the choices apart: two or more, no two that read the same
    (blanks aside), none that reads ``<|UNK|>``.

    >>> fair(["a", "b"]), fair(["a", " a"]), fair(["x", "1: “<|UNK|>”"]), fair(["a"])
    (True, False, False, False)
    """
    seen = {c.strip() for c in choices}
    return len(choices) >= 2 and len(seen) == len(choices) and not any(UNK in c for c in choices)
