"""Data-parallel training over processes started by ``torchrun`` (gloo on CPU, nccl on GPU).

Every process holds a full replica; DDP averages the gradients, so after each
step every replica is the same. ``replicas_identical`` checks exactly that.

    torchrun --standalone --nproc_per_node=2 -m gptviz.train --corpus input.txt ...
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch import nn

from gptviz.train.device import resolve_device


@dataclass(frozen=True)
class DistInfo:
    """Where this process sits: rank r of world_size, on ``device``."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    device: torch.device = torch.device("cpu")

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def init_from_env(device: str = "auto") -> DistInfo | None:
    """Join the process group torchrun describes in the environment; None when not under it.

    >>> init_from_env() is None      # a plain ``python`` run
    True
    """
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    if world_size <= 1 or "RANK" not in os.environ:
        return None
    rank, local_rank = int(os.environ["RANK"]), int(os.environ.get("LOCAL_RANK", "0"))
    dev = resolve_device(device)
    if dev.type == "cuda":
        dev = torch.device("cuda", local_rank)
        torch.cuda.set_device(dev)
    elif dev.type == "mps":
        raise ValueError("DDP does not run on MPS; use --device cpu.")
    if not dist.is_initialized():
        dist.init_process_group(backend="nccl" if dev.type == "cuda" else "gloo")
    return DistInfo(rank, world_size, local_rank, dev)


def params_digest(model: nn.Module) -> str:
    """SHA-256 of every parameter's bytes, in name order: equal digests = equal weights."""
    h = hashlib.sha256()
    for name, p in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(p.detach().float().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


def replicas_identical(model: nn.Module) -> bool:
    """True when every process's parameters are bit-for-bit the same (collective call)."""
    digests: list[str | None] = [None] * dist.get_world_size()
    dist.all_gather_object(digests, params_digest(model))
    return len(set(digests)) == 1


def finish() -> None:
    """After a successful run, wait for every rank: a rank that tears gloo down while
    another is still saving can abort ("terminate called without an active exception")."""
    if dist.is_initialized():
        dist.barrier()


def cleanup() -> None:
    if dist.is_initialized():
        dist.destroy_process_group()
