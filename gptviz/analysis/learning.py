"""One gradient step under the microscope: the loss L = −ln P(y) of one prediction, its
gradient P − e_y at the logits beside autograd's, the gradient's norm per parameter group,
and L after one SGD step θ − η g for several η beside −η‖g‖² and −η‖g‖² + ½η² gᵀHg.

Everything runs on a private twin of the model (``private_twin``: its own modules over the
model's storage), so a model shared by several sessions is never changed or given
gradients, and GPT-2 small's 500 MB are not copied; on the explicit path (the formulas
the other pages show), in eval mode (no dropout).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from gptviz.analysis.curvature import curvature
from gptviz.analysis.embed_grad import Kept, row_grad, sq_norm
from gptviz.analysis.linear_grad import Factors
from gptviz.analysis.twin import private_twin, scratch_size, stepped
from gptviz.analysis.window import (  # noqa: F401 - the window is part of the microscope's API
    LearningError,
    Window,
    check_position,
    take_window,
)
from gptviz.model import GPT
from gptviz.model.hooks import hooks


@dataclass(frozen=True)
class Group:
    """Parameters shown as one bar: ``parts`` are (parameter name, rows) pairs, rows being
    None for the whole tensor, e.g. W_Q of block 0 is rows 0 … d−1 of ``W_QKV.weight``."""

    component: str  # "E", "W_Q", "LN₁", …
    layer: int | None  # the block, or None outside the blocks
    parts: tuple[tuple[str, slice | None], ...]

    @property
    def label(self) -> str:
        """'L0 W_Q' in block 0, the component alone outside the blocks."""
        return self.component if self.layer is None else f"L{self.layer} {self.component}"


def parameter_groups(model: GPT) -> list[Group]:
    """Every parameter in exactly one group: E, P, then per block LN₁, W_Q, W_K, W_V, W_O,
    LN₂, W₁, W₂ and its biases, then the final LayerNorm and an untied W_U.

    >>> [g.label for g in parameter_groups(model)][:4]
    ['E', 'P', 'L0 LN₁', 'L0 W_Q']
    """
    c, d = model.config, model.config.d_model
    names = dict(model.named_parameters())
    out = [Group("E", None, (("embed.weight", None),))]
    if "pos.P.weight" in names:
        out.append(Group("P", None, (("pos.P.weight", None),)))
    for layer in range(c.n_layer):
        b = f"blocks.{layer}."
        rows = {"W_Q": slice(0, d), "W_K": slice(d, 2 * d), "W_V": slice(2 * d, 3 * d)}
        blocks = [("LN₁", ("ln1.lam", "ln1.b")),
                  *((k, (("attn.W_QKV.weight", r),)) for k, r in rows.items()),
                  ("W_O", ("attn.W_O.weight",)), ("LN₂", ("ln2.lam", "ln2.b")),
                  ("W₁", ("mlp.W_1.weight",)), ("W₂", ("mlp.W_2.weight",)),
                  ("biases", ("attn.W_QKV.bias", "attn.W_O.bias", "mlp.W_1.bias",
                              "mlp.W_2.bias"))]
        for component, parts in blocks:
            parts = tuple((b + p, None) if isinstance(p, str) else (b + p[0], p[1])
                          for p in parts)
            parts = tuple(p for p in parts if p[0] in names)  # bias=False: no b
            if parts:
                out.append(Group(component, layer, parts))
    out.append(Group("LN_f", None, tuple((n, None) for n in ("ln_final.lam", "ln_final.b")
                                         if n in names)))
    if "unembed.weight" in names:  # only when not tied to E
        out.append(Group("W_U", None, (("unembed.weight", None),)))
    return out


def group_part(tensors: dict[str, Tensor], name: str, rows: slice | None) -> Tensor:
    return tensors[name] if rows is None else tensors[name][rows]


def group_norms(grads: dict[str, Tensor | Kept], groups: Sequence[Group]) -> np.ndarray:
    """‖∂L/∂θ‖ of each group (float64): the square root of its parts' summed squares."""
    return np.array([math.sqrt(sum(sq_norm(group_part(grads, n, r)) for n, r in g.parts))
                     for g in groups])


@dataclass(frozen=True)
class Step:
    """The window after one SGD step θ − η g."""

    eta: float
    loss: float  # L at the chosen position (nan or inf when the step overflowed)
    p_target: float  # P(y) = e^{−L}
    rest_loss: float  # mean loss of the window's other positions
    top: int  # the most probable next token at the chosen position (−1 if not finite)
    change: float  # the real ΔL = L(θ − ηg) − L(θ) at the position, in float64 if ``precise``
    precise: bool  # ΔL from θ − ηg formed and run in float64 (float32 rounding could show)


@dataclass(frozen=True)
class Microscope:
    """One prediction's loss, its gradients and the SGD steps from it."""

    position: int  # t
    target: int  # y, the token after x_t
    loss: float  # L = −ln P(y)
    logits: np.ndarray  # (|V|,) z at position t (float32, as the model computes it)
    probs: np.ndarray  # (|V|,) P = softmax(z), computed in float64
    dz: np.ndarray  # (|V|,) ∂L/∂z as autograd back-propagates it into the model
    groups: tuple[Group, ...]
    norms: np.ndarray  # (groups,) ‖∂L/∂θ‖ per group
    grad_sq: float  # ‖g‖², over every parameter
    curvature: float  # gᵀHg: the second derivative of L along g
    rest_loss: float  # mean loss of the window's other positions, before the step
    steps: tuple[Step, ...]

    @property
    def p_target(self) -> float:
        return float(self.probs[self.target])

    @property
    def formula(self) -> np.ndarray:
        """P − e_y (|V|,)."""
        out = self.probs.copy()
        out[self.target] -= 1.0
        return out

    @property
    def max_dz_error(self) -> float:
        """max_i |(P − e_y)_i − autograd's ∂L/∂z_i|."""
        return float(np.abs(self.formula - self.dz).max())

    def step(self, eta: float) -> Step:
        return next(s for s in self.steps if s.eta == eta)


PRECISE = 1e-2  # a |ΔL| below this × max(L, 1) is computed again in float64 (see sgd_steps)


def position_losses(model: GPT, x: Sequence[int], y: Sequence[int]) -> tuple[Tensor, Tensor]:
    """Logits (T, |V|) of the explicit path and the loss at each position (T,)."""
    with hooks(model, []):
        logits = model(torch.tensor([x]))[0]  # (T, |V|)
    return logits, F.cross_entropy(logits.to(torch.float64), torch.tensor(y),
                                   reduction="none")  # (T,)


@torch.no_grad()
def window_losses(model: GPT, window: Window) -> np.ndarray:
    """The loss at every position of the window (N,), float64; reads ``model`` only."""
    return position_losses(model, window.x, window.y)[1].numpy()


def _rest(losses: Tensor, position: int) -> float:
    """Mean loss of every position but ``position`` (nan for a one-token window)."""
    others = torch.cat((losses[:position], losses[position + 1:]))
    return float(others.mean()) if others.numel() else math.nan


def gradient(twin: GPT, window: Window, position: int
             ) -> tuple[Tensor, Tensor, Tensor, dict[str, Tensor | Kept]]:
    """Logits (N, |V|), losses (N,), ∂L/∂z_t (|V|,) and ∂L/∂θ by parameter name, for the
    loss L at ``position``. E and an untied W_U get ``RowGrad``s, formed from the
    gradient at the looked-up rows and from ∂L/∂z_t and h_t; the blocks' weight matrices
    get ``Factors``, from the gradient at each layer's outputs and its inputs: autograd
    is asked for no matrix of theirs."""
    seen: dict[str, Tensor] = {}
    layers = {n: m for n, m in twin.blocks.named_modules(prefix="blocks")
              if isinstance(m, nn.Linear)}

    def keep(name: str):  # noqa: ANN202 - a forward hook
        return lambda m, i, o: seen.update({name: o, name + "<": i[0]})

    handles = [twin.embed.register_forward_hook(keep("x")),
               twin.unembed.register_forward_hook(keep("z")),
               *(m.register_forward_hook(keep(n)) for n, m in layers.items())]
    try:
        logits, losses = position_losses(twin, window.x, window.y)
    finally:
        for h in handles:
            h.remove()
    E, W = twin.embed.weight, twin.unembed.weight
    factored = {f"{n}.weight" for n in layers}
    rest = [(n, p) for n, p in twin.named_parameters()
            if p is not E and p is not W and n not in factored]
    dz, dx, *d = torch.autograd.grad(losses[position], (
        logits, seen["x"], *(seen[n] for n in layers), *(p for _, p in rest)))
    ids, u, v = torch.tensor(window.x), dz[position], seen["z<"][0, position].detach()
    at_layers, at_rest = d[:len(layers)], d[len(layers):]
    out: dict[str, Tensor | Kept] = {f"{n}.weight": Factors(dy[0], seen[n + "<"][0].detach())
                                     for n, dy in zip(layers, at_layers, strict=True)}
    out |= dict(zip((n for n, _ in rest), at_rest, strict=True))
    if W is E:
        out["embed.weight"] = row_grad(tuple(E.shape), u, v, ids, dx[0])
    else:
        out["embed.weight"] = row_grad(tuple(E.shape), None, None, ids, dx[0])
        out["unembed.weight"] = row_grad(tuple(W.shape), u, v, ids, None)
    return logits, losses, dz[position], out


def microscope(model: GPT, window: Window, position: int, etas: Sequence[float]
               ) -> Microscope:
    """The loss at ``position``, its gradients, and one SGD step for each η in ``etas``.
    Besides the model it holds the gradient g: E's (and an untied W_U's) as ``RowGrad``
    vectors, the blocks' weights' as ``Factors``, the rest (LayerNorms, biases, P) as
    tensors of their size."""
    check_position(position, window)
    twin = private_twin(model)
    logits, losses, dz, named = gradient(twin, window, position)
    z, losses = logits[position].detach(), losses.detach()  # z: (|V|,)
    named = {n: named[n] for n, _ in twin.named_parameters()}  # the parameters' order
    g = list(named.values())
    groups = parameter_groups(twin)
    return Microscope(
        position=position, target=window.y[position], loss=float(losses[position]),
        logits=z.float().numpy(), probs=torch.softmax(z.double(), -1).numpy(),
        dz=dz.double().numpy(), groups=tuple(groups), norms=group_norms(named, groups),
        grad_sq=math.fsum(sq_norm(gi) for gi in g),
        curvature=curvature(twin, named, window.x[:position + 1], window.y[position]),
        rest_loss=_rest(losses, position),
        steps=tuple(sgd_steps(twin, window, position, g, etas, before=float(
            losses[position]))))


@torch.no_grad()
def sgd_steps(twin: GPT, window: Window, position: int, grads: Sequence[Tensor | Kept],
              etas: Sequence[float], before: float | None = None) -> list[Step]:
    """The window after θ − η g, for each η. Each part's θ − η g is written in one scratch
    buffer (the largest part's size) just before the part runs; the twin is never written.

    The real ΔL is L(θ − ηg) − L(θ), ``before`` = L(θ). In float32 the rounding of L (about
    1e-7 × L) would read as the first-order prediction's error when ΔL is small (5 % at
    η = 1e-4 where float64 shows 0.006 %): below PRECISE × max(L, 1), both losses at the
    position are computed again in float64, θ − ηg formed in float64 (a float64 scratch of
    the largest part: 310 MB for GPT-2 small's E), made once every η has run in float32
    and that scratch is freed, so the two are never held together.
    """
    step = {id(p): g for p, g in zip(twin.parameters(), grads, strict=True)}
    size = scratch_size(twin, step)
    scratch, out, again = torch.empty(size, dtype=grads[0].dtype), [], []
    for eta in etas:
        with stepped(twin, step, scratch, eta):
            logits, losses = position_losses(twin, window.x, window.y)
        loss, row = float(losses[position]), logits[position]
        top = int(row.argmax()) if bool(torch.isfinite(row).all()) else -1
        change = loss - before if before is not None else math.nan
        precise = before is not None and abs(change) < PRECISE * max(abs(before), 1.0)
        again += [len(out)] if precise else []
        out.append(Step(float(eta), loss, math.exp(-loss) if math.isfinite(loss) else math.nan,
                        _rest(losses, position), top, change, precise))
    del scratch  # the float64 scratch below is made without this one beside it
    if again:  # x_0 … x_t: the loss at t reads no more (causal mask)
        wide = torch.empty(size, dtype=torch.float64)

        def loss64(eta: float) -> float:
            with stepped(twin, step, wide, eta):
                return float(position_losses(twin, window.x[:position + 1],
                                             window.y[:position + 1])[1][position])

        base = loss64(0.0)
        for i in again:
            out[i] = replace(out[i], change=loss64(out[i].eta) - base)
    return out
