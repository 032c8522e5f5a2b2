"""Causally masked multi-head self-attention, and the key/value cache for generation.

attention(Q, K, V) = softmax(Q Kᵀ / sqrt(d_k) + M) V, with M = -inf above the
diagonal, computed per head. The hooked path writes this out step by step so
the scores and the pattern can be captured; the fast path hands the same
computation to ``scaled_dot_product_attention``.

With rotary positions (RoPE, Su et al. 2021) q and k are rotated by their absolute
position before the scores, pair of coordinates (2i, 2i+1) by the angle p·θ_i with
θ_i = 10000^(-2i/d_k); a score then depends on the two positions only through i - j.
A RoPE model attends to at most ``context_length`` keys back (a sliding window), so it
reads texts of any length, and its key/value cache can roll: keys already rotated stay
valid when the window slides.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from gptviz.model.hooks import HookPoint


class KVCache:
    """Keys and values of the tokens seen so far, for every layer.

    Preallocated to the context length; ``length`` tokens are filled. The
    model writes new keys with ``append`` and calls ``advance`` after a pass.

    >>> cache = KVCache(n_layer=4, batch=1, n_head=4, capacity=64, d_head=32)
    >>> cache.length, cache.capacity
    (0, 64)
    """

    def __init__(self, n_layer: int, batch: int, n_head: int, capacity: int, d_head: int,
                 device: str | torch.device = "cpu", dtype: torch.dtype = torch.float32,
                 rolling: bool = False) -> None:
        # Keys and values side by side, so one copy stores both.
        self.kv = torch.zeros((n_layer, 2, batch, n_head, capacity, d_head), device=device,
                              dtype=dtype)  # (L, 2, B, n_head, N, d_head)
        self.length = 0  # positions filled
        self.position = 0  # tokens seen: the absolute position of the next one
        self.capacity = capacity
        self.rolling = rolling  # when full, drop the oldest keys (RoPE models only)

    def append(self, layer: int, kv: Tensor, ordered: bool = False) -> Tensor:
        """Store kv (2, B, n_head, T, d_head) after the cached ones; return all of them.

        A full rolling cache is a ring: the position p lives in slot p mod N, so the new
        key overwrites the one that left the window and nothing is copied. A single query
        sees every key of its window, in any order, so only ``ordered`` (the hooked path,
        whose pattern a page draws) gets them oldest first.
        """
        t = kv.shape[3]
        end = self.length + t
        if end > self.capacity and self.rolling and t == 1:  # exact only one token at a time
            slot = self.position % self.capacity
            self.kv[layer, :, :, :, slot:slot + 1] = kv
            keys = self.kv[layer]  # (2, B, n_head, N, d_head), oldest at slot + 1
            return torch.roll(keys, -(slot + 1), dims=3) if ordered else keys
        if end > self.capacity:
            raise ValueError(
                f"the KV cache holds {self.capacity} positions; {end} would not fit. "
                "Start a new cache from the cropped context."
            )
        self.kv[layer, :, :, :, self.length:end] = kv
        return self.kv[layer, :, :, :, :end]  # (2, B, n_head, end, d_head)

    def advance(self, n: int) -> None:
        self.position += n
        self.length = min(self.length + n, self.capacity) if self.rolling else self.length + n

    def reset(self) -> None:
        self.length = self.position = 0


def causal_mask(t_query: int, t_key: int, device: torch.device | None = None) -> Tensor:
    """M as a boolean "blocked" matrix: query i (the last t_query of t_key) sees keys <= i.

    >>> causal_mask(3, 3).int()
    tensor([[0, 1, 1],
            [0, 0, 1],
            [0, 0, 0]], dtype=torch.int32)
    """
    offset = t_key - t_query
    ones = torch.ones(t_query, t_key, dtype=torch.bool, device=device)
    return torch.triu(ones, diagonal=offset + 1)  # (t_query, t_key)


def window_mask(t_query: int, t_key: int, window: int, device: torch.device | None = None
                ) -> Tensor:
    """M of a sliding window: query i sees the keys j with i - window < j <= i (blocked = True).

    The queries are the last t_query of the t_key positions.

    >>> window_mask(3, 3, 2).int()
    tensor([[0, 1, 1],
            [0, 0, 1],
            [1, 0, 0]], dtype=torch.int32)
    """
    q = torch.arange(t_key - t_query, t_key, device=device)[:, None]  # (t_query, 1)
    k = torch.arange(t_key, device=device)[None, :]  # (1, t_key)
    return (k > q) | (q - k >= window)  # (t_query, t_key)


def rope_angles(start: int, length: int, d_head: int, device: torch.device | None = None
                ) -> tuple[Tensor, Tensor]:
    """cos and sin of p·θ_i for positions p = start .. start+length-1, θ_i = 10000^(-2i/d_k).

    Computed in float64 (positions may be large), shape (length, d_head/2) each.
    """
    p = torch.arange(start, start + length, dtype=torch.float64, device=device)[:, None]
    theta = torch.pow(10000.0, -torch.arange(0, d_head, 2, dtype=torch.float64,
                                              device=device) / d_head)  # (d_head/2,)
    angle = p * theta  # (T, d_head/2)
    return torch.cos(angle), torch.sin(angle)


def rotate(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """Rotate each pair (x_2i, x_2i+1) of x (..., T, d_head) by its angle (T, d_head/2).

    >>> c, s = rope_angles(1, 1, 2)      # position 1, θ_0 = 1: a rotation by 1 radian
    >>> rotate(torch.tensor([[1.0, 0.0]]), c, s)
    tensor([[0.5403, 0.8415]])
    """
    cos, sin = cos.to(x.dtype), sin.to(x.dtype)
    x1, x2 = x[..., 0::2], x[..., 1::2]  # (..., T, d_head/2) each
    return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)


class RopeTable:
    """e^{i p θ_k} for positions 0 .. n-1 as complex numbers (rope_angles' cos + i sin,
    computed in float64, then stored in the model's precision), grown by doubling; the
    model's layers share one table, so a generated token costs a slice, not a recompute.

    >>> table = RopeTable(); x = torch.randn(1, 1, 3, 8)   # (B, heads, T, d_head)
    >>> c, s = rope_angles(5, 3, 8)
    >>> torch.allclose(table.rotate(x, 5), rotate(x, c, s), atol=1e-6)
    True
    """

    def __init__(self) -> None:
        self._tables: dict[tuple, Tensor] = {}

    def rotate(self, x: Tensor, start: int) -> Tensor:
        """``rotate(x, *rope_angles(start, T, d_head))`` for x (..., T, d_head)."""
        T, d = x.shape[-2], x.shape[-1]
        if x.dtype not in (torch.float32, torch.float64):  # no complex half types here
            return rotate(x, *rope_angles(start, T, d, x.device))
        pairs = torch.view_as_complex(x.reshape(*x.shape[:-1], d // 2, 2).contiguous())
        return torch.view_as_real(pairs * self._slice(start, T, d, x)).flatten(-2)

    def rotor(self, start: int, T: int, d: int, x: Tensor) -> Tensor | None:
        """The rows start .. start+T-1 shaped (T, 1, 1, d/2) to broadcast over the pairs of
        q and k in qkv (B, T, 2, n_head, d/2), for ``rotate_qk_``; None where x's precision
        has no complex type. Made once per forward pass: every layer rotates by the same.

        >>> RopeTable().rotor(7, 3, 8, torch.zeros(1)).shape
        torch.Size([3, 1, 1, 4])
        """
        if x.dtype not in (torch.float32, torch.float64):
            return None
        return self._slice(start, T, d, x).view(T, 1, 1, d // 2)  # (T, 1, 1, d/2)

    def _slice(self, start: int, T: int, d: int, x: Tensor) -> Tensor:
        """The table's rows start .. start+T-1 (T, d/2), in x's precision."""
        key = (d, x.device, x.dtype)
        table = self._tables.get(key)
        if table is None or table.shape[0] < start + T:
            n = max(64, 2 ** math.ceil(math.log2(start + T)))
            # a plain tensor even when first made while generating (``generate`` runs in
            # inference mode): training may use the same table with autograd afterwards
            with torch.inference_mode(False):
                cos, sin = rope_angles(0, n, d, x.device)
                table = torch.complex(cos, sin).to(_COMPLEX[x.dtype])  # (n, d/2)
            self._tables[key] = table
        return table[start:start + T]


_COMPLEX = {torch.float32: torch.complex64, torch.float64: torch.complex128}


def rotate_qk_(qkv: Tensor, rotor: Tensor) -> Tensor:
    """Rotate q and k of ``qkv`` (B, T, 3, n_head, d_head) in place by ``RopeTable.rotor``,
    as ``RopeTable.rotate`` would, and return qkv. Three calls (the pairs as complex numbers,
    their q and k, the product), no copy: for generation, without autograd, in the rotor's
    precision (the model checks once per pass).

    >>> qkv = torch.randn(1, 2, 3, 1, 4); qk = qkv[:, :, :2].transpose(1, 3)  # (B, h, 2, T, d)
    >>> want = ROPE.rotate(qk, 5)
    >>> torch.allclose(rotate_qk_(qkv, ROPE.rotor(5, 2, 4, qkv))[:, :, :2].transpose(1, 3), want)
    True
    """
    qkv.view(rotor.dtype).narrow(2, 0, 2).mul_(rotor)  # (B, T, 2, n_head, d_head/2) pairs
    return qkv


ROPE = RopeTable()  # shared by every RoPE layer of every model: it holds only angles


class CausalSelfAttention(nn.Module):
    """n_head heads of width d_k = d_model / n_head; W_QKV holds W_Q, W_K, W_V side by side."""

    def __init__(self, d_model: int, n_head: int, bias: bool, dropout: float,
                 window: int | None = None) -> None:
        super().__init__()
        self.n_head = n_head
        self.d_head = d_model // n_head
        self.window = window  # RoPE: keys at most this far back are seen (None: no RoPE)
        self.W_QKV = nn.Linear(d_model, 3 * d_model, bias=bias)  # [W_Q | W_K | W_V]
        self.W_O = nn.Linear(d_model, d_model, bias=bias)  # mixes the heads back
        self.dropout = dropout
        self.resid_dropout = nn.Dropout(dropout) if dropout > 0 else None
        rotated = ("q_rot", "k_rot") if window is not None else ()
        for name in ("q", "k", "v", *rotated, "scores", "pattern", "z"):
            setattr(self, f"hook_{name}", HookPoint())

    def forward(self, x: Tensor, hooked: bool = False, cache: KVCache | None = None,
                layer: int = 0, rotor: Tensor | None = None) -> Tensor:
        """x (B, T, d) -> (B, T, d). ``rotor``: the model's ``RopeTable.rotor`` for this
        pass, given when generating (no hooks, no autograd), shared by every layer."""
        B, T, d = x.shape
        qkv = self.W_QKV(x).view(B, T, 3, self.n_head, self.d_head)  # (B, T, 3, n_head, d_head)
        if rotor is not None:  # generating: rotate q and k where they are, no copies
            rotate_qk_(qkv, rotor)
        qkv = qkv.permute(2, 0, 3, 1, 4)  # (3, B, n_head, T, d_head): Q, K, V per head
        if hooked or (self.window is not None and rotor is None):
            q, kv = self._split(qkv, hooked, cache)
        else:
            q, kv = qkv[0], qkv[1:]  # (B, n_head, T, d_head), (2, B, n_head, T, d_head)
        if cache is not None:
            kv = cache.append(layer, kv, ordered=hooked)  # (2, B, n_head, T_past + T, d_head)
        k, v = kv[0], kv[1]
        if hooked:
            z = self._explicit(q, k, v)
        else:
            z = self._fused(q, k, v)
        z = z.transpose(1, 2).reshape(B, T, d)  # (B, T, d): heads side by side
        out = self.W_O(z)  # (B, T, d)
        return self.resid_dropout(out) if self.resid_dropout is not None else out

    def _split(self, qkv: Tensor, hooked: bool, cache: KVCache | None
               ) -> tuple[Tensor, Tensor | tuple[Tensor, Tensor]]:
        """q and (k, v) of qkv (3, B, n_head, T, d_head) on the hooked path, or with autograd:
        each captured, q and k rotated into copies (RoPE) by their absolute positions."""
        if hooked:
            q, k, v = self.hook_q(qkv[0]), self.hook_k(qkv[1]), self.hook_v(qkv[2])
        else:
            q, k, v = qkv[0], qkv[1], qkv[2]  # (B, n_head, T, d_head) each
        if self.window is not None:
            qk = ROPE.rotate(torch.stack((q, k)), cache.position if cache is not None else 0)
            q, k = qk[0], qk[1]
            if hooked:
                q, k = self.hook_q_rot(q), self.hook_k_rot(k)
        if hooked and cache is None:
            return q, (k, v)
        return q, torch.stack((k, v))  # (2, B, n_head, T, d_head)

    def _blocked(self, t_query: int, t_key: int, device: torch.device) -> Tensor:
        if self.window is not None and t_key > self.window:
            return window_mask(t_query, t_key, self.window, device)  # (T, Tk)
        return causal_mask(t_query, t_key, device=device)  # (T, Tk)

    def _explicit(self, q: Tensor, k: Tensor, v: Tensor) -> Tensor:
        scores = self.hook_scores(q @ k.transpose(-2, -1) / math.sqrt(self.d_head))  # (B, h, T, Tk)
        blocked = self._blocked(q.shape[2], k.shape[2], q.device)  # (T, Tk)
        pattern = torch.softmax(scores.masked_fill(blocked, float("-inf")), dim=-1)  # W_attn
        pattern = self.hook_pattern(pattern)  # (B, n_head, T, Tk), rows sum to 1
        if self.training and self.dropout > 0:
            pattern = F.dropout(pattern, self.dropout)
        return self.hook_z(pattern @ v)  # (B, n_head, T, d_head)

    def _fused(self, q: Tensor, k: Tensor, v: Tensor) -> Tensor:
        p = self.dropout if self.training else 0.0
        if q.device.type == "cpu" and q.dtype == torch.bfloat16:
            # CPU's bf16 flash-attention backward is ~4x slower than float32's.
            with torch.autocast("cpu", enabled=False):
                return self._sdpa(q.float(), k.float(), v.float(), p)
        return self._sdpa(q, k, v, p)

    def _sdpa(self, q: Tensor, k: Tensor, v: Tensor, p: float) -> Tensor:
        t_query, t_key = q.shape[2], k.shape[2]
        if self.window is not None and t_key > self.window:  # a RoPE model past its window
            allowed = ~window_mask(t_query, t_key, self.window, q.device)
            return F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, dropout_p=p)
        if t_query == t_key:
            return F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)
        if t_query == 1:  # one new token sees every cached one: no mask needed
            return F.scaled_dot_product_attention(q, k, v, dropout_p=p)
        allowed = ~causal_mask(t_query, t_key, device=q.device)  # (T, Tk)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, dropout_p=p)
