"""A private twin of a model, and parameters swapped into it one part at a time.

The Learning page steps a model that other sessions share: ``private_twin`` gives it its
own modules over the model's storage, and ``swapped`` runs the twin with other tensors in
place of each part's parameters (``stepper``: θ − η g), made only while that part runs.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable, Iterator, Sequence

import torch
from torch import Tensor, nn

from gptviz.analysis.embed_grad import Kept, RowGrad, fill, stepped_ends
from gptviz.analysis.float64 import CHUNK
from gptviz.model import GPT


def private_twin(model: GPT) -> GPT:
    """A twin of ``model`` in eval mode whose parameters take gradients: its own modules and
    ``nn.Parameter``s over the model's storage (nothing copied; never write them in place)."""
    memo: dict[int, object] = {id(b): b for b in model.buffers()}
    memo |= {id(p): nn.Parameter(p.detach()) for p in model.parameters()}
    return copy.deepcopy(model, memo).eval()


def units(twin: GPT) -> list[nn.Module]:
    """The parts the forward pass runs in turn: E, P, each block, LN_f, W_U, hook points."""
    return [m for m in (*twin.children(), *twin.blocks) if m is not twin.blocks]


@contextlib.contextmanager
def swapped(twin: GPT, new: Callable[[list[Tensor]], list[Tensor]]) -> Iterator[None]:
    """Run ``twin`` with ``new(ps)`` in place of each part's parameters ps, made when the
    part starts and put back when it ends: one part's new tensors are needed at a time,
    not a second model. (P's part returns a view of P, added to E[ids] at once.)"""
    def put(slots: list, tensors: Sequence[Tensor]) -> None:
        for (m, k, _), q in zip(slots, tensors, strict=True):
            m._parameters[k] = q

    every = [(u, [(m, k, p) for m in u.modules() for k, p in m._parameters.items()
                  if p is not None]) for u in units(twin)]
    handles = [h for unit, slots in every if slots for h in (
        unit.register_forward_pre_hook(lambda *_, s=slots: put(s, new([p for *_, p in s]))),
        unit.register_forward_hook(lambda *_, s=slots: put(s, [p for *_, p in s])))]
    try:
        yield
    finally:
        for h in handles:
            h.remove()
        for _, slots in every:
            put(slots, [p for *_, p in slots])


def stepper(step: dict[int, Tensor | Kept], scratch: Tensor, eta: float
             ) -> Callable[[list[Tensor]], list[Tensor]]:
    """``swapped``'s ``new``: each part's θ − η g written in ``scratch`` (its dtype: float32
    rounds it as θ − (η g), as the model's own step would; float64 rounds nothing). A
    weight whose g is a ``RowGrad`` is left as it is, for ``stepped_ends`` to step."""
    def new(ps: list[Tensor]) -> list[Tensor]:
        dense = [p for p in ps if not isinstance(step[id(p)], RowGrad)]
        qs = scratch[:sum(p.numel() for p in dense)].split([p.numel() for p in dense])
        made = {id(p): q.view(p.shape) for q, p in zip(qs, dense, strict=True)}
        for p in dense:
            q = made[id(p)]
            if q.dtype == p.dtype:
                torch.sub(p, fill(q, step[id(p)]).mul_(eta), out=q)
            else:  # p added a block at a time: a mixed-dtype add_ would copy p whole
                fill(q, step[id(p)]).mul_(-eta)
                for qb, pb in zip(q.view(-1).split(CHUNK), p.detach().reshape(-1).split(CHUNK),
                                  strict=True):
                    qb.add_(pb)
        return [made.get(id(p), p) for p in ps]

    return new


def scratch_size(twin: GPT, step: dict[int, Tensor | Kept]) -> int:
    """Entries ``stepper`` needs: the largest part's, its ``RowGrad`` weights left out."""
    return max(sum(p.numel() for p in u.parameters() if not isinstance(step[id(p)], RowGrad))
               for u in units(twin))


@contextlib.contextmanager
def stepped(twin: GPT, step: dict[int, Tensor | Kept], scratch: Tensor, eta: float
            ) -> Iterator[None]:
    """Run ``twin`` at θ − η g: ``step`` maps id(parameter) to its g."""
    with swapped(twin, stepper(step, scratch, eta)), \
            stepped_ends(twin, step, eta, scratch.dtype):
        yield
