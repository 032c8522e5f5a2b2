"""What the Generation page keeps of one generated token: a few numbers, never an array of
size |V| (a step's logits are recomputed from its ids when it is replayed); and the step
its views show, with the caption of the sampling that drew it."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from gptviz.generation import sampling as gen
from gptviz.generation.sampling import Sampling
from gptviz.i18n import N_, _, separators

N_TOP = 10  # candidates a Step lists (and a Turn keeps)


@dataclass(frozen=True)
class Turn:
    """One generated token and the few numbers the page shows of its step. Nothing here
    grows with |V| (GPT-2's logits take 200 KB a token, 400 MB for a full tree): a
    replayed step's logits are recomputed from its ids (``History.step``)."""

    chosen: int  # the appended id
    sampling: Sampling  # the settings in force when it was drawn
    cropped: int  # ids dropped from the front to fit the context window
    entropy: float  # H(P_T) in nats
    p_chosen: float  # P_T(chosen) (after top-k / top-p / min-p): what it was drawn with
    logp: float  # log P(chosen | the text before it) under the model itself (T = 1)
    top: tuple[tuple[int, float], ...]  # the N_TOP most probable (id, P_T), best first
    origin: str = "drawn"  # "drawn" from P_T; "picked" by hand (a branch); "link" (rebuilt)

    @classmethod
    def of(cls, logits: Tensor, chosen: int, sampling: Sampling, cropped: int,
           origin: str = "drawn") -> Turn:
        """What a Turn keeps of a step whose logits are ``logits`` (|V|,).

        >>> t = Turn.of(torch.log(torch.tensor([0.5, 0.25, 0.25])), 1, Sampling(), 0)
        >>> round(t.p_chosen, 3), round(t.logp, 3), t.top[0]
        (0.25, -1.386, (0, 0.5))
        """
        s = sampling
        probs = gen.next_token_probs(logits, s.temperature, s.top_k, s.top_p, s.min_p)  # (|V|,)
        best = torch.topk(probs, min(N_TOP, probs.numel()))
        logp = float(torch.log_softmax(logits.double(), -1)[chosen])
        return cls(int(chosen), sampling, int(cropped), gen.entropy(probs),
                   float(probs[chosen]), logp,
                   tuple((int(j), float(p)) for p, j in zip(best.values, best.indices,
                                                             strict=True)), origin)


@dataclass(frozen=True)
class Viewed:
    """The step the views show: a taken step (``index`` from 1) or the next one (0)."""

    step: gen.Step
    sampling: Sampling
    index: int
    origin: str = "drawn"  # the Turn's origin (a branch picked by hand, a rebuilt link)

    @property
    def taken(self) -> bool:
        return self.index > 0


def sampling_caption(s: Sampling, plain: bool = False) -> str:
    """'T = 0.8 · top-k 40 · top-p 0.9 · min-p 0.05 · seed 1', or 'greedy (T = 0)', in the
    reader's language; ``plain``: in English with a decimal point (a CSV's).

    >>> sampling_caption(Sampling(0.8, top_k=40, min_p=0.05, seed=1))
    'T = 0.8 · top-k 40 · min-p 0.05 · seed 1'
    """
    word, g = (str, "{:g}".format) if plain else (_, short)
    if s.greedy:
        return word(N_("greedy (T = 0)"))
    parts = [f"T = {g(s.temperature)}"] + ([f"top-k {s.top_k}"] if s.top_k else []) + (
        [f"top-p {g(s.top_p)}"] if s.top_p else []) + (
        [f"min-p {g(s.min_p)}"] if s.min_p else []) + [word(N_("seed {n}")).format(n=s.seed)]
    return " · ".join(parts)


def short(x: float) -> str:
    """``x`` as ``{:g}`` writes it (0.75, 2), with the reader's decimal sign (0,75 in es)."""
    return f"{x:g}".replace(".", separators()[0])
