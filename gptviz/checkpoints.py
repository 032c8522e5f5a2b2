"""Checkpoints: a folder (or a zip of it) with four files, and nothing ever unpickled.

    model.safetensors   weights (safetensors: a JSON header + raw numbers)
    config.json         the GPTConfig
    tokenizer.json      the tokenizer, as Tokenizer.save writes it
    card.json           what produced it: corpus, steps, losses, date

Every problem (a missing file, bad JSON, a pickle in disguise, a weight of the
wrong shape, a tokenizer that does not fit the model) is a ``CheckpointError``
(a ValueError) whose message names the file and the problem.
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

from gptviz.model import GPT, GPTConfig, TrainConfig, parameter_counts
from gptviz.tokenizers.base import Tokenizer

WEIGHTS, CONFIG, TOKENIZER, CARD = "model.safetensors", "config.json", "tokenizer.json", "card.json"



FILES = (WEIGHTS, CONFIG, TOKENIZER, CARD)
_PICKLE_MAGIC = (b"\x80", b"PK\x03\x04")  # pickle protocol >= 2; torch.save's zip format


class CheckpointError(ValueError):
    """A checkpoint that cannot be loaded; the message names the file and the reason."""


@dataclass
class Checkpoint:
    model: GPT  # in eval mode
    tokenizer: Tokenizer
    card: dict[str, Any] = field(default_factory=dict)

    @property
    def config(self) -> GPTConfig:
        return self.model.config


def weights_of(model: GPT) -> dict[str, torch.Tensor]:
    """The tensors to save: the state dict without the tied alias of the embedding."""
    state = model.state_dict()
    if model.config.tie_embeddings:
        state.pop("unembed.weight")
    return {k: v.detach().cpu().contiguous() for k, v in state.items()}


def checkpoint_files(model: GPT, tokenizer: Tokenizer, card: Mapping[str, Any] | None = None
                     ) -> dict[str, bytes]:
    """The four files as bytes, e.g. ``{"config.json": b'{"vocab_size": 65, ...}', ...}``."""
    if tokenizer.vocab_size != model.config.vocab_size:
        raise CheckpointError(f"the tokenizer has {tokenizer.vocab_size} ids but the model's "
                              f"vocab_size is {model.config.vocab_size}.")
    return {
        WEIGHTS: save_safetensors(weights_of(model), metadata={"format": "pt"}),
        CONFIG: _json_bytes(model.config.to_dict()),
        TOKENIZER: _json_bytes(tokenizer.to_dict()),
        CARD: _json_bytes(dict(card or {})),
    }


def save_checkpoint(folder: str | Path, model: GPT, tokenizer: Tokenizer,
                    card: Mapping[str, Any] | None = None) -> Path:
    """Write the four files into ``folder`` (created if needed); returns the folder."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in checkpoint_files(model, tokenizer, card).items():
        (folder / name).write_bytes(data)
    return folder


def load_checkpoint(folder: str | Path, device: str | torch.device = "cpu") -> Checkpoint:
    """Read a folder written by ``save_checkpoint``."""
    folder = Path(folder)
    if not folder.is_dir():
        raise CheckpointError(f"{folder} is not a checkpoint folder "
                              "(it does not exist or is a file).")
    files = {name: (folder / name).read_bytes() for name in FILES if (folder / name).is_file()}
    return checkpoint_from_files(files, source=str(folder), device=device)


def checkpoint_to_zip(model: GPT, tokenizer: Tokenizer, card: Mapping[str, Any] | None = None
                      ) -> bytes:
    """The checkpoint as the bytes of a .zip, for a download button."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, data in checkpoint_files(model, tokenizer, card).items():
            zf.writestr(name, data)
    return buffer.getvalue()


def load_checkpoint_zip(data: bytes, max_bytes: int = 500_000_000,
                        device: str | torch.device = "cpu") -> Checkpoint:
    """Load an uploaded .zip (files at its root or in one folder) in memory; no extraction."""
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile:
        raise CheckpointError("the upload is not a .zip file: zip a checkpoint folder "
                              f"holding {', '.join(FILES)}.") from None
    found: dict[str, zipfile.ZipInfo] = {}
    for info in zf.infolist():
        name = PurePosixPath(info.filename).name
        if name not in FILES or info.is_dir() or "__MACOSX" in info.filename:
            continue
        if name in found:
            raise CheckpointError(f"the zip holds two files named {name}; "
                                  "keep one checkpoint per zip.")
        found[name] = info
    total = sum(info.file_size for info in found.values())
    if total > max_bytes:
        raise CheckpointError(f"the zip's checkpoint files unpack to {total:,} bytes; "
                              f"the limit is {max_bytes:,}.")
    files = {}
    for name, info in found.items():
        if info.flag_bits & 0x1:
            raise CheckpointError(f"{name} in the zip is encrypted; upload an unencrypted zip.")
        try:
            with zf.open(info) as f:
                files[name] = f.read()  # bounded: zipfile stops at the declared file_size
        except (zipfile.BadZipFile, OSError, EOFError) as exc:
            raise CheckpointError(f"{name} in the zip is damaged ({exc}).") from None
    return checkpoint_from_files(files, source="the uploaded zip", device=device)


def checkpoint_from_files(files: Mapping[str, bytes], source: str = "checkpoint",
                          device: str | torch.device = "cpu",
                          max_params: int = 200_000_000) -> Checkpoint:
    """Build a Checkpoint from the files' bytes, checking each on the way."""
    missing = [n for n in (WEIGHTS, CONFIG, TOKENIZER) if n not in files]
    if missing:
        raise CheckpointError(f"{source} lacks {', '.join(missing)} (a checkpoint holds "
                              f"{', '.join(FILES)}).")
    try:
        config = GPTConfig.from_dict(_read_json(files, CONFIG))
    except (TypeError, ValueError) as exc:
        raise CheckpointError(f"{CONFIG} is not a valid model config: {exc}") from None
    tokenizer = _read_tokenizer(files)
    if tokenizer.vocab_size != config.vocab_size:
        raise CheckpointError(f"{TOKENIZER} has {tokenizer.vocab_size} ids but {CONFIG} says "
                              f"vocab_size {config.vocab_size}: they come from different models.")
    n_params = parameter_counts(config)["total"]
    if n_params > max_params:
        raise CheckpointError(f"{CONFIG} describes {n_params:,} parameters; the limit here is "
                              f"{max_params:,}.")
    card = _read_json(files, CARD) if CARD in files else {}
    if not isinstance(card, dict):
        raise CheckpointError(f"{CARD} must hold a JSON object.")
    model = GPT(config)
    model.load_state_dict(_read_weights(files[WEIGHTS], model), strict=False)
    return Checkpoint(model.to(device).eval(), tokenizer, card)


def _read_weights(data: bytes, model: GPT) -> dict[str, torch.Tensor]:
    if data.startswith(_PICKLE_MAGIC):
        raise CheckpointError(f"{WEIGHTS} looks like a pickle / torch.save file; gptviz never "
                              "unpickles files. Save the weights with safetensors instead.")
    try:
        tensors = load_safetensors(data)
    except Exception as exc:  # the Rust parser raises its own error type
        raise CheckpointError(f"{WEIGHTS} is not a valid safetensors file ({exc}).") from None
    expected = weights_of(model)
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
        if not torch.isfinite(t).all():
            raise CheckpointError(f"{WEIGHTS}: {name} contains NaN or infinite values.")
    return {k: v.float() for k, v in tensors.items()}


def _read_tokenizer(files: Mapping[str, bytes]) -> Tokenizer:
    import gptviz.tokenizers  # noqa: F401  (registers every tokenizer type)

    try:
        return Tokenizer.from_json_dict(_read_json(files, TOKENIZER), source=TOKENIZER)
    except ValueError as exc:
        raise CheckpointError(str(exc)) from None


def _read_json(files: Mapping[str, bytes], name: str) -> Any:
    try:
        return json.loads(files[name].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CheckpointError(f"{name} is not valid UTF-8 JSON ({exc}).") from None


def _json_bytes(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False, indent=1).encode("utf-8")


def bundled_checkpoints(root: str | Path = "assets/models") -> dict[str, Path]:
    """Checkpoint folders under ``root`` by folder name, e.g. {"shakespeare-char": Path(...)}."""
    root = Path(root)
    if not root.is_dir():
        return {}
    return {p.name: p for p in sorted(root.iterdir()) if (p / WEIGHTS).is_file()}


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
                  or Path(__file__).resolve().parents[1] / "assets" / "models")


# The BPE model: its tokens are word pieces, so attention maps and next-token
# charts read as words, which is what a class can follow (see the README).
DEFAULT_MODEL = "mathematics-bpe"


def bundled_models() -> dict[str, Path]:
    """Name -> checkpoint folder for every model under ``assets/models``."""
    return bundled_checkpoints(MODELS_DIR)
