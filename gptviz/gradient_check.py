"""The gradient checked on screen: autograd against central finite differences.

Back-propagation is the chain rule applied by a program; finite differences need no
calculus at all: nudge one parameter by ±ε, run the model twice, and take the slope,

    ∂L/∂θ_i ≈ (L(θ + ε e_i) − L(θ − ε e_i)) / 2ε,

whose error is O(ε²) from the curvature plus about (machine ε) · L / ε from rounding.
In float64 (machine ε ≈ 1.1e-16) with ε = 1e-6 both are tiny, so the two agree to many
digits when autograd is right. Runs on a float64 copy; the model itself is untouched.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from gptviz.learning import (
    Group,
    LearningError,
    Window,
    check_position,
    group_part,
    parameter_groups,
    position_losses,
    trainable_copy,
)
from gptviz.model import GPT


@dataclass(frozen=True)
class CheckRow:
    """One parameter entry: autograd's ∂L/∂θ_i beside the central difference."""

    group: str  # the group's label, e.g. "L0 W_Q"
    parameter: str  # the tensor's name in the model, e.g. "blocks.0.attn.W_QKV.weight"
    index: tuple[int, ...]  # the entry in that tensor
    autograd: float
    numeric: float  # (L(θ + ε e_i) − L(θ − ε e_i)) / 2ε

    @property
    def abs_error(self) -> float:
        return abs(self.autograd - self.numeric)

    @property
    def rel_error(self) -> float:
        """|a − n| / max(|a|, |n|), 0 when both are 0.

        >>> CheckRow("E", "embed.weight", (0, 0), 2.0, 2.002).rel_error < 1e-3
        True
        """
        scale = max(abs(self.autograd), abs(self.numeric))
        return self.abs_error / scale if scale else 0.0


def default_check_groups(groups: Sequence[Group]) -> list[str]:
    """A few groups spread over the model: E, P, W_Q and W_K of the first block, W_V and
    W_O of the last, W₁ first, W₂ last, the first LN₁, the last block's biases, LN_f."""
    last = max((g.layer for g in groups if g.layer is not None), default=0)
    wanted = ["E", "P", "L0 W_Q", "L0 W_K", f"L{last} W_V", f"L{last} W_O", "L0 W₁",
              f"L{last} W₂", "L0 LN₁", f"L{last} biases", "LN_f"]
    labels = [g.label for g in groups]
    return [w for w in dict.fromkeys(wanted) if w in labels]


def _entry(grads: dict[str, Tensor], group: Group, pick: str, rng: np.random.Generator
           ) -> tuple[str, tuple[int, ...]]:
    """The group's entry with the largest |∂L/∂θ| (``pick="largest"``) or a random one."""
    best: tuple[float, str, tuple[int, ...]] | None = None
    sizes = [group_part(grads, n, r).numel() for n, r in group.parts]
    if pick == "random":
        k = int(rng.integers(sum(sizes)))
        for (name, rows), size in zip(group.parts, sizes, strict=True):
            if k < size:
                return name, _full_index(grads[name], rows, k)
            k -= size
    for name, rows in group.parts:
        part = group_part(grads, name, rows)
        k = int(part.abs().argmax())
        value = float(part.reshape(-1)[k].abs())
        if best is None or value > best[0]:
            best = (value, name, _full_index(grads[name], rows, k))
    assert best is not None
    return best[1], best[2]


def _full_index(tensor: Tensor, rows: slice | None, flat: int) -> tuple[int, ...]:
    """The index in ``tensor`` of entry ``flat`` of its ``rows``."""
    shape = tensor.shape if rows is None else tensor[rows].shape
    idx = [int(i) for i in np.unravel_index(flat, tuple(shape))]
    if rows is not None:
        idx[0] += rows.start or 0
    return tuple(idx)


def gradient_check(model: GPT, window: Window, position: int, labels: Sequence[str],
                   eps: float = 1e-6, pick: str = "largest", seed: int = 0) -> list[CheckRow]:
    """Autograd against central differences, in float64, on one entry of each group named
    in ``labels`` (its largest |∂L/∂θ|, or a random entry drawn with ``seed``).

    L at position t reads x_0 … x_t only (the causal mask), so both run on that prefix.
    """
    check_position(position, window)
    if not eps > 0:
        raise LearningError(f"ε must be > 0, got {eps}.")
    twin = trainable_copy(model, torch.float64)
    x, y = window.x[:position + 1], window.y[:position + 1]
    named = dict(twin.named_parameters())
    loss = position_losses(twin, x, y)[1][position]
    grads = dict(zip(named, torch.autograd.grad(loss, list(named.values())), strict=True))
    by_label = {g.label: g for g in parameter_groups(twin)}
    unknown = [lab for lab in labels if lab not in by_label]
    if unknown:
        raise LearningError(f"no parameter group named {unknown[0]!r}; the groups are "
                            f"{', '.join(by_label)}.")
    rng = np.random.default_rng(seed)
    rows = []
    with torch.no_grad():
        for label in labels:
            name, idx = _entry(grads, by_label[label], pick, rng)
            p, original = named[name], float(named[name][idx])
            shifted = []
            for sign in (1.0, -1.0):
                p[idx] = original + sign * eps
                shifted.append(float(position_losses(twin, x, y)[1][position]))
            p[idx] = original
            rows.append(CheckRow(label, name, idx, float(grads[name][idx]),
                                 (shifted[0] - shifted[1]) / (2 * eps)))
    return rows
