"""Attention over heads and layers: the heads' patterns summed, and attention rollout.

Rollout follows Abnar & Zuidema (2020): the heads' mean pattern plus the residual,
Ã = 0.5·A + 0.5·I, rows renormalised, multiplied over layers.
"""

from __future__ import annotations

import torch
from torch import Tensor

RESIDUAL = 0.5  # rollout's weight of the identity (the residual stream), as the paper's

def summed_attention(patterns: Tensor) -> Tensor:
    """Σ_h A^{ℓ,h} for every layer, (L, T, T): each row sums to the number of heads.

    >>> summed_attention(torch.eye(2).expand(1, 3, 2, 2))[0]
    tensor([[3., 0.],
            [0., 3.]])
    """
    return patterns.sum(dim=1)  # (L, T, T)


def rollout(patterns: Tensor, residual: float = RESIDUAL) -> Tensor:
    """Attention rollout after each layer, (L, T, T) (Abnar & Zuidema 2020).

    Ã^ℓ = (1 − r)·mean_h A^{ℓ,h} + r·I with rows renormalised, and R^ℓ = Ã^ℓ R^{ℓ−1},
    R^{−1} = I: row i of R^ℓ is how much of each input token reaches position i after
    block ℓ, if the residual stream carried a share r of every token forward.

    >>> r = rollout(torch.tensor([[[[1.0, 0.0], [1.0, 0.0]]]])); r[0]
    tensor([[1.0000, 0.0000],
            [0.5000, 0.5000]], dtype=torch.float64)
    """
    p = patterns.double()
    eye = torch.eye(p.shape[-1], dtype=p.dtype)  # (T, T)
    out, r = [], eye
    for layer in p:  # (H, T, T)
        a = (1 - residual) * layer.mean(0) + residual * eye  # (T, T)
        a = a / a.sum(-1, keepdim=True)
        r = a @ r  # (T, T)
        out.append(r)
    return torch.stack(out)  # (L, T, T)
