"""Typed configurations: the model (``GPTConfig``) and its training (``TrainConfig``).

Both validate themselves and round-trip through plain dicts (``config.json``),
so a checkpoint written by one version of the code is checked field by field
when it is read back.
"""

from __future__ import annotations

import heapq
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from gptviz.i18n import _, number

ACTIVATIONS = ("gelu", "gelu_tanh", "relu")
# How each activation is written: in text (tables, captions) and in TeX (formulas).
ACTIVATION_TEXT = {"gelu": "GELU", "gelu_tanh": "GELU_tanh", "relu": "ReLU"}
ACTIVATION_TEX = {"gelu": r"\mathrm{GELU}", "gelu_tanh": r"\mathrm{GELU}_{\tanh}",
                  "relu": r"\mathrm{ReLU}"}
# Each one's definition at x (TeX), e.g. for "H = GELU(A), entry by entry".
ACTIVATION_FORMULA = {
    "gelu": r"x\,\Phi(x)",
    "gelu_tanh": r"\tfrac{x}{2}\big(1 + \tanh\big(\sqrt{2/\pi}\,(x + 0.044715\,x^3)\big)\big)",
    "relu": r"\max(x, 0)",
}
LN_EPS = 1e-5  # LayerNorm's ε, nanoGPT's and GPT-2's; config.json lists ln_eps only if not this
POSITIONALS = ("sinusoidal", "learned", "none", "rope")
DTYPES = ("auto", "float32", "bfloat16")


@dataclass
class GPTConfig:
    """Shape of a GPT. The defaults are nanoGPT's CPU "baby GPT" on characters.

    >>> GPTConfig(vocab_size=65).d_ff   # d_ff=None means 4 * d_model
    512
    """

    vocab_size: int = 65  # |V|: ids are 0 .. vocab_size - 1
    context_length: int = 64  # N: the longest input the model accepts
    d_model: int = 128  # d: width of the residual stream
    n_layer: int = 4  # number of transformer blocks
    n_head: int = 4  # heads per attention layer; d_k = d_model / n_head
    d_ff: int | None = None  # hidden width of the FFN; None -> 4 * d_model
    activation: str = "gelu"  # FFN non-linearity: "gelu" (exact, erf form), "gelu_tanh"
    # (GPT-2's tanh approximation) or "relu"
    positional: str = "learned"  # "sinusoidal" (the seeds' formula), "learned", "none", "rope"
    dropout: float = 0.0  # dropout after embeddings, attention and FFN (training only)
    tie_embeddings: bool = True  # unembedding W_U = token embedding E (transposed)
    bias: bool = True  # biases in the linear layers and LayerNorms (the seeds' b_1, b_2, b)
    ln_eps: float = LN_EPS  # ε in LayerNorm's sqrt(var + ε)

    def __post_init__(self) -> None:
        if self.d_ff is None and isinstance(self.d_model, int):
            self.d_ff = 4 * self.d_model
        self.validate()

    @property
    def d_head(self) -> int:
        """d_k, the width of one head's queries, keys and values."""
        return self.d_model // self.n_head

    @property
    def rope(self) -> bool:
        """Whether positions are RoPE's rotations of q and k (nothing added to X)."""
        return self.positional == "rope"

    @property
    def adds_positions(self) -> bool:
        """Whether X = E[ids] + P: learned or sinusoidal positions (not RoPE, not none)."""
        return self.positional in ("learned", "sinusoidal")

    def validate(self) -> None:
        """Raise ValueError naming the first field that makes no sense."""
        _check_types(self)
        for name in ("vocab_size", "context_length", "d_model", "n_layer", "n_head", "d_ff"):
            if getattr(self, name) < 1:
                raise ValueError(_("{field} must be at least 1, got {value}.").format(
                    field=f"GPTConfig.{name}", value=getattr(self, name)))
        if self.d_model % self.n_head:
            raise ValueError(_(
                "GPTConfig: d_model ({d_model}) must be divisible by n_head ({n_head}) so "
                "that every head gets d_k = d_model / n_head dimensions."
            ).format(d_model=self.d_model, n_head=self.n_head))
        if self.positional == "sinusoidal" and self.d_model % 2:
            raise ValueError(_(
                "GPTConfig: sinusoidal positions pair dimensions (sin, cos), so d_model "
                "must be even, got {d_model}."
            ).format(d_model=self.d_model))
        if self.rope and self.d_head % 2:
            raise ValueError(_(
                "GPTConfig: RoPE rotates pairs of a head's dimensions, so d_k = d_model / "
                "n_head must be even, got {d_k}."
            ).format(d_k=self.d_head))
        _check_choice("activation", self.activation, ACTIVATIONS)
        _check_choice("positional", self.positional, POSITIONALS)
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(_("{field} must be in [0, 1), got {value}.").format(
                field="GPTConfig.dropout", value=self.dropout))
        if not 0.0 < self.ln_eps < 1.0:
            raise ValueError(_("{field} must be in (0, 1), got {value}.").format(
                field="GPTConfig.ln_eps", value=self.ln_eps))

    def to_dict(self) -> dict[str, Any]:
        """The fields as a dict; ``ln_eps`` only when it is not the usual 1e-5, so that the
        config.json of every model written before it existed reads the same."""
        data = asdict(self)
        if data["ln_eps"] == LN_EPS:
            del data["ln_eps"]
        return data

    @classmethod
    def from_dict(cls, data: Any) -> GPTConfig:
        """Build from ``to_dict`` output; unknown or missing keys are errors."""
        return _from_dict(cls, data)


@dataclass
class TrainConfig:
    """How to train. Defaults follow nanoGPT's shakespeare-char baby GPT recipe.

    >>> TrainConfig(steps=100).warmup_steps
    100
    """

    steps: int = 2000  # optimizer steps
    batch_size: int = 12  # sequences per step (per process under DDP)
    learning_rate: float = 1e-3  # peak learning rate, reached after warmup
    min_lr: float = 1e-4  # floor of the cosine decay
    warmup_steps: int = 100  # linear warmup from 0 to learning_rate
    weight_decay: float = 0.1  # AdamW decay on every matrix (E, a learned P, the W), not on vectors
    beta1: float = 0.9  # AdamW first-moment decay
    beta2: float = 0.99  # AdamW second-moment decay (0.99 suits small batches)
    grad_clip: float = 1.0  # clip the global gradient norm to this; 0 disables clipping
    eval_interval: int = 250  # evaluate every this many steps (and at the end)
    eval_batches: int = 20  # batches averaged for one validation loss
    val_fraction: float = 0.1  # tail of the corpus held out for validation
    stride: int = 1  # step between training windows (1 = every offset)
    seed: int = 1337  # seeds initialisation, batch order and dropout
    device: str = "auto"  # "auto" (cuda > mps > cpu), "cpu", "cuda", "cuda:1", "mps"
    dtype: str = "auto"  # "auto" (bf16 autocast on CUDA, else float32), "float32", "bfloat16"

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        _check_types(self)
        positive = ("steps", "batch_size", "eval_interval", "eval_batches", "stride")
        for name in positive:
            if getattr(self, name) < 1:
                raise ValueError(_("{field} must be at least 1, got {value}.").format(
                    field=f"TrainConfig.{name}", value=getattr(self, name)))
        if not self.learning_rate > 0 or not 0 <= self.min_lr <= self.learning_rate:
            raise ValueError(_(
                "TrainConfig: need learning_rate > 0 and 0 <= min_lr <= learning_rate, got "
                "learning_rate={learning_rate}, min_lr={min_lr}."
            ).format(learning_rate=self.learning_rate, min_lr=self.min_lr))
        if self.warmup_steps < 0 or self.weight_decay < 0 or self.grad_clip < 0:
            raise ValueError(_(
                "TrainConfig: warmup_steps, weight_decay and grad_clip must be >= 0."))
        if not (0 <= self.beta1 < 1 and 0 <= self.beta2 < 1):
            raise ValueError(_("TrainConfig: betas must be in [0, 1), got {beta1}, {beta2}.")
                             .format(beta1=self.beta1, beta2=self.beta2))
        if not 0 < self.val_fraction < 1:
            raise ValueError(_("{field} must be in (0, 1), got {value}.").format(
                field="TrainConfig.val_fraction", value=self.val_fraction))
        _check_choice("dtype", self.dtype, DTYPES)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Any) -> TrainConfig:
        return _from_dict(cls, data)


@dataclass
class RunConfig:
    """A model and its training, nested the way minGPT nests ``C.model`` and ``C.trainer``."""

    model: GPTConfig = field(default_factory=GPTConfig)
    train: TrainConfig = field(default_factory=TrainConfig)


# The seeds' GPT_CONFIG_124M (GPT-2 small) in our field names, for parameter counts.
# The seeds set qkv_bias=False; here ``bias`` covers every layer, so the QKV biases
# (3 * 768 per block) are counted; ``parameter_counts`` lists them on their own line.
GPT_CONFIG_124M: dict[str, Any] = dict(
    vocab_size=50257, context_length=1024, d_model=768, n_layer=12, n_head=12,
    dropout=0.1, bias=True, positional="learned", tie_embeddings=True,
)


def parameter_counts(config: GPTConfig) -> dict[str, int]:
    """Trainable numbers per component, computed from the shapes alone (no model built).

    >>> parameter_counts(GPTConfig(**GPT_CONFIG_124M))["total"]
    124439808
    """
    c, d = config, config.d_model
    b = 1 if c.bias else 0
    ln = " (λ, b)" if b else " (λ)"  # each line names the biases it counts, as LN(x) writes them
    per_block = {
        "ln1" + ln: d + b * d,
        "attn W_Q, W_K, W_V": 3 * d * d,
        "attn QKV biases b_Q, b_K, b_V": b * 3 * d,
        "attn W_O" + (" (+ bias b_O)" if b else ""): d * d + b * d,
        "ln2" + ln: d + b * d,
        "FFN W_1, W_2" + (" (+ biases b_1, b_2)" if b else ""): 2 * d * c.d_ff + b * (c.d_ff + d),
    }
    counts = {
        "token embedding E": c.vocab_size * d,
        "positional": c.context_length * d if c.positional == "learned" else 0,
        **{f"blocks x{c.n_layer}: {k}": c.n_layer * v for k, v in per_block.items()},
        "final LayerNorm" + ln: d + b * d,
        "unembedding W_U": 0 if c.tie_embeddings else d * c.vocab_size,
    }
    counts["total"] = sum(counts.values())
    return counts


def _check_choice(name: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ValueError(_("{name} must be one of {choices}; got {value}.").format(
            name=name, choices=", ".join(choices), value=repr(value)))


def _check_types(obj: Any) -> None:
    """Reject e.g. ``n_head="4"`` or ``dropout=None`` with a message naming the field."""
    for f in fields(obj):
        value = getattr(obj, f.name)
        want = {"int": int, "float": (int, float), "str": str, "bool": bool}.get(
            str(f.type).replace(" | None", ""), object
        )
        if isinstance(value, bool) and want is not bool:
            ok = False
        else:
            ok = isinstance(value, want)
        if not ok:
            raise ValueError(_("{field} must be {type}, got {value}.").format(
                field=f"{type(obj).__name__}.{f.name}", type=f.type, value=repr(value)))


def _from_dict(cls: Any, data: Any) -> Any:
    if not isinstance(data, dict):
        raise ValueError(_("{config}: expected a JSON object, got {type}.").format(
            config=cls.__name__, type=type(data).__name__))
    names = {f.name for f in fields(cls)}
    if unknown := set(data) - names:  # the first few by name (a file may hold 100,000)
        first = heapq.nsmallest(5, unknown)
        if len(unknown) > 5:
            raise ValueError(_("{config}: unknown field(s) {fields} and {n} more.").format(
                config=cls.__name__, fields=first,
                n=number(len(unknown) - 5, 0, grouping=True)))
        raise ValueError(_("{config}: unknown field(s) {fields}.").format(
            config=cls.__name__, fields=first))
    missing = sorted(names - set(data) - {"d_ff", "ln_eps"})  # these two have defaults
    if missing:
        raise ValueError(_("{config}: missing field(s) {fields}.").format(
            config=cls.__name__, fields=missing))
    return cls(**data)
