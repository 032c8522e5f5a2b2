"""Training: AdamW, warmup + cosine decay, gradient clipping, periodic validation.

The Trainer knows nothing of any UI: it reports through ``on_step`` and
``on_eval`` callbacks and stops when its ``threading.Event`` is set. The CLI
(``python -m gptviz.train``) is ``gptviz.train.__main__``.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import Tensor

from gptviz.data import SlidingWindowDataset, train_val_split
from gptviz.i18n import _
from gptviz.model import GPT, RunConfig, TrainConfig
from gptviz.train.adamw import AdamW
from gptviz.train.ddp import DistInfo
from gptviz.train.device import autocast, autocast_dtype, resolve_device


class DivergenceError(ValueError):
    """The loss became NaN or infinite; the message says when and what to change. It is
    worded when read (``say``), in the reader's language: training runs in a thread of its
    own, outside any page's session."""

    def __init__(self, say: Callable[[], str]) -> None:
        super().__init__()
        self.say = say

    def __str__(self) -> str:
        return self.say()


@dataclass
class StepInfo:
    """What one optimizer step reports to ``on_step``."""

    step: int  # steps done, 1 .. steps
    loss: float  # training cross-entropy of this step's batch (nats per token)
    lr: float  # learning rate used
    grad_norm: float  # global gradient norm before clipping
    elapsed_s: float  # wall time since training started (evaluations excluded)
    tokens_per_s: float  # this step's throughput (all processes together)


@dataclass
class EvalInfo:
    """What one evaluation reports to ``on_eval``; perplexity = exp(cross-entropy)."""

    step: int
    train_loss: float  # mean training loss since the previous evaluation (nan at step 0)
    val_loss: float
    elapsed_s: float

    @property
    def val_perplexity(self) -> float:
        return math.exp(min(self.val_loss, 700.0))


@dataclass
class TrainResult:
    steps_done: int
    stopped: bool  # True when the stop event ended training early
    elapsed_s: float
    steps: list[StepInfo] = field(default_factory=list)
    evals: list[EvalInfo] = field(default_factory=list)

    @property
    def best(self) -> EvalInfo:
        """The evaluation with the lowest validation loss (the earliest of equals)."""
        return min(self.evals, key=lambda e: e.val_loss)


def lr_at(step: int, cfg: TrainConfig) -> float:
    """Linear warmup to learning_rate, then cosine decay to min_lr at the last step.

    >>> cfg = TrainConfig(steps=2000, learning_rate=1e-3, min_lr=1e-4, warmup_steps=100)
    >>> [round(lr_at(step, cfg), 6) for step in (0, 100, 2000)]   # start, peak, floor
    [1e-05, 0.001, 0.0001]
    """
    if step < cfg.warmup_steps:
        return cfg.learning_rate * (step + 1) / (cfg.warmup_steps + 1)
    span = max(1, cfg.steps - cfg.warmup_steps)
    progress = min(1.0, (step - cfg.warmup_steps) / span)
    cosine = 0.5 * (1.0 + math.cos(math.pi * progress))  # 1 -> 0
    return cfg.min_lr + cosine * (cfg.learning_rate - cfg.min_lr)


def make_optimizer(model: GPT, cfg: TrainConfig) -> AdamW:
    """AdamW; matrices (embeddings included) decay, vectors (biases, λ, b) do not."""
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [
        {"params": [p for p in params if p.dim() >= 2], "weight_decay": cfg.weight_decay},
        {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
    ]
    return AdamW(groups, lr=cfg.learning_rate, betas=(cfg.beta1, cfg.beta2))


class Trainer:
    """Train a GPT on a stream of token ids.

    >>> run = RunConfig(model.config, TrainConfig(steps=30, batch_size=4, eval_batches=2))
    >>> result = Trainer(run, list(range(10)) * 20).train()   # evaluates at 0 and at the end
    >>> result.steps_done, result.evals[-1].val_loss < result.evals[0].val_loss
    (30, True)
    """

    def __init__(self, config: RunConfig, train_ids: Sequence[int] | Tensor,
                 val_ids: Sequence[int] | Tensor | None = None, model: GPT | None = None,
                 on_step: Callable[[StepInfo], None] | None = None,
                 on_eval: Callable[[EvalInfo], None] | None = None,
                 stop: threading.Event | None = None, dist: DistInfo | None = None) -> None:
        self.config, self.tc = config, config.train
        self.on_step, self.on_eval = on_step, on_eval
        self.stop = stop or threading.Event()
        self.dist = dist or DistInfo(device=resolve_device(self.tc.device))
        self.device = self.dist.device
        self.amp = autocast_dtype(self.device, self.tc.dtype)
        n_ctx = config.model.context_length
        if val_ids is None:
            train_ids, val_ids = train_val_split(train_ids, self.tc.val_fraction, n_ctx)
        self.train_data = SlidingWindowDataset(train_ids, n_ctx, self.tc.stride)
        self.val_data = SlidingWindowDataset(val_ids, n_ctx, n_ctx)
        self._check_vocab(self.train_data.ids, "training")
        self._check_vocab(self.val_data.ids, "validation")
        if model is None:
            with torch.random.fork_rng(devices=[]):  # same init for a seed, global RNG untouched
                torch.manual_seed(self.tc.seed)
                model = GPT(config.model)
        self.model = model.to(self.device)
        self.optimizer = make_optimizer(self.model, self.tc)
        self.ddp_model = self._wrap_ddp()
        self.val_batches = [(x.to(self.device), y.to(self.device))
                            for x, y in self.val_data.fixed_batches(self.tc.eval_batches,
                                                                    self.tc.batch_size)]
        self.best_state: dict[str, Tensor] | None = None  # weights at the best evaluation
        self._best_loss = math.inf

    def _check_vocab(self, ids: Tensor, part: str) -> None:
        v = self.config.model.vocab_size
        if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= v):
            raise ValueError(f"the {part} ids hold {int(ids.max())}, outside the model's "
                             f"vocabulary of {v}: set vocab_size to the tokenizer's.")

    def _wrap_ddp(self) -> torch.nn.Module:
        if self.dist.world_size == 1:
            return self.model
        from torch.nn.parallel import DistributedDataParallel

        ids = [self.device.index] if self.device.type == "cuda" else None
        return DistributedDataParallel(self.model, device_ids=ids)

    def loss(self, x: Tensor, y: Tensor, model: torch.nn.Module | None = None) -> Tensor:
        """Mean cross-entropy of next-token predictions, x and y of shape (B, N)."""
        with autocast(self.device, self.amp):
            logits = (self.model if model is None else model)(x)  # (B, N, |V|)
        return F.cross_entropy(logits.float().flatten(0, 1), y.flatten())

    @torch.no_grad()
    def evaluate(self) -> float:
        """Validation cross-entropy over the fixed validation batches."""
        was_training = self.model.training
        self.model.eval()
        losses = [self.loss(x, y).item() for x, y in self.val_batches]
        self.model.train(was_training)
        return sum(losses) / len(losses)

    def train(self) -> TrainResult:
        """Run ``steps`` optimizer steps (fewer if stopped); evaluates at 0, every
        ``eval_interval`` steps and at the end."""
        tc = self.tc
        gen = torch.Generator().manual_seed(tc.seed + self.dist.rank)  # batch order
        torch.manual_seed(tc.seed + self.dist.rank)  # dropout
        result = TrainResult(0, False, 0.0)
        self._eval(result, 0, float("nan"))
        recent: list[float] = []
        tokens = tc.batch_size * self.config.model.context_length * self.dist.world_size
        self.model.train()
        for step in range(tc.steps):
            if self.stop.is_set():
                result.stopped = True
                break
            t0 = time.perf_counter()
            info = self._step(step, gen)
            result.elapsed_s += time.perf_counter() - t0
            info.elapsed_s = result.elapsed_s
            info.tokens_per_s = tokens / (time.perf_counter() - t0)
            result.steps.append(info)
            result.steps_done = step + 1
            recent.append(info.loss)
            if self.on_step and self.dist.is_main:
                self.on_step(info)
            if (step + 1) % tc.eval_interval == 0 or step + 1 == tc.steps:
                self._eval(result, step + 1, sum(recent) / len(recent))
                recent = []
        if result.stopped and recent:
            self._eval(result, result.steps_done, sum(recent) / len(recent))
        self.model.eval()
        return result

    def keep_best(self) -> None:
        """Put back the weights of the evaluation with the lowest validation loss.

        >>> trainer = Trainer(RunConfig(model.config, TrainConfig(steps=4, eval_interval=2,
        ...                   eval_batches=1, batch_size=2)), list(range(10)) * 20)
        >>> result = trainer.train(); trainer.keep_best()
        >>> abs(trainer.evaluate() - result.best.val_loss) < 1e-6
        True
        """
        if self.best_state is not None:
            self.model.load_state_dict(self.best_state)

    def _step(self, step: int, gen: torch.Generator) -> StepInfo:
        lr = lr_at(step, self.tc)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        x, y = self.train_data.random_batch(self.tc.batch_size, gen)  # (B, N) each
        loss = self.loss(x.to(self.device), y.to(self.device), self.ddp_model)
        value = loss.item()
        if not math.isfinite(value):
            raise DivergenceError(lambda: _(
                "the training loss became {value} at step {step} (learning rate {lr}); training "
                "stopped. Lower the learning rate (e.g. 1e-3) or raise grad_clip.").format(
                    value=value, step=step + 1, lr=f"{lr:.3g}"))
        loss.backward()
        clip = self.tc.grad_clip if self.tc.grad_clip > 0 else float("inf")
        norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), clip)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        return StepInfo(step + 1, value, lr, float(norm), 0.0, 0.0)

    def _eval(self, result: TrainResult, step: int, train_loss: float) -> None:
        info = EvalInfo(step, train_loss, self.evaluate(), result.elapsed_s)
        if not math.isfinite(info.val_loss):
            raise DivergenceError(lambda: _(
                "the validation loss became {value} at step {step}; lower the learning rate and "
                "train again.").format(value=info.val_loss, step=step))
        result.evals.append(info)
        if info.val_loss < self._best_loss:
            self._best_loss = info.val_loss
            self.best_state = {k: v.detach().clone() for k, v in self.model.state_dict().items()}
        if self.on_eval and self.dist.is_main:
            was_training = self.model.training
            self.model.eval()  # so a callback that samples text gets no dropout
            self.on_eval(info)
            self.model.train(was_training)

