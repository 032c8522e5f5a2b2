"""The gradient of a linear layer's weight for one prediction's loss, kept as the two
factors it is made of instead of as an out × in matrix.

A linear layer computes y_t = W x_t + b at each position t, so ∂L/∂W = Σ_t δ_t x_tᵀ = Δᵀ X:
Δ (T, out) the gradient at its outputs, X (T, in) its inputs. At GPT-2 small's 23 tokens
the blocks' weights (85M entries, 340 MB as matrices) are kept in 13 MB. ``Factors`` writes
the matrix, or a slice of its rows, only where it is used, with the product autograd
computes, so the numbers are autograd's.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from gptviz.analysis.float64 import dot64


@dataclass(frozen=True)
class Factors:
    """The matrix Δᵀ X (out, in)."""

    delta: Tensor  # (T, out) ∂L/∂y at each position
    x: Tensor  # (T, in) the layer's input at each position

    @property
    def shape(self) -> tuple[int, int]:
        return self.delta.shape[1], self.x.shape[1]

    @property
    def dtype(self) -> torch.dtype:
        return self.delta.dtype

    def numel(self) -> int:
        return self.shape[0] * self.shape[1]

    def __getitem__(self, rows: slice) -> Factors:
        """Rows ``rows`` of the matrix: the outputs they belong to, e.g. W_Q's of W_QKV."""
        return Factors(self.delta[:, rows], self.x)

    def dense(self) -> Tensor:
        """The matrix (in the model's dtype): Δᵀ X, row-major. Autograd forms a weight's
        gradient as (Xᵀ Δ)ᵀ, the same sums (tests/test_embed_grad.py checks it bitwise)."""
        return torch.mm(self.delta.t(), self.x)

    def write(self, out: Tensor) -> Tensor:
        """The matrix into ``out`` (its shape, any float dtype); returns ``out``. In the
        model's dtype it is written in place (a transposed copy took half the microscope's
        time on GPT-2 small)."""
        out = out.view(self.shape)
        if out.dtype == self.dtype:
            return torch.mm(self.delta.t(), self.x, out=out)
        return out.copy_(self.dense())

    def sq_norm(self) -> float:
        """‖·‖² in float64 of the float32 matrix autograd would give."""
        d = self.dense()
        return dot64(d, d)

    def times(self, h: Tensor) -> Tensor:
        """h Gᵀ for inputs h (…, in), G the matrix, without forming it: (h Xᵀ) Δ."""
        return (h @ self.x.t()) @ self.delta
