"""E's gradient kept as rows and an outer product (gptviz/analysis/embed_grad.py): the
matrix it stands for is autograd's, and the SGD steps taken with it are the steps taken
with autograd's dense gradient."""

from __future__ import annotations

import math

import pytest
import torch

from gptviz.analysis.embed_grad import RowGrad, as_dense, rows_of, sq_norm
from gptviz.analysis.learning import gradient, position_losses, sgd_steps, take_window
from gptviz.analysis.twin import private_twin
from tests.helpers import tiny_gpt

IDS = [1, 2, 3, 2, 2, 5, 7, 9, 2, 11, 3, 4, 5, 6, 7]  # token 2 repeated in the window
CONFIGS = [{}, {"tie_embeddings": False, "bias": False}]


@pytest.mark.parametrize("config", CONFIGS)
def test_the_kept_gradient_is_autograds_bitwise(config):
    model = tiny_gpt(300, **config)
    window, t = take_window(IDS, 0, 8), 6
    twin = private_twin(model)
    names, params = zip(*twin.named_parameters(), strict=True)
    reference = torch.autograd.grad(position_losses(twin, window.x, window.y)[1][t], params)
    _, _, dz, got = gradient(private_twin(model), window, t)
    kinds = {n for n, g in got.items() if isinstance(g, RowGrad)}
    assert kinds == ({"embed.weight"} if not config else {"embed.weight", "unembed.weight"})
    for name, ref in zip(names, reference, strict=True):
        assert torch.equal(as_dense(got[name]), ref), name
        assert sq_norm(got[name]) == pytest.approx(float(ref.double().pow(2).sum()), rel=1e-12)
    e = got["embed.weight"]
    at = torch.tensor([0, 2, 2, 299, 5])
    assert torch.equal(rows_of(e, at), as_dense(e)[at])
    assert torch.equal(e.block(250, 300), as_dense(e)[250:])
    wide = e.write(torch.empty(e.shape, dtype=torch.float64))
    assert torch.equal(wide, as_dense(e).double())


@pytest.mark.parametrize("config", CONFIGS)
def test_steps_with_the_kept_gradient_equal_steps_with_the_dense_one(config):
    model = tiny_gpt(300, **config)
    window, t = take_window(IDS, 0, 8), 6
    twin = private_twin(model)
    _, losses, _, named = gradient(twin, window, t)
    g = [named[n] for n, _ in twin.named_parameters()]
    etas = (1e-5, 1e-3, 0.1, 1.0, 30.0)
    kept = sgd_steps(twin, window, t, g, etas, before=float(losses[t]))
    dense = sgd_steps(twin, window, t, [as_dense(x) for x in g], etas, before=float(losses[t]))
    assert any(s.precise for s in kept) and not all(s.precise for s in kept)
    for a, b in zip(kept, dense, strict=True):
        assert (a.loss, a.rest_loss, a.top, a.precise) == (b.loss, b.rest_loss, b.top, b.precise)
        assert a.change == pytest.approx(b.change, rel=1e-9, abs=1e-15)
        assert math.isfinite(a.change)


@pytest.mark.parametrize("config", CONFIGS)
def test_g_h_g_is_the_same_with_the_kept_gradient_and_the_dense_one(config):
    """``curvature`` runs kept gradients from their factors and dense ones as θ + ηg swapped
    in: the same second derivative either way."""
    from gptviz.analysis.curvature import curvature

    model = tiny_gpt(300, **config).double()
    window, t = take_window(IDS, 0, 8), 6
    twin = private_twin(model)
    *_, named = gradient(twin, window, t)
    x, y = window.x[:t + 1], window.y[t]
    kept = curvature(twin, named, x, y)
    dense = curvature(twin, {n: as_dense(g) for n, g in named.items()}, x, y)
    assert kept == pytest.approx(dense, rel=1e-10)
    assert all(isinstance(p, torch.nn.Parameter) for p in twin.parameters())  # put back
