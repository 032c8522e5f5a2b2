"""A taxonomy of heads: how much of each head's attention goes to the previous token, the
token after an earlier copy (the standard induction test), the first token or itself, and
one label per head by a rule the page states from the same numbers (``label_rule``)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from gptviz.analysis.induction import standard_induction
from gptviz.model import GPT
from gptviz.tokenizers.base import Tokenizer

KINDS = ("previous-token", "induction", "first token", "self")
THRESHOLD = 0.4  # a head is of a kind when that kind's score is at least this
MARGIN = 0.1  # ... and beats every other kind by at least this; another within it: "mixed"


def kind_scores(patterns: Tensor) -> dict[str, Tensor]:
    """Previous-token, first-token and self scores of every head, each (L, H).

    ``patterns`` (L, H, T, T). A score is the head's mean weight, over the queries
    i = 2 .. T−1, on key i−1, key 0 or key i (from i = 2 on the three keys differ; rows 0
    and 1 have no choice to make). Needs T ≥ 3.

    >>> prev = torch.diag(torch.ones(3), -1); prev[0, 0] = 1
    >>> kind_scores(prev[None, None])["previous-token"]
    tensor([[1.]], dtype=torch.float64)
    """
    t = patterns.shape[-1]
    if t < 3:
        raise ValueError(f"the scores need at least 3 tokens; the prompt has {t}.")
    p = patterns.double()
    rows = torch.arange(2, t)
    return {"previous-token": p[..., rows, rows - 1].mean(-1),
            "first token": p[..., rows, 0].mean(-1),
            "self": p[..., rows, rows].mean(-1)}  # (L, H) each


def pattern_entropy(patterns: Tensor) -> Tensor:
    """Mean entropy of the rows of every pattern, in nats, (L, H); 0 = each row on one key.

    >>> pattern_entropy(torch.tensor([[[[1.0, 0.0], [0.5, 0.5]]]]))
    tensor([[0.3466]], dtype=torch.float64)
    """
    p = patterns.double()
    return -(p * torch.log(p.clamp_min(1e-300))).sum(-1).mean(-1)  # (L, H)


def uniform_entropy(t: int) -> float:
    """The mean row entropy of causal uniform attention over T tokens: mean of log(i + 1).

    >>> round(uniform_entropy(2), 4)
    0.3466
    """
    return float(torch.log(torch.arange(1, t + 1, dtype=torch.float64)).mean())


def induction_scores(model: GPT, tokenizer: Tokenizer) -> Tensor | None:
    """Each head's induction score on the standard test (``gptviz.analysis.induction``),
    averaged over the lengths that fit the context; None when none fits or nothing can be drawn."""
    try:
        results = standard_induction(model, tokenizer, copy=False)  # the scores only
    except ValueError:  # no letter-or-digit token to draw the random sequences from
        return None
    if not results:
        return None
    return torch.stack([r.scores.double() for r in results]).mean(0)  # (L, H)


def label(scores: dict[str, float], threshold: float | None = None,
          margin: float | None = None) -> str:
    """A head's label, by the rule ``label_rule`` states (THRESHOLD and MARGIN unless given):
    "none" when no kind reaches the threshold; else its strongest kind when that beats every
    other kind by at least the margin, "mixed" when another kind comes within it. Missing
    kinds are NaN. A gap is compared to 9 decimals (0.5 − 0.4 is 0.0999… in floats).

    >>> label({"self": 0.9, "first token": 0.1}), label({"self": 0.5, "first token": 0.45})
    ('self', 'mixed')
    >>> label({"self": 0.45, "first token": 0.38}), label({"self": 0.5, "first token": 0.4})
    ('mixed', 'self')
    >>> label({"self": 0.2, "induction": float("nan")})
    'none'
    """
    threshold = THRESHOLD if threshold is None else threshold
    margin = MARGIN if margin is None else margin
    ranked = sorted(((v, k) for k, v in scores.items() if not math.isnan(v)), reverse=True)
    if not ranked or ranked[0][0] < threshold:
        return "none"
    if len(ranked) > 1 and round(ranked[0][0] - ranked[1][0], 9) < margin:
        return "mixed"
    return ranked[0][1]


def label_rule(threshold: float | None = None, margin: float | None = None) -> str:
    """The rule ``label`` applies, as the page states it (Markdown), from the same numbers.

    >>> print(label_rule(0.4, 0.1))  # doctest: +ELLIPSIS
    A head gets its strongest kind when that score is at least 0.4 and beats every ...
    """
    threshold = THRESHOLD if threshold is None else threshold
    margin = MARGIN if margin is None else margin
    return (f"A head gets its strongest kind when that score is at least {threshold} and "
            f"beats every other kind by at least {margin}; *mixed* when it is at least "
            f"{threshold} but another kind comes within {margin} of it (whatever that "
            f"kind's own score); *none* when no score reaches {threshold}.")


@dataclass(frozen=True)
class Taxonomy:
    scores: dict[str, Tensor]  # kind -> (L, H); "induction" is NaN when not measured
    entropy: Tensor  # (L, H), nats, on the prompt
    labels: list[list[str]]  # [layer][head]
    induction_measured: bool


def taxonomy(patterns: Tensor, induction: Tensor | None) -> Taxonomy:
    """Score and label every head: ``patterns`` (L, H, T, T) of the prompt, ``induction``
    (L, H) from ``induction_scores`` (or None: not measured, left out of the labels).

    >>> tax = taxonomy(torch.eye(4).expand(1, 2, 4, 4), None); tax.labels
    [['self', 'self']]
    """
    scores = kind_scores(patterns)
    shape = patterns.shape[:2]
    ind = torch.full(shape, math.nan, dtype=torch.float64) if induction is None else induction
    scores = {"previous-token": scores["previous-token"], "induction": ind.double(),
              "first token": scores["first token"], "self": scores["self"]}
    labels = [[label({k: float(v[ly, h]) for k, v in scores.items()}) for h in range(shape[1])]
              for ly in range(shape[0])]
    return Taxonomy(scores, pattern_entropy(patterns), labels, induction is not None)
