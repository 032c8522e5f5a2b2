"""The gradient checked on screen: autograd against central finite differences.

Back-propagation is the chain rule applied by a program; finite differences need no
calculus at all: nudge one parameter by ±ε, run the model twice, and take the slope,

    ∂L/∂θ_i ≈ (L(θ + ε e_i) − L(θ − ε e_i)) / 2ε,

whose error is O(ε²) from the curvature plus about (machine ε) · L / ε from rounding.
In float64 (machine ε ≈ 1.1e-16) with ε = 1e-6 both are tiny, so the two agree to many
digits when autograd is right. Only the checked tensors are copied to float64; every other
parameter is converted one part of the model at a time as the pass reaches it, and the
backward pass converts again rather than keep those copies (``_recomputed``): GPT-2 small
in float64 would be 1 GB. The model itself is untouched.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from gptviz.analysis.embed_grad import ROWS, forwards
from gptviz.analysis.learning import (
    Group,
    LearningError,
    Window,
    check_position,
    group_part,
    parameter_groups,
    position_losses,
)
from gptviz.analysis.twin import private_twin, swapped, units
from gptviz.model import GPT

# Entries of the tensors one checked group copies to float64 (64 MB, and as much again for
# their gradient). GPT-2's E (38.6M entries) is over it: with the two uses of a tied E, its
# float64 gradient alone took three times 309 MB.
CHECK_ENTRIES = 8_000_000


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


def default_check_groups(groups: Sequence[Group], few: bool = False) -> list[str]:
    """Groups spread over the model, those of ``groups`` among: E, P, W_Q and W_K of the
    first block, W_V and W_O of the last, W₁ first, W₂ last, the first LN₁, the last
    block's biases, LN_f; ``few``: E, the first W_Q, the last W₂, LN_f."""
    last = max((g.layer for g in groups if g.layer is not None), default=0)
    wanted = (["E", "L0 W_Q", f"L{last} W₂", "LN_f"] if few else
              ["E", "P", "L0 W_Q", "L0 W_K", f"L{last} W_V", f"L{last} W_O", "L0 W₁",
               f"L{last} W₂", "L0 LN₁", f"L{last} biases", "LN_f"])
    labels = [g.label for g in groups]
    return [w for w in dict.fromkeys(wanted) if w in labels]


def copied_entries(model: GPT, group: Group) -> int:
    """Entries of the tensors the check copies for ``group`` (W_Q's is all of W_QKV)."""
    named = dict(model.named_parameters())
    return sum(named[n].numel() for n in dict.fromkeys(n for n, _ in group.parts))


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


@contextlib.contextmanager
def _recomputed(made: dict[int, tuple[weakref.ref, Tensor]]) -> Iterator[None]:
    """While the graph is built, a float64 conversion the backward pass needs is saved as
    its float32 source and converted again when used. ``made`` maps a conversion's storage
    address to (a weak reference to it, its source); a dead reference means the address now
    holds another tensor."""
    def pack(t: Tensor) -> object:
        ref, source = made.get(t.untyped_storage().data_ptr(), (None, None))
        if ref is None or ref() is None:
            return t
        return source, t.size(), t.stride(), t.storage_offset()

    def unpack(saved: object) -> Tensor:
        if isinstance(saved, Tensor):
            return saved
        source, size, stride, offset = saved
        return source.double().as_strided(size, stride, offset)

    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        yield


@contextlib.contextmanager
def _float64_ends(twin: GPT, ends: set[int], made: dict[int, tuple[weakref.ref, Tensor]]
                  ) -> Iterator[None]:
    """Run E's lookup and W_U in float64 without a float64 copy of the |V| × d matrix, for
    those of the two whose id is in ``ends``: E's rows x_i converted, W_U's ``ROWS`` rows at
    a time (each block saved for the backward pass as its float32 source, see
    ``_recomputed``)."""
    E, W = twin.embed.weight, twin.unembed.weight

    def embed(ids: Tensor) -> Tensor:
        return E.detach()[ids].double()

    def unembed(h: Tensor) -> Tensor:
        pieces = []
        for s in range(0, W.shape[0], ROWS):
            block = W.detach()[s:s + ROWS]
            wide = block.double()
            made[wide.untyped_storage().data_ptr()] = (weakref.ref(wide), block)
            pieces.append(F.linear(h, wide))
        return torch.cat(pieces, dim=-1)

    with forwards((m, f) for m, p, f in ((twin.embed, E, embed), (twin.unembed, W, unembed))
                  if id(p) in ends):
        yield


def gradient_check(model: GPT, window: Window, position: int, labels: Sequence[str],
                   eps: float = 1e-6, pick: str = "largest", seed: int = 0) -> list[CheckRow]:
    """Autograd against central differences, in float64, on one entry of each group named
    in ``labels`` (its largest |∂L/∂θ|, or a random entry drawn with ``seed``).

    L at position t reads x_0 … x_t only (the causal mask), so both run on that prefix.
    """
    check_position(position, window)
    if not eps > 0:
        raise LearningError(f"ε must be > 0, got {eps}.")
    twin = private_twin(model)
    by_label = {g.label: g for g in parameter_groups(twin)}
    unknown = [lab for lab in labels if lab not in by_label]
    if unknown:
        raise LearningError(f"no parameter group named {unknown[0]!r}; the groups are "
                            f"{', '.join(by_label)}.")
    for lab in labels:
        if (n := copied_entries(twin, by_label[lab])) > CHECK_ENTRIES:
            raise LearningError(f"{lab} has {n:,} entries to copy to float64, more than the "
                                f"{CHECK_ENTRIES:,} a check may take; choose smaller groups.")
    named = dict(twin.named_parameters())
    checked = {n: named[n].detach().double().requires_grad_()  # float64 copies of these only
               for lab in labels for n, _ in by_label[lab].parts}
    leaf = {id(named[n]): t for n, t in checked.items()}
    made: dict[int, tuple[weakref.ref, Tensor]] = {}
    # E and W_U, unless checked, are never made whole in float64 (309 MB for GPT-2 small):
    # E is looked up at x_i, W_U applied a block of rows at a time (``_float64_ends``).
    ends = {id(p) for p in (twin.embed.weight, twin.unembed.weight) if id(p) not in leaf}
    # The finite differences keep nothing: their conversions go in one reused buffer, made
    # after the gradient's pass (the two at once would double the peak).
    scratch: list[Tensor] = []

    def f64(ps: list[Tensor]) -> list[Tensor]:
        out, at = [leaf.get(id(p)) for p in ps], 0
        for i, p in enumerate(ps):
            if out[i] is not None:
                continue
            if id(p) in ends:
                out[i] = p  # converted where it is used (_float64_ends)
            elif torch.is_grad_enabled():  # building the graph: see _recomputed
                out[i] = p.detach().double()
                made[out[i].untyped_storage().data_ptr()] = (weakref.ref(out[i]), p.detach())
            else:
                if not scratch:
                    scratch.append(torch.empty(max(
                        sum(q.numel() for q in u.parameters() if id(q) not in ends)
                        for u in units(twin)), dtype=torch.float64))
                out[i] = scratch[0][at:at + p.numel()].view_as(p).copy_(p)
                at += p.numel()
        return out

    def loss() -> Tensor:
        with swapped(twin, f64), _float64_ends(twin, ends, made):
            return position_losses(twin, window.x[:position + 1], window.y[:position + 1]
                                   )[1][position]

    with _recomputed(made):
        grads = dict(zip(checked, torch.autograd.grad(loss(), list(checked.values())),
                         strict=True))
    rng = np.random.default_rng(seed)
    rows = []
    with torch.no_grad():
        for label in labels:
            name, idx = _entry(grads, by_label[label], pick, rng)
            p, original = checked[name], float(checked[name][idx])
            shifted = []
            for sign in (1.0, -1.0):
                p[idx] = original + sign * eps
                shifted.append(float(loss()))
            p[idx] = original
            rows.append(CheckRow(label, name, idx, float(grads[name][idx]),
                                 (shifted[0] - shifted[1]) / (2 * eps)))
    return rows
