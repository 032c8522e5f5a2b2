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
from safetensors.torch import save as save_safetensors
from torch import Tensor

from gptviz.checkpoints.errors import CheckpointError
from gptviz.checkpoints.gpt2_weights import NoInit
from gptviz.checkpoints.tensors import finite, header_limit, read_header, view
from gptviz.i18n import _
from gptviz.model import GPT, GPTConfig
from gptviz.tokenizers.base import read_json

SNAPSHOTS = "snapshots.safetensors"
FORMAT = "gptviz-snapshots-1"
DTYPE = torch.float16  # half the bytes of the weights; plenty for pictures of training
MAX_COUNT = 12  # snapshots a run keeps
MAX_BYTES = 48 << 20  # bytes a run's snapshots may take in memory (the app's runs)


class SnapshotError(CheckpointError):
    """The snapshots file does not fit the model; the message says what is wrong."""


def _weights(model: GPT) -> dict[str, Tensor]:
    """The state dict without E's tied alias W_U, as the checkpoint stores it."""
    return {k: v for k, v in model.state_dict().items()
            if k != "unembed.weight" or not model.config.tie_embeddings}


def stored_shapes(config: GPTConfig) -> dict[str, tuple[int, ...]]:
    """Name -> shape of every tensor a checkpoint of ``config`` stores (``_weights``), read
    from a model left uninitialised (its memory untouched, ~10 ms; on the meta device,
    torch's first arange would import its compiler, ~3 s).

    >>> stored_shapes(model.config)["embed.weight"]
    (10, 16)
    """
    with NoInit():
        return {k: tuple(v.shape) for k, v in _weights(GPT(config)).items()}


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
        """Read and check a snapshots file against ``model``; SnapshotError if it does not fit.
        The header is checked whole (names, shapes, dtypes) before any tensor is built."""
        expected = {k: tuple(v.shape) for k, v in _weights(model).items()}
        try:
            entries, meta = read_header(data, SNAPSHOTS, header_limit(MAX_COUNT * len(expected)))
        except CheckpointError as exc:
            raise SnapshotError(_("{snapshots} is not a valid snapshots file ({exc})").format(
                                    snapshots=SNAPSHOTS, exc=exc)) from None
        try:  # a list of steps, not nested: read_json bounds its depth
            steps = read_json(meta.get("steps", "null").encode(), SNAPSHOTS, max_depth=1)
            thinned = int(meta.get("thinned", "0"))
        except ValueError:  # not JSON, or not a number
            steps = thinned = None
        if meta.get("format") != FORMAT or not isinstance(steps, list) or not all(
                isinstance(s, int) and not isinstance(s, bool) for s in steps) or thinned is None:
            raise SnapshotError(_("{snapshots} does not say which steps it holds "
                                  "(format {format} expected).").format(
                                    snapshots=SNAPSHOTS, format=FORMAT))
        if len(steps) > MAX_COUNT or steps != sorted(set(steps)):
            raise SnapshotError(_("{snapshots} lists {n_steps} steps; at most "
                                  "{max_count}, increasing, are allowed.").format(
                                    snapshots=SNAPSHOTS, n_steps=len(steps), max_count=MAX_COUNT))
        for key, e in entries.items():
            index, _slash, name = key.partition("/")
            if _index(index) >= len(steps) or name not in expected:
                raise SnapshotError(_("{snapshots} holds {key}, which this model "
                                      "has no place for.").format(
                                        snapshots=SNAPSHOTS, key=repr(key)))
            if e.shape != expected[name]:
                raise SnapshotError(_("{snapshots}: {key} has shape {shape} and "
                                      "dtype {dtype}; the model needs {expected}.").format(
                                        snapshots=SNAPSHOTS, key=key, shape=e.shape,
                                        dtype=e.dtype, expected=expected[name]))
        for i, step in enumerate(steps):
            if lacks := sorted(n for n in expected if f"{i}/{n}" not in entries):
                raise SnapshotError(_("{snapshots}: snapshot {i} (step {step}) "
                                      "lacks {lacks}.").format(
                                        snapshots=SNAPSHOTS, i=i, step=step, lacks=lacks[:3]))
        states: list[dict[str, Tensor]] = [{} for _step in steps]
        for key, e in entries.items():
            t = view(data, e)
            if not finite(t):
                raise SnapshotError(_("{snapshots}: {key} contains NaN or "
                                      "infinite values.").format(snapshots=SNAPSHOTS, key=key))
            index, _slash, name = key.partition("/")
            states[int(index)][name] = t.to(DTYPE)  # a float16 file's views are kept as they are
        return cls(steps, states, thinned=max(0, thinned))


def _index(text: str) -> int:
    """The snapshot a key's prefix names ("3" -> 3), or a number past any: -1 or "03" name none.

    >>> _index("3"), _index("03"), _index("٣") > MAX_COUNT
    (3, 1000000, True)
    """
    canonical = text.isascii() and text.isdigit() and len(text) < 5 and str(int(text)) == text
    return int(text) if canonical else 1_000_000


def fitting_count(model: GPT, budget_bytes: int) -> int:
    """How many snapshots of ``model`` fit ``budget_bytes`` (at most MAX_COUNT)."""
    return max(0, min(MAX_COUNT, budget_bytes // max(1, snapshot_bytes(model))))
