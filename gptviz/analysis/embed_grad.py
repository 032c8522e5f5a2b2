"""The gradient of E (and of an untied W_U) for one prediction's loss, kept in the form it
has instead of as a |V| × d matrix (154 MB for GPT-2 small, 3 such matrices at once while
autograd forms it for a tied E).

The loss at position t reaches W_U only through z_t = W_U h_t, so ∂L/∂W_U = (∂L/∂z_t) h_tᵀ,
one outer product; it reaches E only through the rows x_0 … x_t looked up, so ∂L/∂E is the
gradients of those rows, summed per token. ``RowGrad`` keeps these vectors and writes the
matrix (or a block of its rows) only where it is used, with the same float32 operations
autograd does, so the numbers are autograd's.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from gptviz.analysis.float64 import dot64
from gptviz.analysis.linear_grad import Factors

ROWS = 2048  # rows formed at a time when the matrix is not formed whole (6 MB of E)


@dataclass(frozen=True)
class RowGrad:
    """u vᵀ (if u is given) plus, at rows ``ids``, ``rows`` (their sum for a repeated id)."""

    shape: tuple[int, int]  # (|V|, d)
    u: Tensor | None  # (|V|,) ∂L/∂z_t, or None for E untied from W_U
    v: Tensor | None  # (d,) h_t, the final LayerNorm's output at t
    ids: Tensor  # (k,) distinct token ids, or empty
    rows: Tensor  # (k, d) ∂L/∂E at those ids

    @property
    def dtype(self) -> torch.dtype:
        return self.rows.dtype

    def numel(self) -> int:
        return self.shape[0] * self.shape[1]

    def block(self, start: int, stop: int) -> Tensor:
        """Rows start … stop−1 of the matrix (float32), as autograd would sum them."""
        if self.u is None:
            out = torch.zeros(stop - start, self.shape[1], dtype=self.dtype)
        else:
            out = torch.outer(self.u[start:stop], self.v)
        inside = (self.ids >= start) & (self.ids < stop)
        if bool(inside.any()):
            at = self.ids[inside] - start
            out[at] = out[at] + self.rows[inside]
        return out

    def write(self, out: Tensor) -> Tensor:
        """The matrix into ``out`` (its shape, any float dtype); returns ``out``."""
        out = out.view(self.shape)
        if out.dtype == self.dtype:
            return self._into(out)
        for start in range(0, self.shape[0], ROWS):
            stop = min(start + ROWS, self.shape[0])
            out[start:stop].copy_(self.block(start, stop))
        return out

    def _into(self, out: Tensor) -> Tensor:
        if self.u is None:
            out.zero_()
        else:
            torch.outer(self.u, self.v, out=out)
        if self.ids.numel():
            out[self.ids] = out[self.ids] + self.rows
        return out

    def dense(self) -> Tensor:
        return self._into(torch.empty(self.shape, dtype=self.dtype))

    def times(self, h: Tensor) -> Tensor:
        """h Gᵀ for inputs h (…, d), G the matrix, without forming it."""
        if self.u is None:
            out = h.new_zeros(*h.shape[:-1], self.shape[0])
        else:
            out = (h @ self.v)[..., None] * self.u
        if self.ids.numel():
            out = out.index_add(-1, self.ids, h @ self.rows.t())
        return out

    def sq_norm(self) -> float:
        """‖·‖² in float64, a block of rows at a time."""
        return math.fsum(dot64(b, b) for b in (
            self.block(s, min(s + ROWS, self.shape[0])) for s in range(0, self.shape[0], ROWS)))


Kept = RowGrad | Factors  # a gradient kept in the form it has (``dense()`` is the matrix)


def row_grad(shape: tuple[int, int], u: Tensor | None, v: Tensor | None, ids: Tensor,
             looked_up: Tensor | None) -> RowGrad:
    """``looked_up``: (T, d) the gradient at each looked-up row ``ids`` (T,), summed here
    per distinct id as the embedding's backward does; None when E is not this matrix."""
    if looked_up is None:
        return RowGrad(shape, u, v, ids[:0], torch.zeros(0, shape[1], dtype=u.dtype))
    distinct, which = torch.unique(ids, return_inverse=True)
    rows = torch.zeros(len(distinct), shape[1], dtype=looked_up.dtype)
    return RowGrad(shape, u, v, distinct, rows.index_add_(0, which, looked_up))


def as_dense(g: Tensor | Kept) -> Tensor:
    return g if isinstance(g, Tensor) else g.dense()


def sq_norm(g: Tensor | Kept) -> float:
    """‖g‖² in float64."""
    return dot64(g, g) if isinstance(g, Tensor) else g.sq_norm()


def fill(out: Tensor, g: Tensor | Kept) -> Tensor:
    """g into ``out`` (its dtype); returns ``out``."""
    return out.copy_(g) if isinstance(g, Tensor) else g.write(out)


def rows_of(g: RowGrad, at: Tensor) -> Tensor:
    """Rows ``at`` (n,) of the matrix g stands for (n, d), each as ``g.write`` writes it."""
    out = (torch.outer(g.u[at], g.v) if g.u is not None
           else torch.zeros(len(at), g.shape[1], dtype=g.dtype))
    if g.ids.numel():
        k = torch.searchsorted(g.ids, at).clamp(max=len(g.ids) - 1)
        hit = g.ids[k] == at
        out[hit] = out[hit] + g.rows[k[hit]]
    return out


def minus(p: Tensor, g: Tensor, eta: float, dtype: torch.dtype) -> Tensor:
    """θ − η g in ``dtype`` (g is consumed), as ``twin.stepper`` forms it."""
    if dtype == p.dtype:
        return torch.sub(p, g.mul_(eta))
    return g.to(dtype).mul_(-eta).add_(p)


@contextlib.contextmanager
def stepped_ends(twin: nn.Module, step: dict[int, Tensor | RowGrad], eta: float,
                 dtype: torch.dtype) -> Iterator[None]:
    """Run ``twin``'s E and W_U as if their weights were θ − η g, g their ``RowGrad``s,
    without forming the |V| × d matrix: E looks up only its rows x_i, W_U forms ``ROWS``
    of its rows at a time. (``twin.stepper`` leaves these weights to this.)"""
    E, W = twin.embed.weight, twin.unembed.weight
    ge, gw = step.get(id(E)), step.get(id(W))

    def embed(ids: Tensor) -> Tensor:
        flat = ids.reshape(-1)
        return minus(E[flat], rows_of(ge, flat), eta, dtype).view(*ids.shape, -1)

    def unembed(x: Tensor) -> Tensor:
        out = x.new_empty(*x.shape[:-1], gw.shape[0])
        for s in range(0, gw.shape[0], ROWS):
            e = min(s + ROWS, gw.shape[0])
            out[..., s:e] = F.linear(x, minus(W[s:e], gw.block(s, e), eta, dtype))
        return out

    with forwards((m, f) for m, g, f in ((twin.embed, ge, embed), (twin.unembed, gw, unembed))
                  if isinstance(g, RowGrad)):
        yield


@contextlib.contextmanager
def forwards(replaced: Iterable[tuple[nn.Module, Callable[..., Tensor]]]) -> Iterator[None]:
    """Each module runs its function instead of its ``forward`` while the block lasts."""
    replaced = list(replaced)
    for m, f in replaced:
        m.forward = f
    try:
        yield
    finally:
        for m, _ in replaced:
            del m.forward
