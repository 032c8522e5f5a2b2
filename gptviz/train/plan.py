"""Planning a training run in the app: presets, caps, and the time it will take.

Pure functions of the chosen settings; nothing here starts a thread or draws.

>>> spec = PRESETS["30-second demo"]
>>> run = run_config(spec, vocab_size=111)
>>> check_caps(run, TrainingCaps())
[]
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace

from gptviz.i18n import N_, _, number
from gptviz.model import GPTConfig, RunConfig, TrainConfig, parameter_counts


@dataclass(frozen=True)
class TrainingSpec:
    """Everything a user chooses on the Training page (the vocabulary follows the tokenizer)."""

    corpus: str = "mathematics"  # a bundled corpus name, or "synthetic:<task>", or "upload"
    tokenizer: str = "char"  # "char", "word" or "bpe"
    vocab_size: int = 0  # tokenizer vocabulary; 0 = every symbol (char/word only)
    d_model: int = GPTConfig.d_model  # width of the residual stream
    n_layer: int = 2  # transformer blocks (fewer than GPTConfig's 4: a 30-second demo)
    n_head: int = GPTConfig.n_head  # heads per block (must divide d_model)
    context_length: int = GPTConfig.context_length  # N, tokens the model sees at once
    positional: str = GPTConfig.positional  # one of POSITIONALS
    activation: str = GPTConfig.activation  # FFN non-linearity, one of ACTIVATIONS
    steps: int = 800  # optimizer steps
    batch_size: int = TrainConfig.batch_size  # windows per step
    learning_rate: float = 1e-2  # peak learning rate (tiny models take large ones)
    stride: int = 1  # step between training windows
    seed: int = TrainConfig.seed  # initialisation and batch order


PRESETS: dict[str, TrainingSpec] = {  # each name a key; the page shows it translated
    # word-like samples in about 30 s on a 2-core laptop (see BENCHMARKS.md)
    N_("30-second demo"): TrainingSpec(),
    # repeated random strings "r|r" of 6-14 letters: the second half is only predictable by
    # copying. From step ~300 the validation loss falls from ~3.2 to ~2.0: induction heads
    N_("induction heads"): TrainingSpec(corpus="synthetic:induction", n_layer=2, steps=1000,
                                    batch_size=32, learning_rate=1e-3),
    # the bundled mathematics-char recipe, shortened: 4 layers, context 128, about 3 minutes
    N_("bigger"): TrainingSpec(n_layer=4, context_length=128, steps=2000, learning_rate=3e-3),
}


# The synthetic corpora the page offers. Strings of varying length put the copy at no fixed
# distance, so a head that looks a fixed number of places back cannot solve the task.
SYNTHETIC_TASKS: dict[str, dict[str, int]] = {
    "induction": dict(n_lines=4000, length=6, max_length=14, seed=0),
    "sorting": dict(n_lines=4000, seed=0),
}


def synthetic_text(task: str) -> str:
    """The text of a synthetic task, e.g. ``synthetic_text("induction")[:13]`` → 'ynbiqpmzjpls|'."""
    from gptviz.data import synthetic_corpus

    return synthetic_corpus(task, **SYNTHETIC_TASKS[task])


@dataclass(frozen=True)
class TrainingCaps:
    """Limits for one run on a shared server; a classroom laptop may raise them (env vars).

    >>> TrainingCaps.from_env({"GPTVIZ_TRAIN_MAX_STEPS": "20000"}).max_steps
    20000
    """

    max_params: int = 3_000_000  # parameters of the model (12 MB of weights, 36 MB with AdamW)
    max_steps: int = 5000  # optimizer steps
    max_context: int = 256  # context length N
    max_batch: int = 64  # windows per step
    max_seconds: float = 600.0  # estimated, and enforced, training time of one run

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> TrainingCaps:
        """Defaults, overridden by GPTVIZ_TRAIN_MAX_{PARAMS,STEPS,CONTEXT,BATCH,SECONDS}."""
        caps = cls()
        for name in ("params", "steps", "context", "batch", "seconds"):
            value = env.get(f"GPTVIZ_TRAIN_MAX_{name.upper()}")
            if value:
                kind = float if name == "seconds" else int
                caps = replace(caps, **{f"max_{name}": kind(float(value))})
        return caps


def run_config(spec: TrainingSpec, vocab_size: int, dtype: str = "auto") -> RunConfig:
    """The model and training configs for ``spec``; raises ValueError for impossible shapes.

    Warmup is 10 % of the steps (at most 100), the cosine floor a tenth of the peak,
    and about ten evaluations happen along the way, each followed by a sample.
    """
    model = GPTConfig(vocab_size=vocab_size, context_length=spec.context_length,
                      d_model=spec.d_model, n_layer=spec.n_layer, n_head=spec.n_head,
                      activation=spec.activation, positional=spec.positional, dropout=0.0)
    train = TrainConfig(steps=spec.steps, batch_size=spec.batch_size,
                        learning_rate=spec.learning_rate, min_lr=spec.learning_rate / 10,
                        warmup_steps=min(100, spec.steps // 10),
                        eval_interval=max(1, spec.steps // 10), eval_batches=8,
                        stride=spec.stride, seed=spec.seed, device="cpu", dtype=dtype)
    return RunConfig(model, train)


def n_params(config: GPTConfig) -> int:
    """Trainable parameters, e.g. ``n_params(GPTConfig(vocab_size=65))`` → 809,856."""
    return parameter_counts(config)["total"]


def flops_per_token(config: GPTConfig) -> float:
    """Training FLOPs per token, nanoGPT's 6·N + 12·L·d·N_ctx (N without positions).

    >>> round(flops_per_token(GPTConfig(vocab_size=65)) / 1e6, 2)
    5.2
    """
    counts = parameter_counts(config)
    weights = counts["total"] - counts["positional"]
    return 6 * weights + 12 * config.n_layer * config.d_model * config.context_length


def estimate_seconds(run: RunConfig, flops_per_s: float) -> float:
    """Training plus evaluation time at a sustained ``flops_per_s``.

    Evaluations are forward passes only (a third of a training step's FLOPs).
    """
    m, t = run.model, run.train
    tokens = t.steps * t.batch_size * m.context_length
    n_evals = t.steps // t.eval_interval + 2
    eval_tokens = n_evals * t.eval_batches * t.batch_size * m.context_length
    return flops_per_token(m) * (tokens + eval_tokens / 3) / flops_per_s


def check_caps(run: RunConfig, caps: TrainingCaps, estimate_s: float | None = None
               ) -> list[str]:
    """One message per setting over the server's caps (empty when the run may start)."""
    m, t = run.model, run.train
    out = []
    if (p := n_params(m)) > caps.max_params:
        out.append(_("the model has {n} parameters; this server allows {most}. Lower "
                     "d_model, the layers or the vocabulary size.").format(
                         n=_grouped(p), most=_grouped(caps.max_params)))
    if t.steps > caps.max_steps:
        out.append(_("{n} steps is over this server's limit of {most}.").format(
            n=_grouped(t.steps), most=_grouped(caps.max_steps)))
    if m.context_length > caps.max_context:
        out.append(_("context length {n} is over the limit of {most}.").format(
            n=m.context_length, most=caps.max_context))
    if t.batch_size > caps.max_batch:
        out.append(_("batch size {n} is over the limit of {most}.").format(
            n=t.batch_size, most=caps.max_batch))
    if estimate_s is not None and estimate_s > caps.max_seconds:
        out.append(_("the run would take about {minutes} min; one run may take at most {most} "
                     "min here. Use fewer steps or a smaller model.").format(
                         minutes=number(estimate_s / 60, 0), most=number(caps.max_seconds / 60, 0)))
    return out


def _grouped(n: int) -> str:
    return number(n, 0, grouping=True)


def check_corpus_length(n_tokens: int, context_length: int, val_fraction: float = 0.1
                        ) -> str | None:
    """None if the corpus holds a training and a validation window, else what to do.

    >>> check_corpus_length(50, 64) is not None
    True
    """
    need = context_length + 1
    n_val = round(n_tokens * val_fraction)
    if n_tokens - n_val >= need and n_val >= need:
        return None
    least = int(need / min(val_fraction, 1 - val_fraction)) + 1
    return _("the corpus has {n} tokens, shorter than one window of {need} tokens (context "
             "{context} + the next token) in both the training part and the {share}% held out "
             "for validation. Give a text of at least {least} tokens or a shorter context "
             "length.").format(n=_grouped(n_tokens), need=need, context=context_length,
                               share=number(100 * val_fraction, 0), least=_grouped(least))


def default_prompt(text: str, max_chars: int = 30) -> str:
    """A prompt taken from the corpus: its first words, or for a task ("r|r", "s>t") its
    first line and the second cut after the separator, so the answer is what comes next.

    >>> default_prompt("qwe|qwe\\nabc|abc\\n")
    'qwe|qwe\\nabc|'
    >>> default_prompt("Representing homology classes by manifolds")
    'Representing homology classes'
    """
    lines = text.lstrip().split("\n", 2)
    for sep in ("|", ">"):
        if sep in lines[0][:max_chars]:
            if len(lines) > 1 and sep in lines[1]:
                return lines[0] + "\n" + lines[1][:lines[1].index(sep) + 1]
            return lines[0][:lines[0].index(sep) + 1]
    words = lines[0][:max_chars].split(" ")
    return " ".join(words[:-1]) if len(words) > 2 else lines[0][:max_chars]
