"""The second derivative of one prediction's loss along the gradient, gᵀHg, and a float64
dot product that never copies a whole tensor to float64 (the Learning page's numbers).

gᵀHg is what makes −η‖g‖² + ½η² gᵀHg, the second-order prediction of an SGD step's ΔL.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.func import functional_call, jvp

from gptviz.model.hooks import hooks

CHUNK = 1 << 20  # entries summed in float64 at a time (E of GPT-2 in float64 is 300 MB)
FORWARD_ABOVE = 10_000_000  # parameters past which gᵀHg is found by forward mode


def dot64(a: Tensor, b: Tensor) -> float:
    """Σ a_i b_i in float64, ``CHUNK`` entries at a time: dot64(t, t) is ‖t‖²."""
    pairs = zip(a.reshape(-1).split(CHUNK), b.reshape(-1).split(CHUNK), strict=True)
    return math.fsum(float(torch.dot(x.double(), y.double())) for x, y in pairs)


def curvature(twin: nn.Module, g: dict[str, Tensor], x: Sequence[int], y: int) -> float:
    """gᵀHg = d²/dη² L(θ + η g) at η = 0, for the prediction after x_t. Up to FORWARD_ABOVE
    parameters by back-propagating twice (H g = ∇(gᵀ∇L), then gᵀ(H g): one more
    gradient-sized set held); above, by forward mode along g twice (a ``jvp`` of a
    ``jvp``), which holds no H g but imports torch._dynamo (~70 MB per server, for good).
    ``x``: the inputs x_0 … x_t; ``y``: the target after x_t; ``g``: a tensor per named
    parameter of ``twin``."""
    x, y = torch.tensor([list(x)]), torch.tensor(y)

    def loss(params: dict[str, Tensor]) -> Tensor:
        with hooks(twin, []):
            z = functional_call(twin, params, (x,))[0, -1]  # (|V|,) at t
        return F.cross_entropy(z.to(torch.float64), y)

    theta = {n: p.detach() for n, p in twin.named_parameters()}
    if sum(p.numel() for p in theta.values()) > FORWARD_ABOVE:
        return float(jvp(lambda ps: jvp(loss, (ps,), (g,))[1], (theta,), (g,))[1])
    ps = {n: p.requires_grad_() for n, p in theta.items()}  # leaves over the same storage
    first = torch.autograd.grad(loss(ps), list(ps.values()), create_graph=True)
    slope = sum((d * g[n]).sum(dtype=torch.float64) for n, d in zip(ps, first, strict=True))
    hg = torch.autograd.grad(slope, list(ps.values()))  # H g, one tensor per parameter
    return math.fsum(dot64(h, g[n]) for n, h in zip(ps, hg, strict=True))
