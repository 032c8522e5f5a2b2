"""Models made elsewhere, read from the server's disk with no network, as our GPT.

    a Hugging Face GPT-2-family folder   config.json + model.safetensors (gpt2, distilgpt2,
                                         gpt2-medium, ...), GPT-2's tokenizer
    a nanoGPT checkpoint                 ckpt.pt (+ meta.pkl for a character model)

``model_format(path)`` tells the formats apart by content (``load_checkpoint`` asks it
first); ``inspect(path)`` reads a model's config only, which is what the model picker
lists (parameters, bytes); ``load_external(path)`` builds the model.

The weights map name by name (``gpt2_weights``): Hugging Face's ``Conv1D`` matrices are
transposed to ``nn.Linear``'s layout, nanoGPT's are ``nn.Linear`` already. ``c_attn``'s
3d outputs are [W_Q | W_K | W_V], heads in order inside each: our ``W_QKV``'s rows.

A ``pytorch_model.bin`` is a pickle, which can run any code when it is opened: it is
refused, with the one-line conversion to safetensors.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import torch

from gptviz.checkpoints.gpt2_weights import ExternalError, fill_gpt, short_name
from gptviz.checkpoints.nanogpt import NanoCharTokenizer, char_vocabulary, nanogpt_config, read_ckpt
from gptviz.i18n import _, number
from gptviz.model import GPT, GPTConfig, parameter_counts
from gptviz.tokenizers.base import Tokenizer, TokenizerError, read_json
from gptviz.tokenizers.openai import TiktokenTokenizer

GPT2_VOCAB = 50257  # tokens of GPT-2's encoding; nanoGPT pads its vocabulary to 50304
HF_WEIGHTS, HF_CONFIG, PICKLED = "model.safetensors", "config.json", "pytorch_model.bin"
CONVERT = ("python -c \"import torch; from safetensors.torch import save_file; "
           "save_file({k: v.clone() for k, v in torch.load('pytorch_model.bin', "
           "weights_only=True).items()}, 'model.safetensors', metadata={'format': 'pt'})\"")
HF_ACTIVATIONS = {"gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh",
                  "gelu_fast": "gelu_tanh", "gelu": "gelu", "relu": "relu"}
ARCHITECTURES = {"llama": "LLaMA", "bert": "BERT", "gpt_neox": "GPT-NeoX", "gptj": "GPT-J",
                 "mistral": "Mistral", "qwen2": "Qwen2", "opt": "OPT", "t5": "T5",
                 "gpt_neo": "GPT-Neo", "gpt_bigcode": "GPTBigCode", "roberta": "RoBERTa"}
__all__ = ["ExternalError", "External", "inspect", "load_external", "model_format"]


@dataclass(frozen=True)
class External:
    """What a model file says about itself, read without loading its weights."""

    kind: str  # "hf-gpt2" or "nanogpt"
    weights: Path  # model.safetensors or ckpt.pt
    config: GPTConfig  # the model gptviz builds (its vocabulary cut to the tokenizer's)
    chars: tuple[str, ...] | None = None  # a nanoGPT character vocabulary, else GPT-2's
    card: dict[str, Any] = field(default_factory=dict)

    @property
    def params(self) -> int:
        return parameter_counts(self.config)["total"]

    def tokenizer(self) -> Tokenizer:
        return NanoCharTokenizer(self.chars) if self.chars else TiktokenTokenizer("gpt2")


def model_format(path: Path) -> str:
    """"gptviz" (our folder), "zip" (ours, zipped), "hf-gpt2" or "nanogpt", by content;
    ExternalError for a file gptviz refuses (a pickle, another architecture)."""
    if path.is_file():
        if path.suffix == ".zip":
            return "zip"
        if path.suffix == ".bin":
            raise _pickle_refusal(path)
        if path.suffix in (".pt", ".pth", ".ckpt"):
            return "nanogpt"
        raise ExternalError(_("{name} is not a model file gptviz reads: name a "
                              "checkpoint folder, a Hugging Face GPT-2 folder "
                              "(config.json + model.safetensors) or a nanoGPT "
                              "ckpt.pt.").format(name=path.name))
    if not path.is_dir():
        return "gptviz"  # whose loader says that the folder does not exist
    try:
        hf = "model_type" in _config_json(path, default={})
    except (ExternalError, TypeError):  # not JSON, or not an object: our loader says so
        hf = False
    if hf:
        _hf_config(path)  # names another architecture or a missing file now
        return "hf-gpt2"
    if (path / "ckpt.pt").is_file() and not (path / HF_WEIGHTS).is_file():
        return "nanogpt"
    if (path / PICKLED).is_file() and not (path / HF_WEIGHTS).is_file():
        raise _pickle_refusal(path / PICKLED)
    return "gptviz"


def _pickle_refusal(path: Path) -> ExternalError:
    return ExternalError(
        _("{name} is a pickle (torch.save), and opening a pickle can run any "
          "code, so gptviz never does. Download model.safetensors instead "
          "(huggingface-cli download gpt2 config.json model.safetensors "
          "--local-dir gpt2), or convert this file once, on a machine you trust, "
          "in its folder: {convert}").format(name=path.name, convert=CONVERT))


def _config_json(folder: Path, default: Any = None) -> Any:
    path = folder / HF_CONFIG
    if not path.is_file():
        return default
    try:
        data = read_json(path.read_bytes(), f"{folder.name}/{HF_CONFIG}", max_bytes=1_000_000)
    except (OSError, TokenizerError) as exc:
        raise ExternalError(str(exc)) from None
    if not isinstance(data, dict):
        raise ExternalError(_("{name}/{hf_config} holds no JSON object.").format(
                                name=folder.name, hf_config=HF_CONFIG))
    return data


def _hf_config(folder: Path) -> GPTConfig:
    """Our config for a Hugging Face GPT-2 ``config.json``, or ExternalError saying why not."""
    data, where = _config_json(folder), f"{folder.name}/{HF_CONFIG}"
    kind = data.get("model_type")
    if kind != "gpt2":
        name = ARCHITECTURES.get(str(kind), str(kind))
        raise ExternalError(_("{where} describes a {name} model (model_type "
                              "{kind}), which gptviz does not support: it reads "
                              'GPT-2-family models (model_type "gpt2": gpt2, '
                              "distilgpt2, gpt2-medium, ...), nanoGPT checkpoints "
                              "and its own.").format(where=where, name=name, kind=repr(kind)))
    if not (folder / HF_WEIGHTS).is_file():
        if (folder / PICKLED).is_file():
            raise _pickle_refusal(folder / PICKLED)
        raise ExternalError(_("{name} has {hf_config} but no {hf_weights}: "
                              "download it too (huggingface-cli download <model> "
                              "config.json model.safetensors). Sharded weights "
                              "are not read.").format(
                                name=folder.name, hf_config=HF_CONFIG, hf_weights=HF_WEIGHTS))
    act = data.get("activation_function", "gelu_new")
    odd = [k for k, bad in (("add_cross_attention", True), ("scale_attn_weights", False),
                            ("scale_attn_by_inverse_layer_idx", True))
           if data.get(k, not bad) == bad]
    if not isinstance(act, str) or act not in HF_ACTIVATIONS or odd:
        what = f"activation_function {act!r}" if act not in HF_ACTIVATIONS else ", ".join(odd)
        raise ExternalError(_("{where} sets {what}; gptviz's GPT computes GPT-2's "
                              "own attention and GELU, so this variant is not "
                              "supported.").format(where=where, what=what))
    vocab = data.get("vocab_size")
    if not isinstance(vocab, int) or vocab < GPT2_VOCAB:
        raise ExternalError(_("{where} gives vocab_size {vocab}, fewer ids than "
                              "GPT-2's {gpt2_vocab} tokens: the model uses "
                              "another tokenizer, which gptviz cannot read.").format(
                                where=where, vocab=repr(vocab),
                                gpt2_vocab=number(GPT2_VOCAB, 0, grouping=True)))
    try:
        return GPTConfig(vocab_size=GPT2_VOCAB, context_length=data["n_positions"],
                         d_model=data["n_embd"], n_layer=data["n_layer"],
                         n_head=data["n_head"], d_ff=data.get("n_inner") or None,
                         activation=HF_ACTIVATIONS[act], positional="learned", dropout=0.0,
                         tie_embeddings=data.get("tie_word_embeddings", True), bias=True,
                         ln_eps=data.get("layer_norm_epsilon", 1e-5))
    except KeyError as exc:
        raise ExternalError(_("{where} lacks {args}.").format(
            where=where, args=repr(exc.args[0]))) from None
    except ValueError as exc:
        raise ExternalError(_("{where} describes no valid GPT-2: {exc}").format(
                                where=where, exc=exc)) from None


def _vocab_note(rows: int, what: str) -> str:
    if rows == GPT2_VOCAB:
        return ""
    return (f"{what} has {rows:,} vocabulary rows: the {rows - GPT2_VOCAB:,} after GPT-2's "
            f"{GPT2_VOCAB:,} tokens (padding) are dropped, since no text encodes to them, so "
            f"probabilities are shared among the {GPT2_VOCAB:,}.")


def inspect(path: Path) -> External:
    """What a Hugging Face folder or a nanoGPT ckpt.pt (or its folder) holds, from its config
    alone; ExternalError when gptviz cannot use it."""
    path = Path(path)
    kind = model_format(path)
    if kind == "hf-gpt2":
        config = _hf_config(path)
        card = {"format": "Hugging Face GPT-2 folder", "source": path.name,
                "note": _vocab_note(_config_json(path)["vocab_size"], "config.json")}
        return External(kind, path / HF_WEIGHTS, config, None, card)
    if kind != "nanogpt":
        raise ExternalError(_("{name} is not a Hugging Face GPT-2 folder or a "
                              "nanoGPT ckpt.pt.").format(name=path.name))
    ckpt_path = path / "ckpt.pt" if path.is_dir() else path
    ckpt = read_ckpt(ckpt_path)
    config = nanogpt_config(ckpt, ckpt_path.name)
    rows, chars = config.vocab_size, None
    if rows in (GPT2_VOCAB, 50304):
        config, note = replace(config, vocab_size=GPT2_VOCAB), _vocab_note(rows, "ckpt.pt")
    elif (vocab := char_vocabulary(ckpt, ckpt_path)) and len(vocab[0]) == rows:
        chars, note = tuple(vocab[0]), f"Its characters come from {vocab[1].name}."
    else:
        found = f"{len(vocab[0])} characters" if vocab else "none"
        raise ExternalError(
            _("{name} has a vocabulary of {rows} ids: neither GPT-2's "
              "({gpt2_vocab}, or 50,304 padded) nor the characters of a "
              "meta.pkl beside it or in data/<dataset>/ (found: {found}).").format(
                name=ckpt_path.name, rows=number(rows, 0, grouping=True),
                gpt2_vocab=number(GPT2_VOCAB, 0, grouping=True), found=found))
    card = {"format": "nanoGPT checkpoint", "source": ckpt_path.parent.name, "note": note}
    return External(kind, ckpt_path, config, chars, card)


def load_external(path: Path, max_params: int | None = None) -> tuple[GPT, Tokenizer, dict]:
    """The model (eval mode), tokenizer and card of a Hugging Face GPT-2 folder or a
    nanoGPT ckpt.pt. Every shape is checked before any weight is read."""
    found = inspect(path)
    if max_params is not None and found.params > max_params:
        raise ExternalError(_("{name} has {params} parameters ({value0} MB "
                              "as float32); the limit here is {max_params}.").format(
                                name=found.weights.parent.name,
                                params=number(found.params, 0, grouping=True),
                                value0=number(4 * found.params / 1e6, 0, grouping=True),
                                max_params=number(max_params, 0, grouping=True)))
    if found.kind == "hf-gpt2":
        from safetensors import safe_open

        try:
            with safe_open(str(found.weights), framework="pt") as f:
                shapes = {k: tuple(f.get_slice(k).get_shape()) for k in f.keys()}  # noqa: SIM118
                model = fill_gpt(found.config, shapes, f.get_tensor, True, HF_WEIGHTS)
        except ExternalError:
            raise
        except Exception as exc:  # safetensors' own error type: a truncated or foreign file
            raise ExternalError(_("{hf_weights} is not a readable safetensors "
                                  "file ({exc}).").format(
                                    hf_weights=HF_WEIGHTS, exc=exc)) from None
    else:
        weights = read_ckpt(found.weights)["model"]
        tensors = {short_name(k): v for k, v in weights.items() if isinstance(v, torch.Tensor)}
        lm, wte = tensors.get("lm_head.weight"), tensors.get("wte.weight")
        if lm is not None and wte is not None and lm.shape == wte.shape \
                and not torch.equal(lm, wte):  # nanoGPT ties them; an edited copy may not
            found = replace(found, config=replace(found.config, tie_embeddings=False))
        model = fill_gpt(found.config, {k: tuple(v.shape) for k, v in tensors.items()},
                         tensors.__getitem__, False, found.weights.name)
    return model.eval(), found.tokenizer(), found.card
