"""nanoGPT's checkpoints: ``ckpt.pt`` (torch.save of a dict) and a character model's
``meta.pkl`` (its vocabulary), read without running anything from either file.

``ckpt.pt`` goes through ``torch.load(weights_only=True)`` only: tensors, dicts, lists,
numbers and strings, and any other Python object is refused. ``meta.pkl`` goes through an
unpickler that refuses every global, so only plain dicts, lists, strings and numbers
come out of it. nanoGPT's own ``sample.py`` reads both with plain pickle; we never do.

What ``ckpt.pt`` holds (nanoGPT's train.py): ``model`` (the state dict, with the
``_orig_mod.`` prefix of a ``torch.compile``d run), ``model_args`` (n_layer, n_head,
n_embd, block_size, bias, vocab_size, dropout), ``config`` (the run's settings, among
them ``dataset``), the optimizer's state and a few counters.
"""

from __future__ import annotations

import io
import pickle
import re
import zipfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import torch

from gptviz.checkpoints.gpt2_weights import ExternalError
from gptviz.i18n import _, number
from gptviz.model import GPTConfig
from gptviz.tokenizers.base import AllowedSpecial, TokenInfo, TokenizerError
from gptviz.tokenizers.char import CharTokenizer

META_BYTES = 10_000_000  # a meta.pkl larger than this is not a character vocabulary
_ARGS = ("n_layer", "n_head", "n_embd", "block_size", "vocab_size")


class NanoCharTokenizer(CharTokenizer):
    """A nanoGPT character vocabulary: ids 0 .. n-1 in meta.pkl's order, no specials.

    >>> tok = NanoCharTokenizer(["\\n", " ", "a", "b"]); tok.encode("ab a"), tok.vocab_size
    ([2, 3, 1, 2], 4)
    """

    kind = "nanogpt-char"
    trainable = False
    lossless = True

    def __init__(self, symbols: Iterable[str] = (), specials: Iterable[str] = ()) -> None:
        self.specials = ()
        self.symbols = list(symbols)  # in the file's order: it fixes the ids
        if len(set(self.symbols)) != len(self.symbols):
            raise TokenizerError(_("a character vocabulary lists a character twice."))
        self._rebuild()

    def train(self, text: str, vocab_size: int | None = None) -> None:
        raise TokenizerError(_("this vocabulary comes with a nanoGPT model; it is not retrained."))

    def tokens(self, text: str, *, bos: bool = False, eos: bool = False,
               allowed_special: AllowedSpecial = "none") -> list[TokenInfo]:
        if bos or eos:
            raise TokenizerError(_("this nanoGPT model has no BOS or EOS token."))
        if unknown := sorted(set(text) - set(self.stoi)):
            shown = ", ".join(repr(c) for c in unknown[:8])
            raise TokenizerError(
                _("this model knows {n_symbols} characters and the text has "
                  "others ({shown}{value0}): remove or replace them.").format(
                    n_symbols=len(self.symbols), shown=shown,
                    value0=', …' if len(unknown) > 8 else ''))
        return super().tokens(text)

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.kind, "symbols": self.symbols}


class _NoGlobals(pickle.Unpickler):
    """Plain data only: every class, function or module a pickle names is refused."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"it names the Python object {module}.{name}")


def read_meta(path: Path) -> dict[str, Any]:
    """meta.pkl as a dict of plain values, or ExternalError."""
    if path.stat().st_size > META_BYTES:
        raise ExternalError(_("{name} is {st_size} bytes; a character "
                              "vocabulary takes far less (the limit is {meta_bytes}).").format(
                                name=path.name,
                                st_size=number(path.stat().st_size, 0, grouping=True),
                                meta_bytes=number(META_BYTES, 0, grouping=True)))
    try:
        data = _NoGlobals(io.BytesIO(path.read_bytes())).load()
    except Exception as exc:  # every failure of a crafted pickle, with its reason
        raise ExternalError(_("{name} was refused: {exc}. gptviz reads only plain "
                              "data from a pickle (dicts, lists, strings, "
                              "numbers), never objects, so nothing in it ran.").format(
                                name=path.name, exc=exc)) from None
    if not isinstance(data, dict):
        raise ExternalError(_("{name} holds a {name1}, not nanoGPT's dict of "
                              "vocab_size, itos and stoi.").format(
                                name=path.name, name1=type(data).__name__))
    return data


def read_ckpt(path: Path) -> dict[str, Any]:
    """The dict in ckpt.pt, through torch's weights-only loader (memory-mapped when the
    file is a zip, so the optimizer's state is never read), or ExternalError."""
    try:
        mmap = zipfile.is_zipfile(path)  # torch.save's format since 1.6; mmap needs it
        data = torch.load(path, map_location="cpu", weights_only=True, mmap=mmap)
    except pickle.UnpicklingError as exc:
        found = re.search(r"GLOBAL ([\w.]+)", str(exc))
        what = f" ({found.group(1)})" if found else ""
        raise ExternalError(_("{name} holds a Python object other than tensors "
                              "and plain values{what}. gptviz loads weights only, "
                              "so it refused the file and nothing in it ran; save "
                              "the state dict and model_args alone.").format(
                                name=path.name, what=what)) from None
    except Exception as exc:  # a truncated zip, a file that is not torch.save's, ...
        raise ExternalError(_("{name} is not a readable torch.save file ({exc}).").format(
                                name=path.name, exc=exc)) from None
    if not isinstance(data, dict) or not isinstance(data.get("model"), dict) \
            or not isinstance(data.get("model_args"), dict):
        raise ExternalError(_("{name} is not a nanoGPT checkpoint: nanoGPT's "
                              "train.py saves a dict with 'model' (the weights) "
                              "and 'model_args'.").format(name=path.name))
    return data


def nanogpt_config(ckpt: dict[str, Any], where: str) -> GPTConfig:
    """Our config for nanoGPT's ``model_args``.

    >>> args = dict(n_layer=2, n_head=2, n_embd=8, block_size=16, bias=False, vocab_size=65)
    >>> c = nanogpt_config({"model_args": args}, "ckpt.pt"); c.bias, c.activation, c.d_ff
    (False, 'gelu', 32)
    """
    args = ckpt["model_args"]
    bad = [k for k in _ARGS if isinstance(args.get(k), bool) or not isinstance(args.get(k), int)]
    if bad or not isinstance(args.get("bias", True), bool):
        raise ExternalError(_("{where}: model_args lacks or garbles {bad} (it "
                              "needs integers {args} and a boolean bias).").format(
                                where=where, bad=', '.join(bad) or 'bias', args=', '.join(_ARGS)))
    try:
        return GPTConfig(vocab_size=args["vocab_size"], context_length=args["block_size"],
                         d_model=args["n_embd"], n_layer=args["n_layer"], n_head=args["n_head"],
                         activation="gelu",  # nanoGPT's MLP: nn.GELU(), the exact form
                         positional="learned", dropout=0.0, tie_embeddings=True,
                         bias=args.get("bias", True))
    except ValueError as exc:
        raise ExternalError(_("{where}: model_args describe no valid model: {exc}").format(
                                where=where, exc=exc)) from None


def char_vocabulary(ckpt: dict[str, Any], path: Path) -> tuple[list[str], Path] | None:
    """The characters of a character-level run and the meta.pkl that lists them: beside
    ckpt.pt, or where nanoGPT's sample.py looks (data/<dataset>/meta.pkl next to the out
    folder); None when there is no meta.pkl."""
    config = ckpt.get("config")
    dataset = str(config.get("dataset", "")) if isinstance(config, dict) else ""
    places = [path.parent / "meta.pkl"]
    if re.fullmatch(r"[\w.-]+", dataset) and ".." not in dataset:
        places.append(path.parent.parent / "data" / dataset / "meta.pkl")
    meta_path = next((p for p in places if p.is_file()), None)
    if meta_path is None:
        return None
    meta = read_meta(meta_path)
    itos = meta.get("itos")
    n = len(itos) if isinstance(itos, dict) else 0
    chars = [itos.get(i) for i in range(n)] if n else []
    if not chars or not all(isinstance(c, str) and len(c) == 1 for c in chars):
        raise ExternalError(_("{name} has no character vocabulary (itos: id -> "
                              "one character, ids from 0); gptviz reads nanoGPT's "
                              "character models and models with GPT-2's tokenizer.").format(
                                name=meta_path.name))
    return chars, meta_path
