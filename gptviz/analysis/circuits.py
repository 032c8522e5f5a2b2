"""The circuits of a head (its taxonomy: ``gptviz.analysis.taxonomy``; attention summed or
rolled out over layers: ``gptviz.analysis.flow``).

In seed 004's notation, with row vectors and ``W_Q^h, W_K^h, W_V^h`` (d × d_k) and
``W_O^h`` (d_k × d) the blocks of head h:

    W_QK = W_Q^h (W_K^h)ᵀ    (d × d)   the QK circuit: which keys a query looks at
    W_OV = W_V^h W_O^h       (d × d)   the OV circuit: what the head writes from a key

    s_ij = (x̂_i W_Q + b_Q)(x̂_j W_K + b_K)ᵀ / √d_k
         = [x̂_i W_QK x̂_jᵀ + x̂_i W_Q b_Kᵀ + b_Q W_Kᵀ x̂_jᵀ + b_Q b_Kᵀ] / √d_k

with x̂ = LN1's output.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from gptviz.model import GPT
from gptviz.model.attention import rope_angles, rotate

TOLERANCE = 1e-5  # |Δ| allowed between the four terms and the page's scores ...
RELATIVE = 1e-6  # ... or this times the largest |s_ij|: float32 keeps ~7 digits of a score


# ---- the circuits of one head --------------------------------------------------------------

@dataclass(frozen=True)
class HeadWeights:
    """One head's blocks of the attention weights, as the seeds write them (x W, rows)."""

    W_Q: Tensor  # (d, d_k)
    W_K: Tensor  # (d, d_k)
    W_V: Tensor  # (d, d_k)
    W_O: Tensor  # (d_k, d): this head's rows of W_O
    b_Q: Tensor | None  # (d_k,), None without biases
    b_K: Tensor | None  # (d_k,)
    b_V: Tensor | None  # (d_k,)
    b_O: Tensor | None  # (d,): the whole layer's, added once after the heads are mixed

    @property
    def d_head(self) -> int:
        return self.W_Q.shape[1]


def head_weights(model: GPT, layer: int, head: int) -> HeadWeights:
    """Slice head ``head`` of block ``layer`` out of W_QKV and W_O (float64 copies).

    >>> w = head_weights(model, 0, 1); tuple(w.W_Q.shape), tuple(w.W_O.shape)
    ((16, 8), (8, 16))
    """
    attn = model.blocks[layer].attn
    d, dk = model.config.d_model, model.config.d_head
    heads = slice(head * dk, (head + 1) * dk)
    w = attn.W_QKV.weight.detach()  # (3d, d): nn.Linear stores (out, in)
    # each head's rows first, then float64: 3·d_k·d numbers, not the whole 3d × d
    q, k, v = (w[i * d:(i + 1) * d][heads].double().T for i in range(3))  # (d, d_k) each
    b = attn.W_QKV.bias
    bq, bk, bv = (None,) * 3 if b is None else (
        b.detach()[i * d:(i + 1) * d][heads].double() for i in range(3))  # (d_k,) each
    o = attn.W_O.weight.detach()[:, heads].double().T  # (d_k, d)
    bo = None if attn.W_O.bias is None else attn.W_O.bias.detach().double()  # (d,)
    return HeadWeights(q, k, v, o, bq, bk, bv, bo)


def qk_circuit(w: HeadWeights) -> Tensor:
    """W_QK = W_Q^h (W_K^h)ᵀ, (d, d), of rank at most d_k.

    >>> tuple(qk_circuit(head_weights(model, 0, 0)).shape)
    (16, 16)
    """
    return w.W_Q @ w.W_K.T  # (d, d)


def ov_circuit(w: HeadWeights) -> Tensor:
    """W_OV = W_V^h W_O^h, (d, d): a key's x̂_j W_OV is what the head adds for it (at weight 1).

    >>> tuple(ov_circuit(head_weights(model, 1, 1)).shape)
    (16, 16)
    """
    return w.W_V @ w.W_O  # (d, d)


def _rotations(t: int, d_head: int, rope: bool):
    """v ↦ v broadcast to (T, d_k), each row p rotated by RoPE's R_p when ``rope``."""
    if not rope:
        return lambda v: v.expand(t, d_head)
    cos, sin = rope_angles(0, t, d_head)  # float64, (T, d_k/2) each
    return lambda v: rotate(v.expand(t, d_head), cos, sin)


def score_terms(x_hat: Tensor, w: HeadWeights, rope: bool = False) -> dict[str, Tensor]:
    """The four terms of s_ij, each already divided by √d_k, as (T, T) float64 matrices.

    ``x_hat`` (T, d) is LN1's output. Keys: "xWx" = x̂_i W_QK x̂_jᵀ, and with biases
    "xWb" = x̂_i W_Q b_Kᵀ (the same along a row), "bWx" = b_Q W_Kᵀ x̂_jᵀ (the same down a
    column), "bb" = b_Q b_Kᵀ (one number); "sum" adds them. Without biases only "xWx" and
    "sum" are there.

    With ``rope`` the model rotates query i by R_i and key j by R_j, so each term has
    R_{j−i} = R_iᵀR_j in its middle (x̂_i W_Q R_{j−i} W_Kᵀ x̂_jᵀ, …) and depends on the
    offset j − i: no bias term is constant along a row or a column any more.

    >>> x = cache["blocks.0.ln1.hook_normalized"][0]
    >>> t = score_terms(x, head_weights(model, 0, 1))
    >>> bool((t["sum"] - cache["blocks.0.attn.hook_scores"][0, 1]).abs().max() < 1e-5)
    True
    """
    x = x_hat.detach().double()  # (T, d)
    t = x.shape[0]
    scale = math.sqrt(w.d_head)
    bias = w.b_Q is not None and w.b_K is not None
    if rope:
        r = _rotations(t, w.d_head, True)
        q, k = r(x @ w.W_Q), r(x @ w.W_K)  # (T, d_k) each, rotated
        terms = {"xWx": q @ k.T / scale}  # (T, T)
        if bias:
            bq, bk = r(w.b_Q), r(w.b_K)  # (T, d_k) each: b at every position, rotated
            terms |= {"xWb": q @ bk.T / scale, "bWx": bq @ k.T / scale,
                      "bb": bq @ bk.T / scale}  # (T, T) each
    else:
        terms = {"xWx": x @ qk_circuit(w) @ x.T / scale}  # (T, T)
        if bias:
            terms["xWb"] = (x @ w.W_Q @ w.b_K)[:, None].expand(t, t) / scale  # rows
            terms["bWx"] = (w.b_Q @ w.W_K.T @ x.T)[None, :].expand(t, t) / scale  # columns
            terms["bb"] = (w.b_Q @ w.b_K).expand(t, t) / scale  # (T, T), one number
    terms["sum"] = sum(terms.values())  # (T, T)
    return terms


def direct_scores(x_hat: Tensor, w: HeadWeights, rope: bool = False) -> Tensor:
    """(x̂ W_Q + b_Q)(x̂ W_K + b_K)ᵀ / √d_k in float64, (T, T): the left side of the identity;
    with ``rope``, each query row i and key row j rotated by R_i and R_j first.

    >>> x = cache["blocks.1.ln1.hook_normalized"][0]; w = head_weights(model, 1, 0)
    >>> float((direct_scores(x, w) - score_terms(x, w)["sum"]).abs().max()) < 1e-12
    True
    """
    x = x_hat.detach().double()  # (T, d)
    q, k = x @ w.W_Q, x @ w.W_K  # (T, d_k) each
    if w.b_Q is not None and w.b_K is not None:
        q, k = q + w.b_Q, k + w.b_K
    if rope:
        r = _rotations(x.shape[0], w.d_head, True)
        q, k = r(q), r(k)
    return q @ k.T / math.sqrt(w.d_head)  # (T, T)


def tolerance(scores: Tensor) -> float:
    """What |Δ| against float32 scores may reach: TOLERANCE, or RELATIVE × max |s| when the
    scores are large (a score of 40 is stored to within ~2e-6, and Q Kᵀ adds rounding).

    >>> import torch
    >>> tolerance(torch.tensor([3.0])), tolerance(torch.tensor([-32.0]))
    (1e-05, 3.2e-05)
    """
    return max(TOLERANCE, RELATIVE * float(scores.abs().max()))


def unembedding(model: GPT) -> Tensor:
    """W_U (d, |V|) as the seeds write it: Eᵀ when the model ties them (float64)."""
    return model.unembed.weight.detach().double().T  # (d, |V|)


def ov_token_logits(model: GPT, layer: int, head: int, source: int) -> Tensor:
    """Row ``source`` of E W_OV W_U (|V|,): how the head moves each output token's logit
    when it reads the embedding of token ``source`` with weight 1.

    The direct path only: E's row goes in without LN1 or the blocks before, and comes
    out without the final LayerNorm. Biases are left out (W_OV has none): b_V W_O^h is
    added whatever the head reads, and b_O belongs to the whole layer.

    >>> tuple(ov_token_logits(model, 0, 1, 3).shape)
    (10,)
    """
    e = model.embed.weight.detach()[source].double()  # (d,)
    return unembed_rows(model, e @ ov_circuit(head_weights(model, layer, head)))  # (|V|,)


UNEMBED_ROWS = 4096  # rows of W_Uᵀ taken to float64 at a time (12 MB for d = 768)


def unembed_rows(model: GPT, x: Tensor) -> Tensor:
    """x W_U (|V|,) in float64 for one vector x (d,) in float64: W_U's columns are taken to
    float64 a block at a time, never the whole matrix (309 MB for GPT-2).

    >>> x = torch.ones(16, dtype=torch.float64)
    >>> bool(torch.allclose(unembed_rows(model, x), x @ unembedding(model)))
    True
    """
    w = model.unembed.weight.detach()  # (|V|, d) = W_Uᵀ
    return torch.cat([w[i:i + UNEMBED_ROWS].double() @ x
                      for i in range(0, w.shape[0], UNEMBED_ROWS)])  # (|V|,)


# ---- a taxonomy of heads -------------------------------------------------------------------
