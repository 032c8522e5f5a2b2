"""Snapshots of a model during training, for the replay: copies of the weights at a few
steps, bounded in count and bytes, stored as one safetensors file beside the weights.

    snapshots.safetensors   tensors "<k>/<parameter>" (float16), metadata {"steps": [...]}

Step 0 needs no snapshot: it is the seed's initialisation (``checkpoints.initial_model``).
The last point of a replay is the checkpoint's own weights.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import torch
from safetensors.torch import load as load_safetensors
from safetensors.torch import save as save_safetensors
from torch import Tensor

from gptviz.model import GPT

SNAPSHOTS = "snapshots.safetensors"
FORMAT = "gptviz-snapshots-1"
DTYPE = torch.float16  # half the bytes of the weights; plenty for pictures of training
MAX_COUNT = 12  # snapshots a run keeps
MAX_BYTES = 48 << 20  # bytes a run's snapshots may take in memory (the app's runs)


class SnapshotError(ValueError):
    """The snapshots file does not fit the model; the message says what is wrong."""


def _weights(model: GPT) -> dict[str, Tensor]:
    """The state dict without E's tied alias W_U, as the checkpoint stores it."""
    return {k: v for k, v in model.state_dict().items()
            if k != "unembed.weight" or not model.config.tie_embeddings}


def snapshot_bytes(model: GPT) -> int:
    """Bytes one snapshot of ``model`` takes."""
    return sum(v.numel() for v in _weights(model).values()) * DTYPE.itemsize


@dataclass
class Snapshots:
    """Snapshots in step order. ``add`` keeps at most ``max_count`` and ``max_bytes``: past
    either, every second snapshot is dropped (the first and the newest stay), so the kept
    ones stay spread over the run; ``thinned`` counts the dropped ones."""

    steps: list[int] = field(default_factory=list)
    states: list[dict[str, Tensor]] = field(default_factory=list)
    max_count: int = MAX_COUNT
    max_bytes: int = MAX_BYTES
    thinned: int = 0

    def add(self, step: int, model: GPT) -> None:
        if self.steps and step <= self.steps[-1]:
            raise ValueError(f"snapshot steps must increase: {step} after {self.steps[-1]}.")
        size = snapshot_bytes(model)
        if size > self.max_bytes:
            self.thinned += 1
            return
        self.steps.append(step)
        self.states.append({k: v.detach().to("cpu", DTYPE, copy=True)
                            for k, v in _weights(model).items()})
        while len(self.steps) > self.max_count or len(self.steps) * size > self.max_bytes:
            keep = [i for i in range(len(self.steps)) if i % 2 == 0 or i == len(self.steps) - 1]
            if len(keep) == len(self.steps):  # two left and still too many bytes
                keep = keep[1:]
            self.thinned += len(self.steps) - len(keep)
            self.steps = [self.steps[i] for i in keep]
            self.states = [self.states[i] for i in keep]

    def __len__(self) -> int:
        return len(self.steps)

    def model_at(self, index: int, like: GPT) -> GPT:
        """A new float32 model (eval mode) holding snapshot ``index``, shaped like ``like``."""
        model = GPT(like.config).eval()
        model.load_state_dict({k: v.float() for k, v in self.states[index].items()},
                              strict=False)  # a tied W_U follows E
        return model

    def to_bytes(self) -> bytes:
        tensors = {f"{i}/{name}": t.contiguous() for i, state in enumerate(self.states)
                   for name, t in state.items()}
        meta = {"format": FORMAT, "steps": json.dumps(self.steps), "thinned": str(self.thinned)}
        return save_safetensors(tensors, metadata=meta)

    @classmethod
    def from_bytes(cls, data: bytes, model: GPT) -> Snapshots:
        """Read and check a snapshots file against ``model``; SnapshotError if it does not fit."""
        try:
            tensors = load_safetensors(data)
            header = json.loads(data[8:8 + int.from_bytes(data[:8], "little")])
            meta = header.get("__metadata__") or {}
            steps = json.loads(meta.get("steps", "null"))
            thinned = int(meta.get("thinned", "0"))
        except Exception as exc:  # the Rust parser raises its own error type
            raise SnapshotError(f"{SNAPSHOTS} is not a valid snapshots file ({exc}).") from None
        if meta.get("format") != FORMAT or not isinstance(steps, list) or not all(
                isinstance(s, int) and not isinstance(s, bool) for s in steps):
            raise SnapshotError(f"{SNAPSHOTS} does not say which steps it holds "
                                f"(format {FORMAT} expected).")
        if len(steps) > MAX_COUNT or steps != sorted(set(steps)):
            raise SnapshotError(f"{SNAPSHOTS} lists {len(steps)} steps; at most {MAX_COUNT}, "
                                "increasing, are allowed.")
        expected = _weights(model)
        states: list[dict[str, Tensor]] = [{} for _ in steps]
        for key, t in tensors.items():
            index, _, name = key.partition("/")
            if not index.isdigit() or int(index) >= len(steps) or name not in expected:
                raise SnapshotError(f"{SNAPSHOTS} holds {key!r}, which this model has no "
                                    "place for.")
            if tuple(t.shape) != tuple(expected[name].shape) or not t.dtype.is_floating_point:
                raise SnapshotError(f"{SNAPSHOTS}: {key} has shape {tuple(t.shape)} and dtype "
                                    f"{t.dtype}; the model needs {tuple(expected[name].shape)}.")
            if not torch.isfinite(t.float()).all():
                raise SnapshotError(f"{SNAPSHOTS}: {key} contains NaN or infinite values.")
            states[int(index)][name] = t
        for i, state in enumerate(states):
            if set(state) != set(expected):
                raise SnapshotError(f"{SNAPSHOTS}: snapshot {i} (step {steps[i]}) lacks "
                                    f"{sorted(set(expected) - set(state))[:3]}.")
        return cls(steps, states, thinned=thinned)


def fitting_count(model: GPT, budget_bytes: int) -> int:
    """How many snapshots of ``model`` fit ``budget_bytes`` (at most MAX_COUNT)."""
    return max(0, min(MAX_COUNT, budget_bytes // max(1, snapshot_bytes(model))))
