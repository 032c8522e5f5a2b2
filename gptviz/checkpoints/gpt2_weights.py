"""GPT-2's weight names (Hugging Face's and nanoGPT's) onto our GPT's parameters.

The two share GPT-2's names (``h.0.attn.c_attn.weight``, ``wte.weight``, ...); Hugging
Face stores the block's matrices as ``Conv1D`` (in, out), the transpose of
``nn.Linear``'s (out, in), nanoGPT as ``nn.Linear``. ``fill_gpt`` builds our GPT from
either, checking every name and shape before it reads a single weight.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from gptviz.i18n import _
from gptviz.model import GPT, GPTConfig


class ExternalError(ValueError):
    """A model from elsewhere that cannot be used; the message says why and what to do."""


_BLOCK = {"ln1.lam": "ln_1.weight", "ln1.b": "ln_1.bias", "attn.W_QKV.weight":
          "attn.c_attn.weight", "attn.W_QKV.bias": "attn.c_attn.bias", "attn.W_O.weight":
          "attn.c_proj.weight", "attn.W_O.bias": "attn.c_proj.bias", "ln2.lam": "ln_2.weight",
          "ln2.b": "ln_2.bias", "mlp.W_1.weight": "mlp.c_fc.weight", "mlp.W_1.bias":
          "mlp.c_fc.bias", "mlp.W_2.weight": "mlp.c_proj.weight", "mlp.W_2.bias":
          "mlp.c_proj.bias"}
_TOP = {"embed.weight": "wte.weight", "pos.P.weight": "wpe.weight", "ln_final.lam":
        "ln_f.weight", "ln_final.b": "ln_f.bias", "unembed.weight": "lm_head.weight"}
_BUFFERS = (".attn.bias", ".attn.masked_bias")  # causal masks older versions saved
_HF_ACT = {"gelu_tanh": "gelu_new", "gelu": "gelu", "relu": "relu"}  # ours -> Hugging Face's


def gpt2_names(n_layer: int, bias: bool, tied: bool) -> dict[str, str]:
    """Our parameter names -> GPT-2's (Hugging Face and nanoGPT share them).

    >>> gpt2_names(1, bias=True, tied=True)["blocks.0.attn.W_QKV.weight"]
    'h.0.attn.c_attn.weight'
    """
    names = {f"blocks.{i}.{ours}": f"h.{i}.{theirs}" for i in range(n_layer)
             for ours, theirs in _BLOCK.items()}
    names |= _TOP
    return {k: v for k, v in names.items() if (bias or not k.endswith((".b", ".bias")))
            and not (tied and k == "unembed.weight")}


def short_name(name: str) -> str:
    """A weight's name without nanoGPT's prefixes (``_orig_mod.`` of a compiled run,
    ``transformer.``); Hugging Face's files have ``transformer.`` or nothing.

    >>> short_name("_orig_mod.transformer.h.0.ln_1.weight")
    'h.0.ln_1.weight'
    """
    while name.startswith(("_orig_mod.", "transformer.")):
        name = name.split(".", 1)[1]
    return name


class NoInit(TorchFunctionMode):
    """Skips ``nn.init``'s random fills inside the ``with`` (this thread only): the loader
    overwrites every parameter, and GPT-2 small's fills take seconds."""

    def __torch_function__(self, func: Callable, types: Any, args: tuple = (),
                           kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        if getattr(func, "__name__", "") in ("normal_", "uniform_", "kaiming_uniform_"):
            return args[0] if args else kwargs["tensor"]
        return func(*args, **kwargs)


def fill_gpt(c: GPTConfig, shapes: Mapping[str, tuple], get: Callable[[str], torch.Tensor],
             transpose: bool, file: str) -> GPT:
    """A GPT of config ``c`` whose every parameter is the file's (``shapes``: the file's
    names and shapes; ``get``: a name's tensor); ``transpose`` turns Conv1D's (in, out)
    matrices into nn.Linear's (out, in). A vocabulary longer than ``c``'s is cut."""
    names = gpt2_names(c.n_layer, c.bias, c.tie_embeddings)
    short = {short_name(k): k for k in shapes}
    ignored = {"lm_head.weight"} if c.tie_embeddings else set()
    unknown = sorted(k for k in set(short) - set(names.values()) - ignored
                     if not k.endswith(_BUFFERS))
    absent = sorted(theirs for theirs in names.values() if theirs not in short)
    if unknown or absent:
        raise ExternalError(_("{file} does not match its config: missing "
                              "{absent}, unexpected {unknown}.").format(
                                file=file, absent=absent[:5], unknown=unknown[:5]))
    with NoInit():
        model = GPT(c)  # uninitialised memory (RSS grows as it is filled)
    params = dict(model.named_parameters())
    plan = []
    for ours, theirs in names.items():
        shape = shapes[short[theirs]]
        flip = transpose and len(shape) == 2 and theirs.startswith("h.")
        shape = shape[::-1] if flip else shape
        want = tuple(params[ours].shape)
        cut = ours in ("embed.weight", "unembed.weight") and len(shape) == 2 \
            and shape[0] >= want[0] and shape[1:] == want[1:]  # a padded vocabulary
        if shape != want and not cut:
            raise ExternalError(_("{file}: {theirs} has shape {shape} but the "
                                  "config implies {want}.").format(
                                    file=file, theirs=theirs, shape=shape, want=want))
        plan.append((params[ours], short[theirs], flip, want[0]))
    with torch.no_grad():
        for param, key, flip, rows in plan:
            t = get(key)
            if not t.dtype.is_floating_point:
                raise ExternalError(_("{file}: {key} has dtype {dtype}; weights "
                                      "are floats.").format(file=file, key=key, dtype=t.dtype))
            t = (t.t() if flip else t)[:rows]
            if not torch.isfinite(t).all():
                raise ExternalError(_("{file}: {key} contains NaN or infinite "
                                      "values.").format(file=file, key=key))
            param.copy_(t)
    return model


def save_hf_gpt2(folder: str | Path, model: GPT) -> Path:
    """Write ``model`` as a Hugging Face GPT-2 folder (config.json + model.safetensors,
    Conv1D layout): the inverse of ``fill_gpt``, for exports, tests and benchmarks."""
    from safetensors.torch import save_file

    c = model.config
    if c.positional != "learned" or not c.bias or c.activation not in _HF_ACT:
        raise ExternalError(_("only a model of GPT-2's shape (learned positions, "
                              "biases, GELU or ReLU) has a Hugging Face GPT-2 form."))
    params = dict(model.named_parameters())
    tensors = {}
    for ours, theirs in gpt2_names(c.n_layer, c.bias, c.tie_embeddings).items():
        t = params[ours].detach()
        flip = theirs.startswith("h.") and t.dim() == 2  # nn.Linear (out, in) -> Conv1D
        key = theirs if theirs == "lm_head.weight" else f"transformer.{theirs}"
        tensors[key] = (t.t() if flip else t).contiguous()
    config = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"],
              "vocab_size": c.vocab_size, "n_positions": c.context_length, "n_embd": c.d_model,
              "n_layer": c.n_layer, "n_head": c.n_head, "n_inner": c.d_ff,
              "activation_function": _HF_ACT[c.activation], "layer_norm_epsilon": c.ln_eps,
              "tie_word_embeddings": c.tie_embeddings}
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config, indent=1))
    save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})
    return folder
