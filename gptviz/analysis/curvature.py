"""The second derivative of one prediction's loss along the gradient, gᵀHg: what makes
−η‖g‖² + ½η² gᵀHg, the second-order prediction of an SGD step's ΔL.

gᵀHg = d²/dη² L(θ + η g) at η = 0. The model runs at θ + η g with η one number that takes
gradients, and autograd differentiates L twice with respect to η. Nothing of the model's
size is made (the Hessian-vector product H g would be a second gradient): a weight whose
g is kept as factors runs as x Wᵀ + η x gᵀ, x gᵀ computed from the factors; the small
parameters (LayerNorms, biases, P) run as p + η g.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from gptviz.analysis.embed_grad import Kept, RowGrad, forwards, rows_of
from gptviz.analysis.linear_grad import Factors
from gptviz.model.hooks import hooks


def curvature(twin: nn.Module, g: dict[str, Tensor | Kept], x: Sequence[int], y: int
              ) -> float:
    """gᵀHg for the prediction after x_t. ``x``: the inputs x_0 … x_t; ``y``: the target
    after x_t; ``g``: a tensor or a kept gradient per named parameter of ``twin``."""
    by_id = {id(p): g[n] for n, p in twin.named_parameters()}
    eta = torch.zeros((), dtype=next(twin.parameters()).dtype, requires_grad=True)
    with along(twin, by_id, eta, last_only=True), hooks(twin, []):
        z = twin(torch.tensor([list(x)]))[0, -1]  # (|V|,) at t
    loss = F.cross_entropy(z.to(torch.float64), torch.tensor(y))
    (slope,) = torch.autograd.grad(loss, eta, create_graph=True)  # gᵀ∇L
    (second,) = torch.autograd.grad(slope, eta)
    return float(second)


def _linear(h: Tensor, w: Tensor, b: Tensor | None, eta: Tensor, g: Kept | None) -> Tensor:
    """h (W + η g)ᵀ + b, g applied to h from its factors; None: W is already θ + η g."""
    out = F.linear(h, w, b)
    return out if g is None else out + eta * g.times(h)


@contextlib.contextmanager
def along(twin: nn.Module, g: dict[int, Tensor | Kept], eta: Tensor, last_only: bool = False
          ) -> Iterator[None]:
    """Run ``twin`` at θ + η g (g by id(parameter), η a 0-d tensor). A weight with a
    ``Factors`` or ``RowGrad`` g is never formed; every other parameter is swapped for
    p + η g while the block lasts. ``last_only``: W_U is applied at the last position only
    (logits (B, 1, |V|): the (T, |V|) ones and their derivatives are most of the memory)."""
    E = twin.embed.weight
    replaced = []
    ge = g.get(id(E))
    if isinstance(ge, RowGrad):
        def embed(ids: Tensor) -> Tensor:
            flat = ids.reshape(-1)
            return (E[flat] + eta * rows_of(ge, flat)).view(*ids.shape, -1)
        replaced.append((twin.embed, embed))
    for m in twin.modules():
        gw = g.get(id(m.weight)) if isinstance(m, nn.Linear) else None
        gw = gw if isinstance(gw, Factors | RowGrad) else None  # a dense one: swapped below
        cut = last_only and m is twin.unembed
        if gw is not None or cut:
            replaced.append((m, lambda h, m=m, gw=gw, cut=cut: _linear(
                h[..., -1:, :] if cut else h, m.weight, m.bias, eta, gw)))
    swapped = [(m, k, p) for m in twin.modules() for k, p in m._parameters.items()
               if p is not None and isinstance(g.get(id(p)), Tensor)]
    try:
        for m, k, p in swapped:
            m._parameters[k] = p + eta * g[id(p)]
        with forwards(replaced):
            yield
    finally:
        for m, k, p in swapped:
            m._parameters[k] = p
