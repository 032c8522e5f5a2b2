"""Attention maths for the Attention page: the seeds' variants, checks and head ablation.

    simplified (no weights):  W_attn = softmax(X Xᵀ),            Z = W_attn X
    causal, by renormalising: W = softmax(S) ⊙ tril(1),          W_i ← W_i / Σ_j W_ij
    causal, by −∞ masking:    W = softmax(S + M),  M_ij = −∞ for j > i, else 0

The two causal forms are equal: softmax(S)_ij ∝ exp(S_ij), so zeroing the future
and dividing by the row's sum is exactly the softmax over the past.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from gptviz.analysis.core import ArrayLike, to_numpy
from gptviz.model import GPT, ablate_heads, causal_mask, hooks
from gptviz.model.hooks import ActivationCache
from gptviz.model.names import act_name

Heads = Mapping[int, Iterable[int]]  # layer -> heads, as ``ablate_heads`` takes them


def mask_matrix(t: int) -> Tensor:
    """M (T, T): 0 on and below the diagonal, −∞ above it.

    >>> mask_matrix(2)
    tensor([[0., -inf],
            [0., 0.]])
    """
    return torch.zeros(t, t).masked_fill(causal_mask(t, t), float("-inf"))  # (T, T)


def simplified_attention(X: ArrayLike) -> tuple[Tensor, Tensor, Tensor]:
    """The seeds' weight-free attention: scores X Xᵀ, pattern softmax by rows, Z = pattern X.

    >>> scores, pattern, z = simplified_attention(torch.eye(2)); pattern[0]
    tensor([0.7311, 0.2689])
    """
    x = torch.as_tensor(to_numpy(X))  # (T, d)
    scores = x @ x.T  # (T, T), s_qk = x_q · x_k
    pattern = torch.softmax(scores, dim=-1)  # (T, T), rows sum to 1
    return scores, pattern, pattern @ x  # (T, T), (T, T), (T, d)


def causal_by_renormalising(scores: ArrayLike) -> Tensor:
    """softmax without a mask, zero the upper triangle, divide each row by its sum.

    >>> causal_by_renormalising(torch.zeros(2, 2))
    tensor([[1.0000, 0.0000],
            [0.5000, 0.5000]])
    """
    s = torch.as_tensor(to_numpy(scores))  # (T, T)
    w = torch.softmax(s, dim=-1) * torch.tril(torch.ones_like(s))  # (T, T), future zeroed
    return w / w.sum(dim=-1, keepdim=True)  # (T, T), rows sum to 1 again


def causal_by_neg_inf(scores: ArrayLike) -> Tensor:
    """softmax(S + M) by rows, M = −∞ above the diagonal (what the model computes).

    >>> causal_by_neg_inf(torch.zeros(2, 2))
    tensor([[1.0000, 0.0000],
            [0.5000, 0.5000]])
    """
    s = torch.as_tensor(to_numpy(scores))  # (T, T)
    return torch.softmax(s + mask_matrix(s.shape[-1]), dim=-1)  # (T, T)


def rotated_qk(cache: ActivationCache, layer: int) -> tuple[str, str]:
    """The names of the q and k that layer ``layer``'s scores are made of: with RoPE the
    rotated ones (hook_q_rot, hook_k_rot), else hook_q and hook_k."""
    rot = act_name("q_rot", layer) in cache
    return tuple(act_name(n + ("_rot" if rot else ""), layer) for n in "qk")


def head_tensors(cache: ActivationCache, layer: int, head: int,
                 batch: int = 0) -> dict[str, np.ndarray]:
    """Every step of one head as float32 arrays (−∞ kept where the mask puts it).

    Keys: Q, K, V, Z (T, d_k); scores = QKᵀ/√d_k, mask M, masked scores
    = scores + M and pattern (T, T). With RoPE, Q and K are the rotated ones, those the
    scores are made of (``rotated_qk``).

    >>> sorted(head_tensors(cache, 0, 1))
    ['K', 'M', 'Q', 'V', 'Z', 'masked scores', 'pattern', 'scores']
    """
    q, k = rotated_qk(cache, layer)
    pick = {name: cache[kind][batch, head]  # (T, d_k) or (T, T)
            for name, kind in [("Q", q), ("K", k), ("V", act_name("v", layer)),
                               ("scores", act_name("scores", layer)),
                               ("pattern", act_name("pattern", layer)),
                               ("Z", act_name("z", layer))]}
    m = mask_matrix(pick["scores"].shape[-1]).to(pick["scores"].device)  # (T, T)
    pick["M"], pick["masked scores"] = m, pick["scores"] + m
    return {name: to_numpy(t) for name, t in pick.items()}


def all_patterns(cache: ActivationCache, n_layer: int, batch: int = 0) -> np.ndarray:
    """Every head's pattern stacked, shape (n_layer, n_head, T, T), for the grid."""
    stack = [cache[act_name("pattern", layer)][batch] for layer in range(n_layer)]
    return to_numpy(torch.stack(stack))  # (L, n_head, T, T)


def sdpa_max_delta(cache: ActivationCache, layers: Iterable[int]) -> dict[str, float]:
    """Max |Δ| between the captured pattern and Z and ``scaled_dot_product_attention``.

    SDPA is recomputed from the captured Q, K, V (causal; with RoPE the rotated Q and K).
    It does not return its weights, so the pattern is read as SDPA(Q, K, I): attention applied to
    the identity matrix gives the attention matrix itself.

    >>> sdpa_max_delta(cache, range(2))["Z"] < 1e-5
    True
    """
    delta = {"pattern": 0.0, "Z": 0.0}
    for layer in layers:
        q, k, v = (cache[n].float() for n in (*rotated_qk(cache, layer),
                                              act_name("v", layer)))  # (B, h, T, d_k) each
        eye = torch.eye(q.shape[-2], device=q.device).expand(*q.shape[:-1], -1)  # (B, h, T, T)
        z = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, h, T, d_k)
        w = F.scaled_dot_product_attention(q, k, eye, is_causal=True)  # (B, h, T, T)
        for name, ours, theirs in [("pattern", cache[act_name("pattern", layer)], w),
                                   ("Z", cache[act_name("z", layer)], z)]:
            delta[name] = max(delta[name], float((ours.float() - theirs).abs().max()))
    return delta


@torch.no_grad()
def probs_with_heads_off(model: GPT, ids: Sequence[int] | Tensor, heads: Heads | None = None,
                     position: int = -1) -> np.ndarray:
    """P(next token) (|V|,) at ``position``, with the chosen heads switched off.

    >>> float(probs_with_heads_off(model, [1, 2, 3], {0: [1]}).sum().round(4))
    1.0
    """
    # hooks(model, []) puts even "no ablation" on the explicit path, so that the
    # only difference between before and after is the ablation itself.
    def one_row(x: Tensor, name: str) -> Tensor:  # W_U on that position's row only
        return x[:, position].unsqueeze(1)  # (B, 1, d)

    with hooks(model, [(act_name("normalized", ln="ln_final"), one_row)]), \
            ablate_heads(model, heads or {}):
        logits = model(ids)[0, 0]  # (|V|,)
    return to_numpy(torch.softmax(logits.float(), dim=-1))  # (|V|,)


def ablation_effect(model: GPT, ids: Sequence[int] | Tensor, heads: Heads,
                    position: int = -1) -> tuple[np.ndarray, np.ndarray]:
    """Next-token distribution before and after ablating ``heads``, each (|V|,).

    >>> before, after = ablation_effect(model, [1, 2, 3], {0: [1]})
    >>> before.shape, bool((before != after).any())
    ((10,), True)
    """
    return probs_with_heads_off(model, ids, None, position), probs_with_heads_off(model, ids, heads,
                                                                          position)


def top_changes(before: np.ndarray, after: np.ndarray, k: int = 10) -> np.ndarray:
    """Ids worth showing: the top k before, then the top k after that are new.

    >>> top_changes(np.array([.5, .3, .2]), np.array([.1, .2, .7]), k=1).tolist()
    [0, 2]
    """
    ids = list(np.argsort(-before, kind="stable")[:k])
    ids += [i for i in np.argsort(-after, kind="stable")[:k] if i not in ids]
    return np.array(ids, dtype=np.int64)
