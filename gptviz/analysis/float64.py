"""A float64 dot product that never copies a whole tensor to float64: the Learning page's
gradient norms are summed this way (E of GPT-2 small in float64 is 309 MB)."""

from __future__ import annotations

import math

import torch
from torch import Tensor

CHUNK = 1 << 20  # entries summed in float64 at a time


def dot64(a: Tensor, b: Tensor) -> float:
    """Σ a_i b_i in float64, ``CHUNK`` entries at a time: dot64(t, t) is ‖t‖²."""
    pairs = zip(a.reshape(-1).split(CHUNK), b.reshape(-1).split(CHUNK), strict=True)
    return math.fsum(float(torch.dot(x.double(), y.double())) for x, y in pairs)
