"""Where the server's own models come from: folders whoever starts it names, and the
Hugging Face cache. Only the server's command line and environment name them; a
visitor never types a path.

    streamlit run app.py -- --models DIR [--models DIR ...]
    GPTVIZ_MODELS=DIR:DIR streamlit run app.py
    the Hugging Face cache ($HF_HUB_CACHE, $HF_HOME/hub or ~/.cache/huggingface/hub),
    read as folders (no network, no hub client); GPTVIZ_HF_CACHE=0 turns it off

Under a named folder, every model folder (ours, a Hugging Face GPT-2 folder, a nanoGPT
ckpt.pt) down to two levels is found; in the cache, the GPT-2-family snapshots.
``find_models`` reads configs only (nothing is loaded) and says of each model how many
parameters it has, how many bytes they take as float32, or why it cannot be used.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from gptviz.checkpoints.external import ExternalError, inspect, model_format
from gptviz.i18n import _
from gptviz.model import GPTConfig, parameter_counts
from gptviz.tokenizers.base import TokenizerError, read_json

ENV_DIRS, ENV_HF = "GPTVIZ_MODELS", "GPTVIZ_HF_CACHE"
HF_SOURCE = "Hugging Face cache"
_MARKERS = ("config.json", "model.safetensors", "ckpt.pt", "pytorch_model.bin")


@dataclass(frozen=True)
class FoundModel:
    """A model on the server's disk, as the picker lists it."""

    name: str  # unique among the found models, e.g. "gpt2" or "openai-community/gpt2"
    path: Path  # the folder, or a ckpt.pt
    source: str  # "--models", "GPTVIZ_MODELS" or "Hugging Face cache"
    params: int = 0
    problem: str = ""  # why it cannot be loaded ("" when it can)

    @property
    def bytes(self) -> int:
        """Its weights in memory, float32 (what it costs the server once loaded)."""
        return 4 * self.params


def named_dirs(argv: Sequence[str], environ: Mapping[str, str]) -> list[tuple[Path, str]]:
    """The folders named by ``--models DIR`` (or ``--models=DIR``) in ``argv`` and by
    ``GPTVIZ_MODELS`` (separated by ":"), each with where it was named.

    >>> named_dirs(["app.py", "--models", "a", "--models=b"], {"GPTVIZ_MODELS": "c:d"})
    [(PosixPath('a'), '--models'), (PosixPath('b'), '--models'), (PosixPath('c'), 'GPTVIZ_MODELS'), (PosixPath('d'), 'GPTVIZ_MODELS')]
    """  # noqa: E501
    dirs = []
    for i, arg in enumerate(argv):
        if arg == "--models" and i + 1 < len(argv):
            dirs.append(argv[i + 1])
        elif arg.startswith("--models="):
            dirs.append(arg.split("=", 1)[1])
    found = [(Path(d), "--models") for part in dirs for d in part.split(os.pathsep) if d]
    env = environ.get(ENV_DIRS, "")
    return found + [(Path(d), ENV_DIRS) for d in env.split(os.pathsep) if d]


def hf_cache(environ: Mapping[str, str]) -> Path | None:
    """The Hugging Face hub cache folder, as huggingface_hub finds it; None when
    ``GPTVIZ_HF_CACHE`` is 0 (a hosted server may turn it off)."""
    if environ.get(ENV_HF, "1").lower() in ("0", "off", "no", "false"):
        return None
    if environ.get("HF_HUB_CACHE"):
        return Path(environ["HF_HUB_CACHE"])
    home = environ.get("HF_HOME") or Path(environ.get("XDG_CACHE_HOME") or
                                           Path.home() / ".cache") / "huggingface"
    return Path(home) / "hub"


def find_models(dirs: Sequence[tuple[Path, str]], cache: Path | None,
                taken: Sequence[str] = ()) -> list[FoundModel]:
    """Every model under ``dirs`` and the GPT-2-family snapshots in ``cache``, named
    uniquely (also apart from ``taken``, e.g. the bundled models' names)."""
    seen, out, names = set(), [], set(taken)
    candidates = [(p, src) for d, src in dirs for p in _model_paths(d, src)]
    candidates += [(p, HF_SOURCE) for p in _snapshots(cache)] if cache else []
    for path, source in candidates:
        key = path.resolve() if path.exists() else path
        if key in seen:
            continue
        seen.add(key)
        found = found_model(path, source)
        if source == HF_SOURCE and found.problem:
            continue  # another architecture in the cache: not ours to list
        name, k = found.name, 2
        while name in names:
            name, k = f"{found.name} ({k})", k + 1
        names.add(name)
        out.append(FoundModel(name, path, source, found.params, found.problem))
    return out


def found_model(path: Path, source: str) -> FoundModel:
    """One model's entry: its parameters from its config, or the reason it is refused."""
    name = _display_name(path, source)
    try:
        if not path.exists():
            raise ExternalError(_("{path} does not exist (named by {source}).").format(
                                    path=path, source=source))
        if model_format(path) in ("hf-gpt2", "nanogpt"):
            return FoundModel(name, path, source, inspect(path).params)
        data = read_json((path / "config.json").read_bytes(), "config.json", 1_000_000)
        return FoundModel(name, path, source, parameter_counts(GPTConfig.from_dict(data))["total"])
    except (ExternalError, TokenizerError, OSError, ValueError, TypeError) as exc:
        return FoundModel(name, path, source, 0, f"{name}: {exc}")


def _display_name(path: Path, source: str) -> str:
    if source == HF_SOURCE:  # hub/models--openai-community--gpt2/snapshots/<hash>
        return path.parent.parent.name.removeprefix("models--").replace("--", "/")
    return path.parent.name if path.is_file() else path.name


def _is_model(folder: Path) -> bool:
    return any((folder / m).is_file() for m in _MARKERS)


def _model_paths(folder: Path, source: str, depth: int = 2) -> list[Path]:
    """``folder`` itself if it holds a model, else the model folders (and .pt files)
    inside it, ``depth`` levels down; a missing folder is returned to be reported."""
    if folder.is_file() or _is_model(folder) or not folder.exists():
        return [folder]
    if depth == 0 or not folder.is_dir():
        return []
    try:
        children = sorted(p for p in folder.iterdir() if not p.name.startswith("."))
    except OSError:
        return []
    found = [p for p in children if p.is_file() and p.suffix == ".pt"]
    for child in (p for p in children if p.is_dir()):
        found += _model_paths(child, source, depth - 1)
    return found


def _snapshots(cache: Path) -> list[Path]:
    """One snapshot per cached model repository: the one refs/main names, else the newest."""
    out = []
    try:
        repos = sorted(cache.glob("models--*"))
    except OSError:
        return out
    for repo in repos:
        main = repo / "refs" / "main"
        snaps = repo / "snapshots"
        try:
            pick = snaps / main.read_text().strip() if main.is_file() else None
            if pick is None or not pick.is_dir():
                pick = max(snaps.iterdir(), key=lambda p: p.stat().st_mtime, default=None)
        except OSError:
            continue
        if pick is not None and (pick / "config.json").is_file():
            out.append(pick)
    return out
