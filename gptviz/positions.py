r"""Two facts about positions, worked out on the model's own tensors (no UI here).

1. The sinusoidal table's similarity depends only on the offset i − j. Row i of PE holds
   the pairs (sin ω_k i, cos ω_k i), ω_k = 10000^(−2k/d), and
   sin a sin b + cos a cos b = cos(a − b), so PE_i · PE_j = Σ_k cos(ω_k (i − j)) exactly.
2. Without positions, a causal GPT still notices order. Unmasked self-attention is
   permutation-equivariant: shuffle the tokens and every output is shuffled the same way,
   so the last token's output, which sees every token, would not change. The causal mask
   breaks this: token i sees only tokens 0 … i, so the earlier tokens' outputs depend on the
   order, and from the second layer on the last token reads those outputs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from gptviz.model import GPT
from gptviz.model.hooks import hooks
from gptviz.model.layers import sinusoidal_table
from gptviz.model.names import act_name

# ---- 1. the sinusoidal table depends only on i − j ----------------------------------------


def frequencies(d_model: int) -> np.ndarray:
    """ω_k = 10000^(−2k/d) for k = 0 … ⌈d/2⌉ − 1: column 2k of PE is sin(ω_k i), 2k+1 cos(ω_k i).

    >>> frequencies(4).tolist()
    [1.0, 0.01]
    """
    return 10000.0 ** (-np.arange(0, d_model, 2, dtype=np.float64) / d_model)  # (⌈d/2⌉,)


def offset_similarity(offsets: Sequence[int] | np.ndarray, d_model: int) -> np.ndarray:
    """Σ_k cos(ω_k δ) over the d // 2 (sin, cos) pairs, for every offset δ = i − j.

    >>> offset_similarity([0, 1], 2).round(4).tolist()
    [1.0, 0.5403]
    """
    w = frequencies(d_model)[: d_model // 2]  # (d/2,) an odd d's lone sine has no pair
    delta = np.asarray(offsets, dtype=np.float64)
    return np.cos(np.multiply.outer(delta, w)).sum(axis=-1)  # offsets' shape


@dataclass(frozen=True)
class ShiftCheck:
    """PE PEᵀ in float64 beside Σ_k cos(ω_k (i − j)), and how far apart they are."""

    similarity: np.ndarray  # (N, N) PE_i · PE_j, the model's table in float64
    by_offset: np.ndarray  # (N, N) Σ_k cos(ω_k (i − j))
    max_deviation: float  # max over i, j of |similarity − by_offset|
    diagonal_spread: float  # max over the diagonals i − j = δ of (largest − smallest entry)


def sinusoidal_shift_check(n_positions: int, d_model: int) -> ShiftCheck:
    """Check PE_i · PE_j = Σ_k cos(ω_k (i − j)) on the whole (N, N) matrix, in float64.

    >>> check = sinusoidal_shift_check(16, 8)
    >>> check.max_deviation < 1e-12 and check.diagonal_spread < 1e-12
    True
    """
    pe = sinusoidal_table(n_positions, d_model, torch.float64).numpy()  # (N, d)
    s = pe @ pe.T  # (N, N)
    i = np.arange(n_positions)
    f = offset_similarity(np.subtract.outer(i, i), d_model)  # (N, N)
    spread = max(float(np.ptp(np.diagonal(s, k))) for k in range(1 - n_positions, n_positions))
    return ShiftCheck(s, f, float(np.abs(s - f).max()), spread)


# ---- 2. order without positions -----------------------------------------------------------


def prefix_order(n_tokens: int, seed: int) -> list[int]:
    """A random order of the prefix (positions 0 … n−2, drawn with ``seed``); n−1 stays last.

    >>> order = prefix_order(5, 0); sorted(order[:-1]), order[-1]
    ([0, 1, 2, 3], 4)
    """
    if n_tokens < 1:
        raise ValueError("there is no token to keep last: the prompt is empty.")
    g = torch.Generator().manual_seed(int(seed))
    return torch.randperm(n_tokens - 1, generator=g).tolist() + [n_tokens - 1]


def last_logits(model: GPT, ids: Sequence[int], positions: bool = True, causal: bool = True
                ) -> Tensor:
    """y_N, the last position's logits (|V|,), optionally with the positions zeroed
    (``positions=False``: hook_pos_embed returns 0) or the causal mask lifted
    (``causal=False``: each pattern is the softmax of its unmasked scores).

    >>> last_logits(model, [1, 2, 3], positions=False).shape
    torch.Size([10])
    """
    fns = []
    if not positions:
        fns.append((act_name("pos_embed"), lambda pe, name: torch.zeros_like(pe)))
    if not causal:
        layers = range(model.config.n_layer)
        scores: dict[str, Tensor] = {}  # the layer's attention prefix -> its scores

        def keep(x: Tensor, name: str) -> None:
            scores[name.rsplit(".", 1)[0]] = x  # (B, h, T, T) before the mask

        def unmask(x: Tensor, name: str) -> Tensor:
            return torch.softmax(scores[name.rsplit(".", 1)[0]], dim=-1)  # (B, h, T, T)

        fns += [([act_name("scores", layer) for layer in layers], keep),
                ([act_name("pattern", layer) for layer in layers], unmask)]
    with torch.no_grad(), hooks(model, fns):
        return model(list(ids))[0, -1].double()  # (|V|,)


@dataclass(frozen=True)
class OrderCheck:
    """The last token's logits before and after shuffling the prefix, three ways."""

    order: list[int]  # position k of the shuffled prompt holds the token from order[k]
    before: np.ndarray  # (|V|,) y_N without positions, causal mask on, prompt as typed
    after: np.ndarray  # (|V|,) the same with the prefix shuffled
    causal: float  # max |after − before|: the mask alone carries order
    unmasked: float  # the same without the mask: 0 up to rounding (equivariance)
    trained: float  # the model as it is, positions and mask: for scale

    @property
    def moved(self) -> bool:
        """False when the shuffle left every token where it was."""
        return self.order != sorted(self.order)


def order_check(model: GPT, ids: Sequence[int], seed: int) -> OrderCheck:
    """Shuffle the prefix of ``ids`` with ``seed`` and measure max_v |Δ y_{N,v}|.

    >>> check = order_check(model, [1, 2, 3, 4], seed=0)
    >>> check.unmasked < 1e-4
    True
    """
    order = prefix_order(len(ids), seed)
    shuffled = [ids[k] for k in order]

    def delta(**how: bool) -> tuple[float, Tensor, Tensor]:
        a, b = last_logits(model, ids, **how), last_logits(model, shuffled, **how)
        return float((b - a).abs().max()), a, b

    causal, before, after = delta(positions=False)
    return OrderCheck(order, before.numpy(), after.numpy(), causal,
                      delta(positions=False, causal=False)[0], delta()[0])
