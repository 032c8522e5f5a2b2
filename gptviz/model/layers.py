"""Building blocks written the way the seeds define them.

Each module has two paths: a *hooked* one that spells out the formula and
passes named tensors through ``HookPoint``s (for the pages), and a fast one
that calls torch's fused kernels (for training). Tests hold the two equal.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from gptviz.model.hooks import HookPoint


def gelu(x: Tensor, approximate: str = "none") -> Tensor:
    """GELU(x) = x P(X <= x), X ~ N(0, 1); "tanh" is the seeds' approximation.

    >>> gelu(torch.tensor([0.0, 1.0]))
    tensor([0.0000, 0.8413])
    """
    if approximate == "tanh":
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))
    return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))


def relu(x: Tensor) -> Tensor:
    """ReLU(x) = max(x, 0)."""
    return torch.clamp_min(x, 0.0)


def sinusoidal_table(n_positions: int, d_model: int, dtype: torch.dtype = torch.float32
                     ) -> Tensor:
    """PE with p[i, 2j] = sin(i / 10000^(2j/d)) and p[i, 2j+1] = cos(same), i and j from 0.

    Computed in float64 and returned as ``dtype`` (the model adds float32).

    >>> sinusoidal_table(2, 2)
    tensor([[0.0000, 1.0000],
            [0.8415, 0.5403]])
    """
    i = torch.arange(n_positions, dtype=torch.float64)[:, None]  # (N, 1) positions
    two_j = torch.arange(0, d_model, 2, dtype=torch.float64)  # (d/2,) the even indices 2j
    angle = i / torch.pow(10000.0, two_j / d_model)  # (N, d/2)
    pe = torch.empty(n_positions, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle[:, : d_model // 2])  # odd d: the last column is a sine
    return pe.to(dtype)  # (N, d)


class LayerNorm(nn.Module):
    """LayerNorm(x)_i = λ_i (x_i - mean) / sqrt(var + eps) + b_i over the last axis.

    λ starts at 1 and b at 0 (no effect at first); ``bias=False`` drops b.
    """

    def __init__(self, d: int, bias: bool = True, eps: float = 1e-5) -> None:
        super().__init__()
        self.lam = nn.Parameter(torch.ones(d))  # λ, trainable scale
        self.b = nn.Parameter(torch.zeros(d)) if bias else None  # b, trainable shift
        self.eps = eps
        self.hook_normalized = HookPoint()

    def forward(self, x: Tensor, hooked: bool = False) -> Tensor:
        if not hooked:
            return F.layer_norm(x, x.shape[-1:], self.lam, self.b, self.eps)
        mean = x.mean(dim=-1, keepdim=True)  # (..., 1)
        var = x.var(dim=-1, keepdim=True, unbiased=False)  # (..., 1) biased, as torch's
        out = self.lam * (x - mean) / torch.sqrt(var + self.eps)  # (..., d)
        if self.b is not None:
            out = out + self.b
        return self.hook_normalized(out)


class FeedForward(nn.Module):
    """FFN(X) = act(X W_1 + b_1) W_2 + b_2, with act GELU, GELU's tanh form (GPT-2's) or ReLU."""

    def __init__(self, d_model: int, d_ff: int, activation: str, bias: bool, dropout: float):
        super().__init__()
        self.W_1 = nn.Linear(d_model, d_ff, bias=bias)
        self.W_2 = nn.Linear(d_ff, d_model, bias=bias)
        self.activation = activation
        self.dropout = nn.Dropout(dropout) if dropout > 0 else None
        self.hook_pre = HookPoint()  # X W_1 + b_1, before the non-linearity
        self.hook_post = HookPoint()  # after it

    def forward(self, x: Tensor, hooked: bool = False) -> Tensor:
        h = self.W_1(x)  # (B, T, d_ff)
        if hooked:
            h = self.hook_post(self._act(self.hook_pre(h)))
        elif self.activation == "relu":
            h = F.relu(h)
        else:
            h = F.gelu(h, approximate="tanh" if self.activation == "gelu_tanh" else "none")
        out = self.W_2(h)  # (B, T, d)
        return self.dropout(out) if self.dropout is not None else out

    def _act(self, h: Tensor) -> Tensor:
        if self.activation == "relu":
            return relu(h)
        return gelu(h, "tanh" if self.activation == "gelu_tanh" else "none")


class PositionalEncoding(nn.Module):
    """Positions added to the token embeddings: sinusoidal, learned, or none (zeros; also
    for RoPE, whose positions rotate q and k inside attention)."""

    def __init__(self, kind: str, context_length: int, d_model: int) -> None:
        super().__init__()
        self.kind = kind
        self.context_length = context_length
        self.d_model = d_model
        if kind == "learned":
            self.P = nn.Embedding(context_length, d_model)  # trainable PE rows
        elif kind == "sinusoidal":
            # Derived from the formula, so not saved in checkpoints.
            self.register_buffer("PE", sinusoidal_table(context_length, d_model), persistent=False)
        # Follows the model across devices, so "none" makes its zeros in the right place.
        self.register_buffer("anchor", torch.zeros(0), persistent=False)

    def table(self) -> Tensor:
        """The whole (N, d) matrix PE the model adds (zeros for "none")."""
        return self.forward(0, self.context_length)

    def forward(self, start: int, length: int) -> Tensor:
        """Rows start .. start+length-1 of PE, shape (length, d)."""
        if self.kind == "learned":
            return self.P.weight[start:start + length]  # (T, d)
        if self.kind == "sinusoidal":
            return self.PE[start:start + length]  # (T, d)
        return self.anchor.new_zeros(length, self.d_model)  # (T, d)
