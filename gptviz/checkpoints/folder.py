"""Checkpoints: a folder (or a zip of it) with four files, and nothing ever unpickled.

    model.safetensors   weights (safetensors: a JSON header + raw numbers)
    config.json         the GPTConfig
    tokenizer.json      the tokenizer, as Tokenizer.save writes it
    card.json           what produced it: corpus, steps, losses, date
    snapshots.safetensors  (optional) the weights at a few steps of training (snapshots.py)

Every problem (a missing file, bad JSON, a pickle in disguise, a weight of the wrong
shape, a tokenizer that does not fit the model, a model too big for the limits) is a
``CheckpointError`` (a ValueError) whose message names the file and the problem.
"""

from __future__ import annotations

import io
import json
import os
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import torch
from safetensors.torch import load as load_safetensors
from safetensors.torch import save as save_safetensors

import gptviz.tokenizers  # noqa: F401  (registers every tokenizer type)
from gptviz.checkpoints.external import ExternalError, load_external, model_format
from gptviz.checkpoints.snapshots import SNAPSHOTS, SnapshotError, Snapshots
from gptviz.checkpoints.zipread import ZipMembers, ZipReadError, directory_size
from gptviz.model import GPT, GPTConfig, TrainConfig, parameter_counts
from gptviz.tokenizers.base import Tokenizer, TokenizerError, read_json

WEIGHTS, CONFIG, TOKENIZER, CARD = "model.safetensors", "config.json", "tokenizer.json", "card.json"
FILES = (WEIGHTS, CONFIG, TOKENIZER, CARD)
OPTIONAL = (SNAPSHOTS,)
_PICKLE_MAGIC = (b"\x80", b"PK\x03\x04")  # pickle protocol >= 2; torch.save's zip format


class CheckpointError(ValueError):
    """A checkpoint that cannot be loaded; the message names the file and the reason."""


@dataclass(frozen=True)
class Limits:
    """What a checkpoint may hold. The defaults suit trusted folders; uploads pass tighter."""

    params: int = 200_000_000  # parameters; also positions + one sequence's keys and values
    layers: int = 1024  # blocks (each is ~50 kB of Python objects, whatever its width)
    attention: int = 10**12  # numbers in a full context's attention maps, n_layer·n_head·N²
    bytes: int = 500_000_000  # the four files, unpacked
    json_bytes: int = 50_000_000  # each JSON file (parsed, JSON takes up to ~25x its size)


@dataclass
class Checkpoint:
    model: GPT  # in eval mode
    tokenizer: Tokenizer
    card: dict[str, Any] = field(default_factory=dict)
    snapshots: Snapshots | None = None  # weights during training, for the replay

    @property
    def config(self) -> GPTConfig:
        return self.model.config


def checkpoint_files(model: GPT, tokenizer: Tokenizer, card: Mapping[str, Any] | None = None,
                     snapshots: Snapshots | None = None) -> dict[str, bytes]:
    """The four files as bytes, e.g. ``{"config.json": b'{"vocab_size": 65, ...}', ...}``."""
    if tokenizer.vocab_size != model.config.vocab_size:
        raise CheckpointError(f"the tokenizer has {tokenizer.vocab_size} ids but the model's "
                              f"vocab_size is {model.config.vocab_size}.")
    weights = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()
               if k != "unembed.weight" or not model.config.tie_embeddings}  # not E's alias
    texts = {CONFIG: model.config.to_dict(), TOKENIZER: tokenizer.to_dict(), CARD: dict(card or {})}
    extra = {SNAPSHOTS: snapshots.to_bytes()} if snapshots else {}
    return {WEIGHTS: save_safetensors(weights, metadata={"format": "pt"}), **extra,
            **{k: json.dumps(v, ensure_ascii=False, indent=1).encode() for k, v in texts.items()}}


def save_checkpoint(folder: str | Path, model: GPT, tokenizer: Tokenizer,
                    card: Mapping[str, Any] | None = None, snapshots: Snapshots | None = None
                    ) -> Path:
    """Write the four files into ``folder`` (created if needed); returns the folder."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in checkpoint_files(model, tokenizer, card, snapshots).items():
        (folder / name).write_bytes(data)
    return folder


def load_checkpoint(folder: str | Path, device: str | torch.device = "cpu",
                    limits: Limits | None = None) -> Checkpoint:
    """Read a model from disk, its format told by content (``external.model_format``): a
    folder written by ``save_checkpoint`` or its zip (trusted: the default ``Limits``), a
    Hugging Face GPT-2 folder or a nanoGPT ckpt.pt (no limit unless ``limits`` given)."""
    folder = Path(folder)
    try:
        if (kind := model_format(folder)) in ("hf-gpt2", "nanogpt"):
            model, tokenizer, card = load_external(folder, limits.params if limits else None)
            return Checkpoint(model.to(device).eval(), tokenizer, card)
    except ExternalError as exc:
        raise CheckpointError(str(exc)) from None
    if kind == "zip":
        return load_checkpoint_zip(folder.read_bytes(), limits or Limits(), device)
    if not folder.is_dir():
        raise CheckpointError(f"{folder} is not a checkpoint folder "
                              "(it does not exist or is a file).")
    files = {name: (folder / name).read_bytes() for name in FILES + OPTIONAL
             if (folder / name).is_file()}
    return checkpoint_from_files(files, str(folder), device, limits or Limits())


def checkpoint_to_zip(model: GPT, tokenizer: Tokenizer, card: Mapping[str, Any] | None = None,
                      snapshots: Snapshots | None = None) -> bytes:
    """The checkpoint as the bytes of a .zip, for a download button."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, data in checkpoint_files(model, tokenizer, card, snapshots).items():
            zf.writestr(name, data)
    return buffer.getvalue()


def load_checkpoint_zip(data: bytes, limits: Limits = Limits(),
                        device: str | torch.device = "cpu") -> Checkpoint:
    """Load an uploaded .zip (files at its root or in one folder) in memory, untrusted: no
    extraction, named BPE patterns only, and every size checked before it is allocated."""
    if (listing := directory_size(data) or 0) > 65_536:  # zipfile: ~500 B per entry listed
        raise CheckpointError(f"the zip's list of files takes {listing:,} bytes (the limit is "
                              f"65,536); a checkpoint zip holds {len(FILES)} files.")
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError, OSError):
        raise CheckpointError("the upload is not a .zip file: zip a checkpoint folder "
                              f"holding {', '.join(FILES)}.") from None
    found = ZipMembers(zf)
    for info in zf.infolist():
        name = PurePosixPath(info.filename).name
        if name not in FILES + OPTIONAL or info.is_dir() or "__MACOSX" in info.filename:
            continue
        if name in found:
            raise CheckpointError(f"the zip holds two files named {name}; "
                                  "keep one checkpoint per zip.")
        found[name] = info
    if (total := sum(found.size(name) for name in found)) > limits.bytes:
        raise CheckpointError(f"the zip's checkpoint files unpack to {total:,} bytes; "
                              f"the limit is {limits.bytes:,}.")
    return checkpoint_from_files(found, "the uploaded zip", device, limits, trusted=False)


def checkpoint_from_files(files: Mapping[str, bytes], source: str = "checkpoint",
                          device: str | torch.device = "cpu", limits: Limits = Limits(),
                          trusted: bool = True) -> Checkpoint:
    """Build a Checkpoint from the files' bytes, checking each on the way: the config and
    the model's size first, the weights last. ``trusted=False``: named BPE patterns only."""
    if missing := [n for n in (WEIGHTS, CONFIG, TOKENIZER) if n not in files]:
        raise CheckpointError(f"{source} lacks {', '.join(missing)} (a checkpoint holds "
                              f"{', '.join(FILES)}).")
    data = _read_json(files, CONFIG, limits)
    try:
        config = GPTConfig.from_dict(data)
    except (TypeError, ValueError) as exc:
        raise CheckpointError(f"{CONFIG} is not a valid model config: {exc}") from None
    n_params = _check_size(config, limits)
    try:
        tokenizer = Tokenizer.from_json_dict(_read_json(files, TOKENIZER, limits), TOKENIZER,
                                             trusted)
    except TokenizerError as exc:
        raise CheckpointError(str(exc)) from None
    if tokenizer.vocab_size != config.vocab_size:
        raise CheckpointError(f"{TOKENIZER} has {tokenizer.vocab_size} ids but {CONFIG} says "
                              f"vocab_size {config.vocab_size}: they come from different models.")
    card = _read_json(files, CARD, limits) if CARD in files else {}
    if not isinstance(card, dict):
        raise CheckpointError(f"{CARD} must hold a JSON object.")
    data = _member(files, WEIGHTS, 8 * n_params + 1_000_000,  # float64s + a generous header
                   f" for the {n_params:,} parameters of {CONFIG}")
    model = GPT(config)  # at most limits.params numbers, checked above
    model.load_state_dict(_read_weights(data, model), strict=False)
    snapshots = None
    if SNAPSHOTS in files:
        try:
            snapshots = Snapshots.from_bytes(_member(files, SNAPSHOTS, limits.bytes), model)
        except SnapshotError as exc:
            raise CheckpointError(str(exc)) from None
    return Checkpoint(model.to(device).eval(), tokenizer, card, snapshots)


def _check_size(c: GPTConfig, limits: Limits) -> int:
    """The parameter count, once the model is known to fit ``limits`` (nothing allocated)."""
    n = parameter_counts(c)["total"]
    work = c.context_length * c.d_model * (2 * c.n_layer + (c.positional == "sinusoidal"))
    maps = c.n_layer * c.n_head * c.context_length ** 2
    for what, value, most in ((f"{n:,} parameters", n, limits.params),
                              (f"{c.n_layer:,} layers", c.n_layer, limits.layers),
                              (f"a context of {c.context_length:,} tokens, whose positions, "
                               f"keys and values take {work:,} numbers", work, limits.params),
                              (f"attention maps of {maps:,} numbers for a full context "
                               "(n_layer·n_head·context²)", maps, limits.attention)):
        if value > most:
            raise CheckpointError(f"{CONFIG} describes {what}; the limit here is {most:,}.")
    return n


def _read_weights(data: bytes, model: GPT) -> dict[str, torch.Tensor]:
    if data.startswith(_PICKLE_MAGIC):
        raise CheckpointError(f"{WEIGHTS} looks like a pickle / torch.save file; gptviz never "
                              "unpickles files. Save the weights with safetensors instead.")
    try:
        tensors = load_safetensors(data)
    except Exception as exc:  # the Rust parser raises its own error type
        raise CheckpointError(f"{WEIGHTS} is not a valid safetensors file ({exc}).") from None
    expected = {k: v for k, v in model.state_dict().items()  # without E's tied alias W_U
                if k != "unembed.weight" or not model.config.tie_embeddings}
    unknown = sorted(set(tensors) - set(expected))
    absent = sorted(set(expected) - set(tensors))
    if unknown or absent:
        raise CheckpointError(f"{WEIGHTS} does not match {CONFIG}: missing {absent[:5]}, "
                              f"unexpected {unknown[:5]}.")
    for name, t in tensors.items():
        want = tuple(expected[name].shape)
        if tuple(t.shape) != want:
            raise CheckpointError(f"{WEIGHTS}: {name} has shape {tuple(t.shape)} but {CONFIG} "
                                  f"implies {want}.")
        if not t.dtype.is_floating_point:
            raise CheckpointError(f"{WEIGHTS}: {name} has dtype {t.dtype}; weights must be floats.")
        tensors[name] = t = t.float()  # float8 has no isfinite
        if not torch.isfinite(t).all():
            raise CheckpointError(f"{WEIGHTS}: {name} contains NaN or infinite values.")
    return tensors


def _member(files: Mapping[str, bytes], name: str, most: int, why: str = "") -> bytes:
    """``files[name]``, once its (declared) size is known to be at most ``most``."""
    size = files.size(name) if isinstance(files, ZipMembers) else len(files[name])
    if size > most:
        raise CheckpointError(f"{name} is {size:,} bytes; the limit here is {most:,}{why}.")
    try:
        return files[name]
    except ZipReadError as exc:
        raise CheckpointError(str(exc)) from None


def _read_json(files: Mapping[str, bytes], name: str, limits: Limits) -> Any:
    try:
        return read_json(_member(files, name, limits.json_bytes), name)
    except TokenizerError as exc:
        raise CheckpointError(str(exc)) from None


def initial_model(config: GPTConfig, seed: int) -> GPT:
    """The model exactly as ``Trainer`` initialises it for ``seed``, before any step."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return GPT(config).eval()


def training_seed(card: dict) -> int:
    """The seed a checkpoint was trained with (its card), else ``TrainConfig``'s default.

    >>> training_seed({"train_config": {"seed": 7}}), training_seed({})
    (7, 1337)
    """
    return int((card.get("train_config") or {}).get("seed", TrainConfig().seed))


def freeze(model: GPT) -> GPT:
    """Eval mode and no gradients: how a model shared by several sessions must be kept."""
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return model


# GPTVIZ_MODELS_DIR points the app at another folder of checkpoints (development, tests).
MODELS_DIR = Path(os.environ.get("GPTVIZ_MODELS_DIR")
                  or Path(__file__).resolve().parents[2] / "assets" / "models")

# The BPE model: its tokens are word pieces, so attention maps and next-token
# charts read as words, which is what a class can follow (see the README).
DEFAULT_MODEL = "mathematics-bpe"


def bundled_models() -> dict[str, Path]:
    """Name -> checkpoint folder of every model in ``MODELS_DIR`` (``assets/models``)."""
    if not MODELS_DIR.is_dir():
        return {}
    return {p.name: p for p in sorted(MODELS_DIR.iterdir()) if (p / WEIGHTS).is_file()}
