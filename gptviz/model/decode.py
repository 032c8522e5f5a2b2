"""One generated token at a time, without the module tree: the fast path of ``GPT._forward``
for a single new position read against a KV cache.

A token's forward pass on a small model is ~20 tiny matrix products; through ``nn.Module``
calls, attribute lookups and the hooked/fast branching, Python costs more than the
arithmetic. ``Decoder`` takes the parameters once per ``generate`` call and runs the same
torch calls, in the same order, on the same tensors, so its logits are bit-identical to the
module path's (``tests/test_decode.py`` holds them equal for every model option):

    x = E[t] + p_t                          (p_t: the learned or sinusoidal row; none for RoPE)
    per block:  h = LN₁(x);  q, k, v = h W_QKV + b_QKV   (q, k rotated by R_t for RoPE)
                x = x + softmax(q Kᵀ / √d_k) V W_O + b_O  (K, V: the cache with k, v appended)
                x = x + act(LN₂(x) W_1 + b_1) W_2 + b_2
    logits = LN_final(x) W_U

The new token sees every cached key (inside the window, or a full rolling RoPE window), so
no mask is needed, as in ``CausalSelfAttention._sdpa`` for one query.
"""

from __future__ import annotations

import functools

import torch
import torch.nn.functional as F
from torch import Tensor

from gptviz.model.attention import ROPE, KVCache, rotate_qk_
from gptviz.model.gpt import GPT
from gptviz.model.hooks import is_hooked


class Decoder:
    """``GPT._forward(ids, cache, last_only=True)`` for one new token, as plain torch calls.

    >>> a, b = model.new_cache(), model.new_cache()
    >>> with torch.inference_mode():
    ...     _ = model._forward(torch.tensor([[1, 2]]), a), model._forward(torch.tensor([[1, 2]]), b)
    ...     torch.equal(Decoder.of(model).step(3, a), model._forward(torch.tensor([[3]]), b)[0, -1])
    True
    """

    def __init__(self, model: GPT) -> None:
        c = model.config
        self.E = model.embed.weight  # (|V|, d)
        self.P = model.pos.P.weight if c.positional == "learned" else (
            model.pos.PE if c.positional == "sinusoidal" else None)  # (N, d) rows added, or None
        self.rope, self.d_head, self.n_head = c.rope, c.d_head, c.n_head
        self.shape, self.eps = (c.d_model,), c.ln_eps
        self.act = F.relu if c.activation == "relu" else functools.partial(
            F.gelu, approximate="tanh" if c.activation == "gelu_tanh" else "none")
        self.layers = [(b.ln1.lam, b.ln1.b, b.attn.W_QKV.weight, b.attn.W_QKV.bias,
                        b.attn.W_O.weight, b.attn.W_O.bias, b.ln2.lam, b.ln2.b,
                        b.mlp.W_1.weight, b.mlp.W_1.bias, b.mlp.W_2.weight, b.mlp.W_2.bias)
                       for b in model.blocks]
        self.final = (model.ln_final.lam, model.ln_final.b)
        self.W_U = model.unembed.weight  # (|V|, d)

    @classmethod
    def of(cls, model: GPT) -> Decoder | None:
        """A decoder for ``model``, or None where the module path must run: inside a ``hooks``
        block (the pages' captures), with dropout active, with autograd, or in a precision
        the fused path treats apart (bfloat16 attention is computed in float32 on the CPU)."""
        dtype = model.embed.weight.dtype
        if (is_hooked(model) or (model.training and model.config.dropout > 0)
                or torch.is_grad_enabled() or dtype not in (torch.float32, torch.float64)
                or torch.is_autocast_enabled(model.device.type)):
            return None
        return cls(model)

    def step(self, token: int, cache: KVCache) -> Tensor:
        """y for the token at position ``cache.position``: logits (|V|,); the cache advances."""
        x = self.E[token].view(1, 1, -1)  # (1, 1, d)
        start = cache.position
        rotor = ROPE.rotor(start, 1, self.d_head, x) if self.rope else None  # (1, 1, 1, d_k/2)
        if self.P is not None:
            x = x + self.P[start:start + 1]  # (1, 1, d)
        for layer, (lam1, b1, W_QKV, b_QKV, W_O, b_O, lam2, b2, W_1, b_f1, W_2, b_f2) in \
                enumerate(self.layers):
            h = torch.layer_norm(x, self.shape, lam1, b1, self.eps)  # (1, 1, d)
            qkv = F.linear(h, W_QKV, b_QKV).view(1, 1, 3, self.n_head, self.d_head)
            if rotor is not None:
                rotate_qk_(qkv, rotor)
            qkv = qkv.permute(2, 0, 3, 1, 4)  # (3, 1, n_head, 1, d_k)
            kv = cache.append(layer, qkv[1:])  # (2, 1, n_head, T_past + 1, d_k)
            z = F.scaled_dot_product_attention(qkv[0], kv[0], kv[1])  # (1, n_head, 1, d_k)
            x = x + F.linear(z.transpose(1, 2).reshape(1, 1, -1), W_O, b_O)  # (1, 1, d)
            h = torch.layer_norm(x, self.shape, lam2, b2, self.eps)
            x = x + F.linear(self.act(F.linear(h, W_1, b_f1)), W_2, b_f2)  # (1, 1, d)
        cache.advance(1)
        x = torch.layer_norm(x, self.shape, *self.final, self.eps)
        return F.linear(x, self.W_U)[0, -1]  # (|V|,)
