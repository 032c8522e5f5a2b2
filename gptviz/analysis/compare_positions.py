"""Four positional encodings compared: the same small GPT trained once with each
``positional`` option, on the same characters, with the same seed and the same steps.

Each run records its validation curve and its loss at every position of texts 4 N long
(N: its context), read in the ways each option allows past N:

- "crop": each prediction sees only the last N tokens, at positions 0 … N−1: what
  ``generate`` does for learned, sinusoidal and no positions (recomputed at every step);
- "whole": the whole text in one pass. RoPE attends within a sliding window of N keys (as
  its generator does, with a rolling cache); sinusoidal gets the formula's rows N, N+1, …,
  never seen in training; no positions attends over every earlier token. A learned table
  has no row past N−1, so it cannot.

They ship in assets/positional/<kind>/ (scripts/make_positional.py); ``CompareJob``
retrains them in a background thread for one session."""

from __future__ import annotations

import copy
import math
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from gptviz.checkpoints.folder import Checkpoint, CheckpointError, load_checkpoint, save_checkpoint
from gptviz.data import CORPORA_DIR, SlidingWindowDataset, split_text
from gptviz.model import GPT, GPTConfig, RunConfig, TrainConfig
from gptviz.tokenizers import CharTokenizer
from gptviz.train.background import SlotJob
from gptviz.train.slots import TrainerSlots
from gptviz.train.trainer import StepInfo, Trainer

KINDS = ("sinusoidal", "learned", "none", "rope")
SCHEMES = {  # kind -> the ways it can read a long text; the first is what its generator does
    "sinusoidal": ("crop", "whole"), "learned": ("crop",), "none": ("crop", "whole"),
    "rope": ("whole",)}
FOLDER = Path(__file__).resolve().parents[2] / "assets" / "positional"


@dataclass(frozen=True)
class Recipe:
    """One recipe for all four runs; only ``positional`` differs between them."""

    corpus: str = "mathematics.txt"  # in assets/corpora; the last 10 % validates
    context_length: int = 32  # N
    d_model: int = 64  # d
    n_layer: int = 2
    n_head: int = 4  # d_k = 16: RoPE rotates 8 pairs per head
    steps: int = 500  # optimizer steps of each run
    batch_size: int = 16
    learning_rate: float = 3e-3
    min_lr: float = 3e-4
    warmup_steps: int = 50
    eval_interval: int = 50  # a point of the validation curve every this many steps
    eval_batches: int = 16  # 16 x 16 windows of N tokens per point
    seed: int = 1337  # the same initialisation seed and batch order for every run
    long_factor: int = 4  # long texts are long_factor x N tokens
    long_texts: int = 96  # evenly spread over the validation part

    @property
    def long_length(self) -> int:
        return self.long_factor * self.context_length

    def run_config(self, kind: str, vocab_size: int) -> RunConfig:
        mine = asdict(self)
        model = {k: mine[k] for k in ("context_length", "d_model", "n_layer", "n_head")}
        train = {k: mine[k] for k in ("steps", "batch_size", "learning_rate", "min_lr",
                                      "warmup_steps", "eval_interval", "eval_batches", "seed")}
        return RunConfig(GPTConfig(vocab_size=vocab_size, positional=kind, dropout=0.0, **model),
                         TrainConfig(device="cpu", dtype="float32", **train))


@dataclass
class Data:
    """The recipe's corpus as characters: the tokenizer learns from the training part only."""

    tokenizer: CharTokenizer
    train_ids: list[int]
    val_ids: list[int]


def load_data(recipe: Recipe) -> Data:
    text = (CORPORA_DIR / recipe.corpus).read_text(encoding="utf-8")
    train_text, val_text = split_text(text, TrainConfig().val_fraction)
    tok = CharTokenizer()
    tok.train(train_text)
    return Data(tok, tok.encode(train_text), tok.encode(val_text))


def long_texts(val_ids: list[int] | Tensor, length: int, n: int) -> Tensor:
    """n texts of length + 1 ids (inputs and the next token), starts evenly spread.

    >>> long_texts(list(range(10)), 3, 2).tolist()
    [[0, 1, 2, 3], [6, 7, 8, 9]]
    """
    ids = torch.as_tensor(val_ids, dtype=torch.long)
    if ids.numel() < length + 1:
        raise ValueError(f"{ids.numel()} validation tokens; one text needs {length + 1}.")
    starts = torch.linspace(0, ids.numel() - length - 1, n).round().long()  # (n,)
    return ids[starts[:, None] + torch.arange(length + 1)]  # (n, length + 1)


def stretched(model: GPT, length: int) -> GPT:
    """The same weights in a model of context ``length``: a sinusoidal table gets the
    formula's later rows, no positions stay none. A learned table has nothing to add."""
    if model.config.positional == "learned":
        raise ValueError("a learned table has no row past position "
                         f"{model.config.context_length - 1}: crop the text instead.")
    with torch.random.fork_rng(devices=[]):  # building a GPT draws its initial weights
        twin = GPT(replace(model.config, context_length=length))
    twin.load_state_dict(model.state_dict())
    return twin.eval()


@torch.no_grad()
def position_losses(model: GPT, texts: Tensor, scheme: str, chunk: int = 1024) -> np.ndarray:
    """Mean cross-entropy at each position t of the texts (B, L+1): −log P(x_{t+1} | …),
    shape (L,). "crop": position t ≥ N sees x_{t−N+1..t}; "whole": one pass (module doc).
    """
    x, y = texts[:, :-1], texts[:, 1:]  # (B, L) each
    n, length = model.config.context_length, x.shape[1]
    if scheme == "whole":
        reader = model if model.config.rope else stretched(model, length)
        logits = reader(x)  # (B, L, |V|)
    elif scheme == "crop":
        windows = x.unfold(1, n, 1)[:, 1:].reshape(-1, n)  # (B·(L−N), N), ends at t = N..L−1
        last = torch.cat([model(w)[:, -1] for w in windows.split(chunk)])  # (B·(L−N), |V|)
        logits = torch.cat((model(x[:, :n]), last.view(x.shape[0], length - n, -1)), dim=1)
    else:
        raise ValueError(f"unknown scheme {scheme!r}; choose crop or whole.")
    loss = F.cross_entropy(logits.double().transpose(1, 2), y, reduction="none")  # (B, L)
    return loss.mean(0).numpy()


@torch.no_grad()
def val_loss(model: GPT, val_ids: list[int], recipe: Recipe) -> float:
    """The validation loss on the Trainer's fixed batches (the points of the curve)."""
    data = SlidingWindowDataset(val_ids, recipe.context_length, recipe.context_length)
    batches = data.fixed_batches(recipe.eval_batches, recipe.batch_size)
    losses = [F.cross_entropy(model(x).flatten(0, 1), y.flatten()).item() for x, y in batches]
    return sum(losses) / len(losses)


def unigram_loss(train_ids: list[int], val_ids: list[int], vocab_size: int) -> float:
    """The validation loss of predicting every token by its frequency in the training part
    (add-one smoothed): the best a model that ignores its context can do.

    >>> round(unigram_loss([0, 0, 1], [0, 1], 2), 4)   # p = (3/5, 2/5)
    0.7136
    """
    counts = torch.bincount(torch.as_tensor(train_ids), minlength=vocab_size).double() + 1
    p = counts / counts.sum()  # (|V|,)
    return float(-p[torch.as_tensor(val_ids)].log().mean())


def as_saved(model: GPT) -> GPT:
    """Round every weight to float16 and back, as the checkpoint stores it (half the bytes)."""
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(p.half().float())
    return model.eval()


def train_kind(kind: str, recipe: Recipe, data: Data, on_step: Callable[[StepInfo], None] |
               None = None, stop: threading.Event | None = None) -> Checkpoint:
    """Train one run; its card holds the curve and the long-text losses of the saved weights."""
    run = recipe.run_config(kind, data.tokenizer.vocab_size)
    trainer = Trainer(run, data.train_ids, data.val_ids, on_step=on_step, stop=stop)
    cpu = time.thread_time()
    result = trainer.train()
    cpu = time.thread_time() - cpu
    model = as_saved(trainer.model.eval())
    card = {
        "kind": kind, "recipe": asdict(recipe), "steps": result.steps_done,
        "stopped": result.stopped, "train_cpu_s": round(cpu, 2),
        "train_wall_s": round(result.elapsed_s, 2), "params": model.num_params(),
        "evals": [{"step": e.step, "val_loss": round(e.val_loss, 5),
                   "train_loss": None if math.isnan(e.train_loss) else round(e.train_loss, 5)}
                  for e in result.evals],
        "val_loss_as_saved": round(val_loss(model, data.val_ids, recipe), 5),
        "unigram_loss": round(unigram_loss(data.train_ids, data.val_ids, run.model.vocab_size), 5),
    }
    if result.stopped:  # the job throws a stopped run away: skip the long texts
        return Checkpoint(model, data.tokenizer, card)
    texts = long_texts(data.val_ids, recipe.long_length, recipe.long_texts)
    card["long"] = {"length": recipe.long_length, "texts": recipe.long_texts,
                    "losses": {s: [round(float(v), 5) for v in position_losses(model, texts, s)]
                               for s in SCHEMES[kind]}}
    return Checkpoint(model, data.tokenizer, card)


def save_run(ckpt: Checkpoint, folder: Path = FOLDER) -> Path:
    """Write one run to ``folder/<kind>/`` with its weights in float16 (≈ 220 KB)."""
    half = copy.deepcopy(ckpt.model).half()
    return save_checkpoint(folder / ckpt.card["kind"], half, ckpt.tokenizer, ckpt.card)


def load_runs(folder: Path = FOLDER) -> dict[str, Checkpoint]:
    """The four runs by kind, each checked: its config's positional is its kind, and its card
    holds a curve and a long-text loss per scheme."""
    runs = {}
    for kind in KINDS:
        ckpt = load_checkpoint(folder / kind)
        card, long = ckpt.card, ckpt.card.get("long", {})
        if ckpt.config.positional != kind or card.get("kind") != kind or not card.get("evals") \
                or set(long.get("losses", {})) != set(SCHEMES[kind]):
            raise CheckpointError(f"{folder / kind} is not the {kind!r} run of the comparison "
                                  "(config or card.json do not match): rerun "
                                  "scripts/make_positional.py.")
        runs[kind] = ckpt
    return runs


@dataclass
class Progress:
    """What the page draws while the four runs retrain."""

    status: str = "queued"  # queued, running, done, stopped, failed
    kind: str = ""  # the run in progress
    done: int = 0  # optimizer steps done over the four runs
    total: int = 0
    elapsed_s: float = 0.0
    message: str = ""
    runs: dict[str, Checkpoint] = field(default_factory=dict)  # set when all four are done


class CompareJob(SlotJob):
    """Retrain the four runs in a daemon thread, one trainer slot, one torch thread.

    >>> job = CompareJob(Recipe(steps=2, eval_interval=1, eval_batches=1, long_texts=2),
    ...                  TrainerSlots(1))
    >>> job.start(); job.join()
    True
    >>> sorted(job.progress().runs) == sorted(KINDS), job.progress().status
    (True, 'done')
    """

    def __init__(self, recipe: Recipe, slots: TrainerSlots) -> None:
        super().__init__(slots, "gptviz-positional")
        self.recipe = recipe
        self._state = Progress(total=len(KINDS) * recipe.steps)

    def progress(self) -> Progress:
        with self._lock:
            return replace(self._state, runs=dict(self._state.runs))

    def _set(self, **changes) -> None:
        with self._lock:
            self._state = replace(self._state, **changes)

    def _cancelled(self) -> None:
        self._set(status="stopped", message="Cancelled before it started.")

    def _work(self) -> dict:
        t0, runs = time.monotonic(), {}
        self._set(status="running")
        try:
            data = load_data(self.recipe)
            for n, kind in enumerate(KINDS):
                base = n * self.recipe.steps
                self._set(kind=kind, done=base)
                tick = lambda s, base=base: self._set(  # noqa: E731
                    done=base + s.step, elapsed_s=time.monotonic() - t0)
                runs[kind] = train_kind(kind, self.recipe, data, tick, self._stop)
                if self._stop.is_set():
                    return {"status": "stopped", "message": f"Stopped during the {kind} run."}
            return {"status": "done", "runs": runs, "elapsed_s": time.monotonic() - t0,
                    "message": f"Retrained all four in {time.monotonic() - t0:.0f} s."}
        except Exception as exc:  # the page shows a message, never a traceback
            return {"status": "failed", "message": f"Retraining failed: {exc}"}

    def _finish(self, end: dict | None) -> None:
        self._set(**(end or {"status": "failed", "message": "Retraining ended without a result."}))
