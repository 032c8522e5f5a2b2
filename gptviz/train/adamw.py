"""AdamW with the numbers of ``torch.optim.AdamW``, without ``torch.optim``.

For a parameter θ with gradient g, at its step t = 1, 2, ... (m = v = 0 before the first),
with the group's learning rate η and weight decay λ:

    θ ← θ − η λ θ                              decoupled weight decay (first, on the old θ)
    m ← β₁ m + (1 − β₁) g                      first moment
    v ← β₂ v + (1 − β₂) g ⊙ g                  second moment
    m̂ = m / (1 − β₁ᵗ),   v̂ = v / (1 − β₂ᵗ)      bias correction
    θ ← θ − η m̂ / (√v̂ + ε)                    ε after the square root, as torch adds it

Why not ``torch.optim.AdamW``: its methods are wrapped by ``torch._disable_dynamo``, so the
first one called imports ``torch._dynamo`` (~70 MB of memory, 3–7 s on a busy 2-core CPU).
This class calls the kernels behind it directly, with torch's numbers bit for bit: on CPU
and CUDA the fused kernel of ``AdamW(fused=True)`` (one pass over θ, g, m, v); elsewhere,
or with ``fused=False``, ``torch._foreach_*`` operations in the order of torch's foreach
path (which also equals its for-loop path). The two kernels round differently, by ~1e-7.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch
from torch import Tensor


class AdamW:
    """Decoupled-weight-decay Adam over parameter groups (dicts with ``"params"`` and any of
    ``lr``, ``betas``, ``eps``, ``weight_decay``; unset keys take the defaults given here).

    A caller may change ``group["lr"]`` between steps (a schedule). The first step moves each
    coordinate by η in the direction of −sign(g), up to ε:

    >>> p = torch.nn.Parameter(torch.ones(2))
    >>> opt = AdamW([p], lr=0.1, weight_decay=0.0)
    >>> p.grad = torch.tensor([1.0, -2.0]); opt.step()
    >>> p.detach()
    tensor([0.9000, 1.1000])
    """

    def __init__(self, params: Iterable[Tensor] | Iterable[dict[str, Any]], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, fused: bool | None = None) -> None:
        defaults = {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay}
        items = list(params)
        groups = items if items and isinstance(items[0], dict) else [{"params": items}]
        self.param_groups: list[dict[str, Any]] = []
        for group in groups:
            group = {**defaults, **group, "params": list(group["params"])}
            _check(group)
            self.param_groups.append(group)
        self.fused = fused  # None: the fused kernel where torch has one (CPU, CUDA)
        self.state: dict[Tensor, dict[str, Any]] = {}  # per parameter: step, exp_avg, exp_avg_sq

    @torch.no_grad()
    def step(self) -> None:
        """One update of every parameter that has a gradient (the others keep their step)."""
        for group in self.param_groups:
            kinds: dict[tuple[torch.device, torch.dtype], list[Tensor]] = {}
            for p in group["params"]:
                if p.grad is not None:
                    kinds.setdefault((p.device, p.dtype), []).append(p)
            for (device, dtype), params in kinds.items():
                fused = self._use_fused(device, dtype)
                states = [self._state_of(p, fused) for p in params]
                steps = [s["step"] for s in states]
                torch._foreach_add_(steps, 1)  # t ← t + 1
                update = _fused_update if fused else _foreach_update
                update(group, params, [p.grad for p in params],
                       [s["exp_avg"] for s in states], [s["exp_avg_sq"] for s in states], steps)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Drop every gradient (or zero it in place when ``set_to_none`` is False)."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    p.grad.detach_()
                    p.grad.zero_()

    def _use_fused(self, device: torch.device, dtype: torch.dtype) -> bool:
        available = device.type in ("cpu", "cuda") and dtype.is_floating_point
        if self.fused and not available:
            raise ValueError(f"AdamW: no fused kernel for {dtype} on {device.type}; "
                             "pass fused=None to fall back to the foreach one.")
        return available if self.fused is None else self.fused

    def _state_of(self, p: Tensor, fused: bool) -> dict[str, Any]:
        state = self.state.get(p)
        if state is None:
            if p.grad.is_sparse or p.is_complex():
                raise ValueError("AdamW here takes dense real parameters and gradients only.")
            # t as a float32 scalar, as torch keeps it: beside θ for the fused kernel, on the
            # CPU for the foreach one (which reads it as a Python number every step)
            step = torch.zeros((), dtype=torch.float32, device=p.device if fused else "cpu")
            state = {"step": step,
                     "exp_avg": torch.zeros_like(p, memory_format=torch.preserve_format),
                     "exp_avg_sq": torch.zeros_like(p, memory_format=torch.preserve_format)}
            self.state[p] = state
        return state


def _fused_update(group: dict[str, Any], params: list[Tensor], grads: list[Tensor],
                  m: list[Tensor], v: list[Tensor], steps: list[Tensor]) -> None:
    """The whole update in one kernel per tensor (θ, m, v in place; t already advanced)."""
    beta1, beta2 = group["betas"]
    torch._fused_adamw_(params, grads, m, v, [], steps, lr=group["lr"], beta1=beta1,
                        beta2=beta2, weight_decay=group["weight_decay"], eps=group["eps"],
                        amsgrad=False, maximize=False)


def _foreach_update(group: dict[str, Any], params: list[Tensor], grads: list[Tensor],
                    m: list[Tensor], v: list[Tensor], steps: list[Tensor]) -> None:
    """The update as one ``torch._foreach_*`` call per line of the formulas above."""
    lr, eps, wd = group["lr"], group["eps"], group["weight_decay"]
    beta1, beta2 = group["betas"]
    t = [s.item() for s in steps]
    if wd != 0:
        torch._foreach_mul_(params, 1 - lr * wd)  # θ ← (1 − ηλ) θ
    torch._foreach_lerp_(m, grads, 1 - beta1)  # m + (1 − β₁)(g − m)
    torch._foreach_mul_(v, beta2)
    torch._foreach_addcmul_(v, grads, grads, 1 - beta2)
    step_size = [(lr / (1 - beta1**k)) * -1 for k in t]  # −η / (1 − β₁ᵗ)
    denom = torch._foreach_sqrt(v)
    torch._foreach_div_(denom, [(1 - beta2**k) ** 0.5 for k in t])  # √v̂
    torch._foreach_add_(denom, eps)
    torch._foreach_addcdiv_(params, m, denom, step_size)


def _check(group: dict[str, Any]) -> None:
    beta1, beta2 = group["betas"]
    if not (group["lr"] >= 0 and group["eps"] >= 0 and group["weight_decay"] >= 0):
        raise ValueError(f"AdamW: lr, eps and weight_decay must be >= 0, got {group['lr']}, "
                         f"{group['eps']} and {group['weight_decay']}.")
    if not (0 <= beta1 < 1 and 0 <= beta2 < 1):
        raise ValueError(f"AdamW: betas must lie in [0, 1), got ({beta1}, {beta2}).")
    if not all(isinstance(p, Tensor) and p.requires_grad for p in group["params"]):
        raise ValueError("AdamW: every parameter must be a tensor that requires grad.")
