r"""Two facts about positions, worked out on the model's own tensors (no UI here).

1. The sinusoidal table's similarity depends only on the offset i − j. Row i of PE holds
   the pairs (sin ω_k i, cos ω_k i), ω_k = 10000^(−2k/d), and
   sin a sin b + cos a cos b = cos(a − b), so PE_i · PE_j = Σ_k cos(ω_k (i − j)) exactly.
2. Without positions, a causal GPT still notices order. Unmasked self-attention is
   permutation-equivariant: shuffle the tokens and every output is shuffled the same way,
   so the last token's output, which sees every token, would not change. The causal mask
   breaks this: token i sees only tokens 0 … i, so the earlier tokens' outputs depend on the
   order, and from the second layer on the last token reads those outputs.
3. RoPE adds nothing to X; it turns pair m of every head's q and k at position p by the
   angle p·θ_m. A rotation by α then one by −β is one by α − β, so (R_i q)·(R_j k) =
   q·R_{j−i} k: the score of two positions depends only on i − j.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from gptviz.model import GPT
from gptviz.model.attention import rope_angles, rotate
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
    """PE_i · PE_j (the model's table, float64) against Σ_k cos(ω_k (i − j)) over every pair
    of positions, kept as figures: memory N·d at most, never N × N × d."""

    n_positions: int  # N
    d_model: int  # d
    by_offset: np.ndarray  # (N,) Σ_k cos(ω_k δ) for δ = |i − j| = 0 … N − 1 (cos is even)
    max_deviation: float  # max over i, j of |PE_i · PE_j − by_offset[|i − j|]|
    diagonal_spread: float  # max over the diagonals i − j = δ of (largest − smallest entry)

    def similarity(self, i: int, j: int) -> float:
        """PE_i · PE_j from the model's table, float64 (rows computed for this pair)."""
        pe = sinusoidal_table(max(i, j) + 1, self.d_model, torch.float64)  # (max(i, j)+1, d)
        return float(pe[i] @ pe[j])

    def formula(self, i: int, j: int) -> float:
        """Σ_k cos(ω_k (i − j))."""
        return float(self.by_offset[abs(i - j)])


def sinusoidal_shift_check(n_positions: int, d_model: int) -> ShiftCheck:
    """Check PE_i · PE_j = Σ_k cos(ω_k (i − j)) on every pair of positions, in float64, one
    offset δ = i − j at a time: the diagonal δ of PE PEᵀ is the N − δ dot products
    PE_{j+δ} · PE_j, so memory stays N·d (GPT-2's 1,024 × 768: 6 MB; the whole N × N × d/2
    of cosines at once took 6.5 GB). Pairs with i < j are the same products.

    >>> check = sinusoidal_shift_check(16, 8)
    >>> check.max_deviation < 1e-12 and check.diagonal_spread < 1e-12
    True
    """
    pe = sinusoidal_table(n_positions, d_model, torch.float64).numpy()  # (N, d)
    formula = offset_similarity(np.arange(n_positions), d_model)  # (N,)
    deviation = spread = 0.0
    for delta in range(n_positions):
        diagonal = np.einsum("ij,ij->i", pe[delta:], pe[:n_positions - delta])  # (N − δ,)
        deviation = max(deviation, float(np.abs(diagonal - formula[delta]).max()))
        spread = max(spread, float(np.ptp(diagonal)))
    return ShiftCheck(n_positions, d_model, formula, deviation, spread)


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


def unrotated(n_layer: int) -> list[tuple[list[str], Callable[[Tensor, str], Tensor | None]]]:
    """Hooks that hand every layer's attention its q and k as they were before RoPE rotated
    them: a RoPE model with its positions removed."""
    kept: dict[str, Tensor] = {}
    layers = range(n_layer)

    def keep(x: Tensor, name: str) -> None:
        kept[name] = x  # (B, h, T, d_k), before the rotation

    def back(x: Tensor, name: str) -> Tensor:
        return kept[name.removesuffix("_rot")]

    return [([act_name(n, ly) for ly in layers for n in ("q", "k")], keep),
            ([act_name(n, ly) for ly in layers for n in ("q_rot", "k_rot")], back)]


def last_logits(model: GPT, ids: Sequence[int], positions: bool = True, causal: bool = True
                ) -> Tensor:
    """y_N, the last position's logits (|V|,), optionally with the positions zeroed
    (``positions=False``: hook_pos_embed returns 0, and with RoPE every q and k stays
    unrotated, ``unrotated``) or the causal mask lifted
    (``causal=False``: each pattern is the softmax of its unmasked scores).

    >>> last_logits(model, [1, 2, 3], positions=False).shape
    torch.Size([10])
    """
    fns = []
    if not positions:
        fns.append((act_name("pos_embed"), lambda pe, name: torch.zeros_like(pe)))
        if model.config.rope:  # positions live in the rotation: undo it
            fns += unrotated(model.config.n_layer)
    if not causal:
        layers = range(model.config.n_layer)
        scores: dict[str, Tensor] = {}  # the layer's attention prefix -> its scores

        def keep(x: Tensor, name: str) -> None:
            scores[name.rsplit(".", 1)[0]] = x  # (B, h, T, T) before the mask

        def unmask(x: Tensor, name: str) -> Tensor:
            return torch.softmax(scores[name.rsplit(".", 1)[0]], dim=-1)  # (B, h, T, T)

        fns += [([act_name("scores", layer) for layer in layers], keep),
                ([act_name("pattern", layer) for layer in layers], unmask)]
    fns.append((act_name("normalized", ln="ln_final"), _last_row))  # W_U on y_N's row only
    with torch.no_grad(), hooks(model, fns):
        return model(list(ids))[0, -1].double()  # (|V|,)


def _last_row(x: Tensor, name: str) -> Tensor:
    """A hook on the final LayerNorm's output (B, T, d): its last row (B, 1, d), so that the
    unembedding makes one row of logits, not T (GPT-2: 50,257 × 768 per row)."""
    return x[:, -1:]


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


# ---- 3. RoPE: rotated queries and keys whose dot products depend only on i − j ------------


def rope_angle_table(n_positions: int, d_head: int) -> np.ndarray:
    """The angles p·θ_m (N, d_k/2) by which RoPE turns pair m of a head's q and k at
    position p, θ_m = 10000^(−2m/d_k) (``gptviz.model.attention.rope_angles``).

    >>> rope_angle_table(3, 4).tolist()
    [[0.0, 0.0], [1.0, 0.01], [2.0, 0.02]]
    """
    p = np.arange(n_positions, dtype=np.float64)[:, None]  # (N, 1)
    return p * frequencies(d_head)[None, :]  # (N, d_k/2)


def layer0_qk(model: GPT, query_token: int, key_token: int, head: int
              ) -> tuple[np.ndarray, np.ndarray]:
    """q (of ``query_token``) and k (of ``key_token``) of one head in layer 0, before the
    rotation: nothing is added to a RoPE model's X, so there they depend only on the token.

    >>> q, k = layer0_qk(model, 1, 2, head=0); q.shape, k.shape
    ((8,), (8,))
    """
    names = [act_name("q", 0), act_name("k", 0)]
    _, cache = model.run_with_cache([key_token, query_token], names_filter=names)
    q = cache[names[0]][0, head, 1].double().numpy()  # (d_k,) at position 1
    k = cache[names[1]][0, head, 0].double().numpy()  # (d_k,) at position 0
    return q, k


def relative_scores(q: np.ndarray, k: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """(R_i q)·(R_j k) written as a function of δ = i − j alone, for every δ in ``offsets``:
    Σ_m [(q_2m k_2m + q_2m+1 k_2m+1) cos δθ_m + (q_2m k_2m+1 − q_2m+1 k_2m) sin δθ_m].

    >>> relative_scores(np.array([1.0, 0.0]), np.array([1.0, 0.0]), np.array([0, 1])).round(4)
    array([1.    , 0.5403])
    """
    q, k = np.asarray(q, np.float64), np.asarray(k, np.float64)
    a = q[0::2] * k[0::2] + q[1::2] * k[1::2]  # (d_k/2,)
    b = q[0::2] * k[1::2] - q[1::2] * k[0::2]  # (d_k/2,)
    angle = np.multiply.outer(np.asarray(offsets, np.float64), frequencies(len(q)))
    return (a * np.cos(angle) + b * np.sin(angle)).sum(axis=-1)  # offsets' shape


@dataclass(frozen=True)
class RopeCheck:
    """q_i·k_j after rotating q to position i and k to position j, beside the formula in
    i − j alone, for every pair of positions."""

    scores: np.ndarray  # (N, N) (R_i q)·(R_j k), rotated with the model's own ``rotate``
    by_offset: np.ndarray  # (N, N) ``relative_scores`` at δ = i − j
    max_deviation: float  # max |scores − by_offset|
    diagonal_spread: float  # max over the diagonals i − j = δ of (largest − smallest entry)


def rope_relative_check(q: np.ndarray, k: np.ndarray, n_positions: int) -> RopeCheck:
    """Rotate q and k to every position (float64) and compare every dot product with the
    formula in i − j.

    >>> check = rope_relative_check(np.ones(8), np.arange(8.0), 16)
    >>> check.max_deviation < 1e-12 and check.diagonal_spread < 1e-12
    True
    """
    d = len(q)
    cos, sin = rope_angles(0, n_positions, d)  # (N, d_k/2) each, float64
    rq = rotate(torch.as_tensor(q, dtype=torch.float64).expand(n_positions, d), cos, sin)
    rk = rotate(torch.as_tensor(k, dtype=torch.float64).expand(n_positions, d), cos, sin)
    s = (rq @ rk.T).numpy()  # (N, N)
    i = np.arange(n_positions)
    # the formula once per offset δ = i − j (2N − 1 of them, N·d_k/2 numbers), then spread
    # over the (N, N) pairs: at every pair at once it took N × N × d_k/2 of cosines
    per_offset = relative_scores(q, k, np.arange(1 - n_positions, n_positions))  # (2N − 1,)
    f = per_offset[np.subtract.outer(i, i) + n_positions - 1]  # (N, N)
    spread = max(float(np.ptp(np.diagonal(s, off))) for off in range(1 - n_positions, n_positions))
    return RopeCheck(s, f, float(np.abs(s - f).max()), spread)
