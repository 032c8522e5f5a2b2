"""One gradient step under the microscope, and the gradient checked by finite differences.

Training repeats one move: read a window of text, measure how badly the model predicts
the next tokens (the loss), find how every parameter should move to lower it (the
gradient, by back-propagation), and move a little: θ ← θ − η g. Here that move is made
once, for the prediction at one position t of one window, and every number on the way
is returned:

- the loss L = −ln P(y), y being the token that really follows x_0 … x_t;
- its gradient with respect to the logits z, which is P − e_y, beside autograd's;
- the gradient's norm for every parameter group (layer × component);
- L after one SGD step θ − η g for several η, beside the first-order prediction
  ΔL ≈ −η‖g‖² and the second-order one, −η‖g‖² + ½η² gᵀHg;
- (in ``gradient_check``) autograd against central finite differences, in float64.

Every function works on a copy of the model (``copy.deepcopy``): a model shared by
several sessions is never changed, given gradients or put in training mode. The copy
runs the explicit path (the formulas the other pages show, not the fused kernels),
whose backward can itself be differentiated (for gᵀHg), in eval mode (no dropout).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from gptviz.model import GPT
from gptviz.model.hooks import hooks


class LearningError(ValueError):
    """A window or position that cannot be used; the message says why and what to do."""


@dataclass(frozen=True)
class Window:
    """N inputs and their N targets, the inputs shifted by one, from ``start`` in the ids.

    >>> take_window([5, 6, 7, 8], start=1, context_length=2)
    Window(start=1, x=(6, 7), y=(7, 8))
    """

    start: int  # offset of x_0 in the ids
    x: tuple[int, ...]  # (N,) the inputs x_0 … x_{N-1}
    y: tuple[int, ...]  # (N,) the targets: y_i = x_{i+1}, the token after x_i


def take_window(ids: Sequence[int], start: int, context_length: int) -> Window:
    """The training window that starts at ``start``, as the trainer cuts it (N + 1 tokens)."""
    n, need = len(ids), context_length + 1
    if n < need:
        raise LearningError(
            f"the text has {n:,} tokens, but a training window needs N + 1 = {need} "
            f"({context_length} inputs and the token after the last one). Paste a text "
            f"of at least {need} tokens ({need - n:,} more).")
    last = n - need
    if not 0 <= start <= last:
        raise LearningError(f"window start {start:,} is out of range: the text has {n:,} "
                            f"tokens, so a window of {need} starts at 0 to {last:,}.")
    ids = [int(i) for i in ids[start:start + need]]
    return Window(start, tuple(ids[:-1]), tuple(ids[1:]))


def check_position(position: int, window: Window) -> None:
    """Raise LearningError unless ``position`` is one of the window's 0 … N−1."""
    n = len(window.x)
    if not 0 <= position < n:
        raise LearningError(f"target position {position} is out of range: this window has "
                            f"positions 0 to {n - 1} (position t predicts the token after "
                            f"x_t). Choose a position from 0 to {n - 1}.")


# ---- parameter groups ---------------------------------------------------------------------

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


def group_norms(grads: dict[str, Tensor], groups: Sequence[Group]) -> np.ndarray:
    """‖∂L/∂θ‖ of each group (float64): the square root of its parts' summed squares."""
    return np.array([math.sqrt(sum(float(group_part(grads, n, r).double().pow(2).sum())
                                   for n, r in g.parts)) for g in groups])


# ---- the step -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Step:
    """The window after one SGD step θ − η g."""

    eta: float
    loss: float  # L at the chosen position (nan or inf when the step overflowed)
    p_target: float  # P(y) = e^{−L}
    rest_loss: float  # mean loss of the window's other positions
    top: int  # the most probable next token at the chosen position (−1 if not finite)


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


def trainable_copy(model: GPT, dtype: torch.dtype | None = None) -> GPT:
    """A private copy of ``model`` whose parameters take gradients, in eval mode."""
    twin = copy.deepcopy(model)
    if dtype is not None:
        twin = twin.to(dtype)
    twin.eval()
    for p in twin.parameters():
        p.requires_grad_(True)
    return twin


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


def typical_position(losses: np.ndarray) -> int:
    """The position of the median loss (the lower middle one for an even count): a
    typical prediction of the window.

    >>> typical_position(np.array([0.1, 3.0, 1.2, 0.9, 5.0, 2.0]))
    2
    """
    return int(np.argsort(losses, kind="stable")[(len(losses) - 1) // 2])


def _rest(losses: Tensor, position: int) -> float:
    """Mean loss of every position but ``position`` (nan for a one-token window)."""
    others = torch.cat((losses[:position], losses[position + 1:]))
    return float(others.mean()) if others.numel() else math.nan


def microscope(model: GPT, window: Window, position: int, etas: Sequence[float]
               ) -> Microscope:
    """The loss at ``position``, its gradients, and one SGD step for each η in ``etas``."""
    check_position(position, window)
    twin = trainable_copy(model)
    names, params = zip(*twin.named_parameters(), strict=True)
    logits, losses = position_losses(twin, window.x, window.y)
    loss = losses[position]
    dz, *grads = torch.autograd.grad(loss, (logits, *params), create_graph=True)
    g = [gi.detach() for gi in grads]
    # Σ g(θ)·c with c = g held fixed has gradient H c: a Hessian-vector product.
    hg = torch.autograd.grad(sum((gi * ci).sum() for gi, ci in zip(grads, g, strict=True)),
                             params, allow_unused=True)  # None: that row of H g is 0
    groups = parameter_groups(twin)
    norms = group_norms(dict(zip(names, g, strict=True)), groups)
    z = logits[position].detach()  # (|V|,)
    out = dict(position=position, target=window.y[position], loss=float(loss.detach()),
               logits=z.float().numpy(), probs=torch.softmax(z.double(), -1).numpy(),
               dz=dz[position].detach().double().numpy(), groups=tuple(groups), norms=norms,
               grad_sq=float(sum(gi.double().pow(2).sum() for gi in g)),
               curvature=float(sum((h.double() * gi.double()).sum()
                                   for h, gi in zip(hg, g, strict=True) if h is not None)),
               rest_loss=_rest(losses.detach(), position))
    return Microscope(**out, steps=tuple(sgd_steps(twin, window, position, g, etas)))


@torch.no_grad()
def sgd_steps(twin: GPT, window: Window, position: int, grads: Sequence[Tensor],
              etas: Sequence[float]) -> list[Step]:
    """The window after θ − η g, for each η; ``twin`` is changed and put back after."""
    params = list(twin.parameters())
    theta = [p.detach().clone() for p in params]
    out = []
    for eta in etas:
        for p, t, g in zip(params, theta, grads, strict=True):
            p.copy_(t - eta * g)
        logits, losses = position_losses(twin, window.x, window.y)
        loss = float(losses[position])
        row = logits[position]
        top = int(row.argmax()) if bool(torch.isfinite(row).all()) else -1
        out.append(Step(float(eta), loss, math.exp(-loss) if math.isfinite(loss) else math.nan,
                        _rest(losses, position), top))
    for p, t in zip(params, theta, strict=True):
        p.copy_(t)
    return out

