"""Checkpoints: a folder (or a zip of it) with four files, and nothing ever unpickled.

    model.safetensors   weights (safetensors: a JSON header + raw numbers)
    config.json         the GPTConfig
    tokenizer.json      the tokenizer, as Tokenizer.save writes it
    card.json           what produced it: corpus, steps, losses, date
    snapshots.safetensors  (optional) the weights at a few steps of training (snapshots.py)

Every problem (a missing file, bad JSON, a pickle in disguise, a weight of the wrong
shape, a tokenizer that does not fit the model, a model too big for the limits, a card
field a page cannot use, a file that cannot be read) is a ``CheckpointError`` (a
ValueError) whose message names the file and the problem: the one error a page catches.
An upload's work is bounded by its ``Limits`` before anything is allocated
(``gptviz.work`` counts it).
"""

from __future__ import annotations

import io
import json
import os
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import save as save_safetensors

import gptviz.tokenizers  # noqa: F401  (registers every tokenizer type)
from gptviz.checkpoints.card import CARD, check_card
from gptviz.checkpoints.errors import CheckpointError, brief
from gptviz.checkpoints.external import ExternalError, load_external, model_format
from gptviz.checkpoints.gpt2_weights import NoInit
from gptviz.checkpoints.snapshots import SNAPSHOTS, Snapshots, stored_shapes
from gptviz.checkpoints.tensors import FLOATS, finite, header_limit, match, read_header, view
from gptviz.checkpoints.zipread import ZipMembers, zip_members
from gptviz.i18n import _, number
from gptviz.model import GPT, GPTConfig, TrainConfig, parameter_counts
from gptviz.tokenizers.base import Tokenizer, TokenizerError, read_json

WEIGHTS, CONFIG, TOKENIZER = "model.safetensors", "config.json", "tokenizer.json"
FILES = (WEIGHTS, CONFIG, TOKENIZER, CARD)
OPTIONAL = (SNAPSHOTS,)
__all__ = ["CheckpointError", "Checkpoint", "Limits", "load_checkpoint", "load_checkpoint_zip"]


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
        raise CheckpointError(_("the tokenizer has {vocab_size} ids but the "
                                "model's vocab_size is {vocab_size1}.").format(
                                  vocab_size=tokenizer.vocab_size,
                                  vocab_size1=model.config.vocab_size))
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
        if kind == "zip":
            return load_checkpoint_zip(folder.read_bytes(), limits or Limits(), device)
        if not folder.is_dir():
            raise CheckpointError(_("{folder} is not a checkpoint folder (it does "
                                    "not exist or is a file).").format(folder=folder))
        files = {name: _read_file(folder / name) for name in FILES + OPTIONAL
                 if (folder / name).is_file()}
    except (ExternalError, TokenizerError) as exc:  # GPT-2's rank file may be missing
        raise CheckpointError(str(exc)) from None
    except OSError as exc:  # a file gone, unreadable, or a folder it may not list
        raise CheckpointError(_("{folder} cannot be read ({strerror}).").format(
                                  folder=folder, strerror=exc.strerror or exc)) from None
    return checkpoint_from_files(files, str(folder), device, limits or Limits())


def _read_file(path: Path) -> bytearray:
    """The file's bytes in a bytearray (the weights are viewed in it without a copy)."""
    with path.open("rb") as f:
        out = bytearray(os.fstat(f.fileno()).st_size)
        if f.readinto(out) != len(out):
            raise OSError(f"{path.name} changed while it was read")
        return out


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
    extraction, stored or deflated members only, named BPE patterns only, and every size
    checked before it is allocated. Raises CheckpointError only."""
    found = zip_members(data, FILES + OPTIONAL, ", ".join(FILES))
    if (total := sum(found.size(name) for name in found)) > limits.bytes:
        raise CheckpointError(_("the zip's checkpoint files unpack to {total} "
                                "bytes; the limit is {bytes}.").format(
                                  total=number(total, 0, grouping=True),
                                  bytes=number(limits.bytes, 0, grouping=True)))
    return checkpoint_from_files(found, "the uploaded zip", device, limits, trusted=False)


def checkpoint_from_files(files: Mapping[str, bytes], source: str = "checkpoint",
                          device: str | torch.device = "cpu", limits: Limits = Limits(),
                          trusted: bool = True) -> Checkpoint:
    """Build a Checkpoint from the files' bytes, checking each on the way: the config and
    the model's size first, the weights last. ``trusted=False``: named BPE patterns only."""
    if missing := [n for n in (WEIGHTS, CONFIG, TOKENIZER) if n not in files]:
        raise CheckpointError(_("{source} lacks {missing} (a checkpoint holds {files}).").format(
                                  source=source, missing=', '.join(missing),
                                  files=', '.join(FILES)))
    data = _read_json(files, CONFIG, limits)
    try:
        config = GPTConfig.from_dict(data)
    except (TypeError, ValueError) as exc:
        raise CheckpointError(_("{config} is not a valid model config: {exc}").format(
                                  config=CONFIG, exc=brief(exc))) from None
    n_params = _check_size(config, limits)
    try:
        tokenizer = Tokenizer.from_json_dict(_read_json(files, TOKENIZER, limits), TOKENIZER,
                                             trusted)
    except TokenizerError as exc:
        raise CheckpointError(brief(exc)) from None
    if tokenizer.vocab_size != config.vocab_size:
        raise CheckpointError(_("{tokenizer} has {vocab_size} ids but {config} "
                                "says vocab_size {vocab_size1}: they come from "
                                "different models.").format(
                                  tokenizer=TOKENIZER, vocab_size=tokenizer.vocab_size,
                                  config=CONFIG, vocab_size1=config.vocab_size))
    card = check_card(_read_json(files, CARD, limits) if CARD in files else {})
    shapes = stored_shapes(config)  # the names and shapes the weights must have
    most = 8 + header_limit(len(shapes)) + n_params * max(t.itemsize for t in FLOATS.values())
    data = _member(files, WEIGHTS, most, f" for the {n_params:,} parameters of {CONFIG}")
    tensors = _read_weights(data, shapes)  # views of the checked entries, nothing copied
    with NoInit():  # every tensor it stores is overwritten below: no random fill
        model = GPT(config)  # at most limits.params numbers, checked above
    with torch.no_grad():
        state = model.state_dict()  # the parameters' own memory (a tied W_U follows E)
        for name, t in tensors.items():
            state[name].copy_(t)
    del tensors, data
    snapshots = None
    if SNAPSHOTS in files:
        snapshots = Snapshots.from_bytes(_member(files, SNAPSHOTS, limits.bytes), model)
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
            raise CheckpointError(_("{config} describes {what}; the limit here is "
                                    "{most}.").format(
                                        config=CONFIG, what=what,
                                        most=number(most, 0, grouping=True)))
    return n


def _read_weights(data: bytes, shapes: Mapping[str, tuple[int, ...]]) -> dict[str, torch.Tensor]:
    """The weights' tensors (views into ``data``), once the header names exactly ``shapes``
    in float dtypes and every number is finite."""
    entries, _meta = read_header(data, WEIGHTS, header_limit(len(shapes)))
    match(entries, shapes, WEIGHTS, CONFIG)
    tensors = {name: view(data, e) for name, e in entries.items()}
    for name, t in tensors.items():
        if not finite(t):
            raise CheckpointError(_("{weights}: {name} contains NaN or infinite "
                                    "values.").format(weights=WEIGHTS, name=name))
    return tensors


def _member(files: Mapping[str, bytes], name: str, most: int, why: str = "") -> bytes:
    """``files[name]``, once its (declared) size is known to be at most ``most``."""
    size = files.size(name) if isinstance(files, ZipMembers) else len(files[name])
    if size > most:
        raise CheckpointError(_("{name} is {size} bytes; the limit here is "
                                "{most}{why}.").format(
                                    name=name, size=number(size, 0, grouping=True),
                                    most=number(most, 0, grouping=True), why=why))
    return files[name]


def _read_json(files: Mapping[str, bytes], name: str, limits: Limits) -> Any:
    try:
        return read_json(_member(files, name, limits.json_bytes), name)
    except TokenizerError as exc:
        raise CheckpointError(brief(exc)) from None


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
