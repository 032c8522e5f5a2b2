r"""The fidelity tests' direct computation: an independent float64 forward pass written
from the checkpoint's weights alone.

It uses no module of ``gptviz.model``: only ``state_dict()`` tensors, the formulas of the
seeds, and ``torch``. LayerNorm's ε is the model's default 10⁻⁵. The page readers are in
tests/fidelity_read.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor

EPS = 1e-5  # LayerNorm's ε

# ---- the reference forward pass -----------------------------------------------------------

_MEMO: dict[tuple, tuple[Any, Any]] = {}  # key -> (the checkpoint, kept alive; the value)


def _memo(key: tuple, ckpt, make):
    """One computation per checkpoint and arguments (the pages' checks ask several times)."""
    key = (id(ckpt), *key)
    if key not in _MEMO:
        _MEMO[key] = (ckpt, make())
    return _MEMO[key][1]


def weights(ckpt) -> dict[str, Tensor]:
    """The checkpoint's tensors in float64, by state_dict name (read-only: shared)."""
    return _memo(("weights",), ckpt, lambda: {
        k: v.detach().double().cpu() for k, v in ckpt.model.state_dict().items()})


def positions_table(ckpt, W: dict[str, Tensor]) -> Tensor:
    """P (N, d): learned rows, or p[i,2j] = sin(i / 10000^(2j/d)), p[i,2j+1] = cos(…)."""
    c = ckpt.config
    if "pos.P.weight" in W:
        return W["pos.P.weight"]
    P = torch.zeros(c.context_length, c.d_model, dtype=torch.float64)
    if c.positional == "sinusoidal":
        for i in range(c.context_length):
            for k in range(c.d_model):
                angle = i / 10000 ** ((k - k % 2) / c.d_model)
                P[i, k] = math.sin(angle) if k % 2 == 0 else math.cos(angle)
    return P


def layer_norm(x: Tensor, lam: Tensor, b: Tensor | None) -> Tensor:
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)
    out = lam * (x - mu) / torch.sqrt(var + EPS)
    return out if b is None else out + b


def gelu(x: Tensor) -> Tensor:
    return 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))


@dataclass
class Forward:
    """Every intermediate of one pass, batch first; ``layers[l]`` by name (see ``forward``)."""

    ids: Tensor  # (B, T)
    x: Tensor  # (B, T, d): E[ids] + P
    layers: list[dict[str, Tensor]] = field(default_factory=list)
    final: Tensor | None = None  # (B, T, d): LN_final of the last block's output
    logits: Tensor | None = None  # (B, T, |V|)

    def probs(self, position: int = -1, b: int = 0) -> Tensor:
        return torch.softmax(self.logits[b, position], -1)  # (|V|,)


def forward(ckpt, ids, *, positions: bool = True, causal: bool = True,
            ablate: tuple[tuple[int, int], ...] = ()) -> Forward:
    """X = E[ids] + P, then per block Y = X + Z W_O + b_O and X' = Y + GELU(LN₂(Y) W₁ + b₁)
    W₂ + b₂, then y = LN_f(X) W_U. ``ablate`` zeroes heads' z before W_O. Read-only: the
    result is shared by every check that asks for the same pass."""
    ids = torch.as_tensor(ids, dtype=torch.long)
    ids = ids[None] if ids.dim() == 1 else ids  # (B, T)
    key = ("forward", tuple(ids.shape), tuple(ids.flatten().tolist()), positions, causal,
           tuple(ablate))
    return _memo(key, ckpt, lambda: forward_uncached(ckpt, ids, positions, causal, ablate))


def forward_uncached(ckpt, ids: Tensor, positions: bool, causal: bool,
                     ablate: tuple[tuple[int, int], ...]) -> Forward:
    """``forward`` for ids (B, T), not kept: for passes too big to keep every step of."""
    c, W = ckpt.config, weights(ckpt)
    B, T = ids.shape
    d, H = c.d_model, c.n_head
    dk = d // H
    x = W["embed.weight"][ids] + (positions_table(ckpt, W)[:T] if positions else 0.0)
    out = Forward(ids, x)
    blocked = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)
    for ly in range(c.n_layer):
        p = f"blocks.{ly}."
        g = {"in": x, "ln1": layer_norm(x, W[p + "ln1.lam"], W.get(p + "ln1.b"))}
        qkv = g["ln1"] @ W[p + "attn.W_QKV.weight"].T + W.get(p + "attn.W_QKV.bias", 0.0)
        q, k, v = (t.reshape(B, T, H, dk).transpose(1, 2) for t in qkv.split(d, -1))
        g["q"], g["k"], g["v"] = q, k, v  # (B, H, T, d_k)
        g["scores"] = q @ k.transpose(-1, -2) / math.sqrt(dk)  # (B, H, T, T)
        masked = g["scores"].masked_fill(blocked, -math.inf) if causal else g["scores"]
        g["pattern"] = torch.softmax(masked, -1)
        z = g["pattern"] @ v  # (B, H, T, d_k)
        for layer, head in ablate:
            if layer == ly:
                z[:, head] = 0.0
        g["z"] = z
        g["attn_out"] = (z.transpose(1, 2).reshape(B, T, d) @ W[p + "attn.W_O.weight"].T
                         + W.get(p + "attn.W_O.bias", 0.0))
        g["mid"] = x + g["attn_out"]
        g["ln2"] = layer_norm(g["mid"], W[p + "ln2.lam"], W.get(p + "ln2.b"))
        g["pre"] = g["ln2"] @ W[p + "mlp.W_1.weight"].T + W.get(p + "mlp.W_1.bias", 0.0)
        g["post"] = gelu(g["pre"]) if c.activation == "gelu" else g["pre"].clamp_min(0)
        g["mlp_out"] = g["post"] @ W[p + "mlp.W_2.weight"].T + W.get(p + "mlp.W_2.bias", 0.0)
        x = g["out"] = g["mid"] + g["mlp_out"]
        out.layers.append(g)
    out.final = layer_norm(x, W["ln_final.lam"], W.get("ln_final.b"))
    out.logits = out.final @ unembedding(ckpt, W)  # (B, T, |V|)
    return out


def unembedding(ckpt, W: dict[str, Tensor]) -> Tensor:
    """W_U (d, |V|): Eᵀ when tied, else the model's own matrix."""
    return (W["embed.weight"] if ckpt.config.tie_embeddings else W["unembed.weight"]).T


def entropy(p: Tensor) -> float:
    """−Σ p ln p in nats."""
    p = p[p > 0]
    return float(-(p * p.log()).sum())
