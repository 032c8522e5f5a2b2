"""Training in a background thread: one job per browser session, a few at once per server.

No Streamlit here. A page starts a ``TrainingJob``, polls ``job.snapshot()`` to
draw, and calls ``job.stop()``; the thread only records numbers. A shared
``TrainerSlots`` bounds how many jobs train at once; the others wait, queued.

>>> from gptviz.model import TrainConfig
>>> run = RunConfig(model.config, TrainConfig(steps=20, batch_size=4, eval_batches=2))
>>> job = TrainingJob(run, tokenizer.encode("abcdef" * 20), tokenizer,
...                   slots=TrainerSlots(limit=1), prompt="ab")
>>> job.start(); job.join() and job.snapshot().status     # join: True once the thread ends
'done'
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np
import torch

from gptviz import i18n
from gptviz.checkpoints.folder import Checkpoint
from gptviz.checkpoints.snapshots import Snapshots
from gptviz.generation.sampling import encode_prompt, generate
from gptviz.i18n import _, ngettext, number
from gptviz.model import RunConfig
from gptviz.tokenizers.base import Tokenizer
from gptviz.tokenizers.readable import readable_decode
from gptviz.train.background import SlotJob
from gptviz.train.plan import flops_per_token
from gptviz.train.slots import TrainerSlots
from gptviz.train.trainer import DivergenceError, EvalInfo, StepInfo, Trainer

log = logging.getLogger(__name__)
ACTIVE = ("queued", "running")


@dataclass(frozen=True)
class Sample:
    """Text the model wrote from the fixed prompt at one evaluation."""

    step: int
    val_loss: float
    text: str


@dataclass
class Snapshot:
    """What the page draws, copied under the job's lock."""

    status: str  # queued, running, done, stopped, failed, cancelled
    step: int  # optimizer steps done
    total: int  # steps asked for
    losses: list[tuple[int, float]]  # (step, training loss of that step's batch)
    evals: list[EvalInfo]
    samples: list[Sample]
    said: Callable[[], str]  # why it ended, or why it waits: ``message`` words it
    elapsed_s: float  # wall time since the job got its slot
    tokens_per_s: float
    others_running: int  # trainers holding a slot (when queued)

    @property
    def active(self) -> bool:
        return self.status in ACTIVE

    @property
    def message(self) -> str:
        """Why it ended, or why it waits, worded now in the reader's language (the thread
        that trains has no reader: it keeps what to say, not the words)."""
        return self.said()


class TrainingJob(SlotJob):
    """Train ``run`` on ``ids`` in a daemon thread; ``snapshot()`` for the page, ``stop()`` to end.

    The thread never touches a UI. Stopping ends training at the next step and
    keeps the model trained so far; a diverging loss ends it with a message.
    """

    def __init__(self, run: RunConfig, ids: torch.Tensor | np.ndarray | list[int],
                 tokenizer: Tokenizer, *, slots: TrainerSlots, prompt: str = "",
                 card: dict[str, Any] | None = None, max_seconds: float = 600.0,
                 sample_tokens: int = 80, threads: int = 1) -> None:
        super().__init__(slots, "gptviz-training", threads)
        self.run, self.tokenizer = run, tokenizer
        self.prompt, self.card = prompt, dict(card or {})
        self.max_seconds, self.sample_tokens = max_seconds, sample_tokens
        self.checkpoint: Checkpoint | None = None  # set when training ends with a usable model
        self.snapshots = Snapshots()  # the weights at evaluations, bounded, for the replay
        self.registered_as: str | None = None  # the page's name for it, once registered
        # As int64; an array is copied (the page hands over its shared, read-only int32 ids).
        self._ids = ids.to(torch.long) if isinstance(ids, torch.Tensor) else \
            torch.from_numpy(np.array(ids, dtype=np.int64))
        self._trainer: Trainer | None = None
        self._time_limited = False
        self._t0 = 0.0
        self._state = Snapshot("queued", 0, run.train.steps, [], [], [], lambda: "", 0.0, 0.0, 0)
        self.lang = i18n.current()  # the starting reader's: words the thread itself writes

    # ---- the page's side -------------------------------------------------------
    def snapshot(self) -> Snapshot:
        with self._lock:
            s = self._state
            others = self.slots.running if s.status == "queued" else 0
            return Snapshot(s.status, s.step, s.total, list(s.losses), list(s.evals),
                            list(s.samples), s.said, s.elapsed_s, s.tokens_per_s, others)

    @property
    def active(self) -> bool:
        return self.snapshot().active

    # ---- the thread's side -----------------------------------------------------
    def _set(self, **changes: Any) -> None:
        with self._lock:
            for key, value in changes.items():
                setattr(self._state, key, value)

    def _cancelled(self) -> None:
        self._ids = None
        self._set(status="cancelled", said=lambda: _("Cancelled before it started; no model."))

    def _work(self) -> dict[str, Any]:
        self._t0 = time.monotonic()
        self._set(status="running")
        try:
            with i18n.use(self.lang):
                return self._train()
        except DivergenceError as exc:
            why = exc.say  # not the exception: its traceback would keep the trainer alive
            return {"status": "failed", "said": lambda: _(
                "Training diverged: {why} No model was kept.").format(why=why())}
        except Exception as exc:  # the page shows a message, never a traceback
            log.exception("training failed")
            text = str(exc)
            return {"status": "failed",
                    "said": lambda: _("Training failed: {why}").format(why=text)}

    def _release(self) -> None:
        self._trainer = None  # frees the optimizer state and the corpus
        self._ids = None

    def _finish(self, end: dict[str, Any] | None) -> None:
        # The thread's last act: once a page sees a final status, the checkpoint is
        # set and nothing of this job changes any more, so it can be registered at once.
        self._set(**(end or {"status": "failed",
                             "said": lambda: _("Training ended without a result.")}))

    def _train(self) -> dict[str, Any]:
        """Train; return the final status and message (published when the thread ends)."""
        self._trainer = Trainer(self.run, self._ids, on_step=self._on_step,
                                on_eval=self._on_eval, stop=self._stop)
        result = self._trainer.train()
        model = self._trainer.model.eval()
        evals = result.evals
        tokens = result.steps_done * self.run.train.batch_size * self.run.model.context_length
        if result.steps_done >= 50:  # a few steps alone are not a steady speed
            self.slots.record_speed(flops_per_token(self.run.model) * tokens / result.elapsed_s)
        self.card.update({
            "steps": result.steps_done, "stopped": result.stopped,
            "train_config": self.run.train.to_dict(), "elapsed_s": round(result.elapsed_s, 2),
            "evals": [{"step": e.step, "val_loss": e.val_loss,
                       "train_loss": e.train_loss if math.isfinite(e.train_loss) else None}
                      for e in evals],
            "final_val_loss": evals[-1].val_loss,
            "final_val_perplexity": evals[-1].val_perplexity,
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
        })
        self.card["snapshot_steps"] = list(self.snapshots.steps)
        self.checkpoint = Checkpoint(model, self.tokenizer, self.card, self.snapshots or None)
        n, last, limit = result.steps_done, evals[-1], self.max_seconds
        limited, stopped = self._time_limited, result.stopped

        def said() -> str:
            facts = dict(n=number(n, 0, grouping=True), loss=number(last.val_loss, 3),
                         ppl=number(last.val_perplexity, 1), limit=number(limit, 0))
            if limited:
                return ngettext("Stopped at the time limit of {limit} s after {n} step: "
                                "validation loss {loss} (perplexity {ppl}).",
                                "Stopped at the time limit of {limit} s after {n} steps: "
                                "validation loss {loss} (perplexity {ppl}).", n).format(**facts)
            if stopped:
                return ngettext("Stopped after {n} step: validation loss {loss} (perplexity "
                                "{ppl}).", "Stopped after {n} steps: validation loss {loss} "
                                "(perplexity {ppl}).", n).format(**facts)
            return ngettext("Finished after {n} step: validation loss {loss} (perplexity "
                            "{ppl}).", "Finished after {n} steps: validation loss {loss} "
                            "(perplexity {ppl}).", n).format(**facts)

        return {"status": "stopped" if limited or stopped else "done",
                "said": said}

    def _on_step(self, info: StepInfo) -> None:
        with self._lock:
            self._state.losses.append((info.step, info.loss))
            self._state.step = info.step
            self._state.elapsed_s = time.monotonic() - self._t0
            self._state.tokens_per_s = info.tokens_per_s
        if time.monotonic() - self._t0 > self.max_seconds:
            self._time_limited = True
            self._stop.set()

    def _on_eval(self, info: EvalInfo) -> None:
        stopping = self._stop.is_set()  # then skip the sample and answer promptly
        text = "" if stopping else self._sample()
        if not stopping and info.step > 0 and self._trainer is not None:
            self.snapshots.add(info.step, self._trainer.model)
        with self._lock:
            self._state.evals.append(info)
            if not stopping:
                self._state.samples.append(Sample(info.step, info.val_loss, text))

    def _sample(self) -> str:
        """A continuation of the prompt by the model as it is now (fixed seed, T = 0.8)."""
        if self._trainer is None or self.sample_tokens < 1:
            return ""
        try:
            ids = encode_prompt(self.tokenizer, self.prompt)
            out = generate(self._trainer.model, ids, self.sample_tokens, temperature=0.8, seed=0)
            return readable_decode(self.tokenizer, out[len(ids):])  # no "�"
        except ValueError as exc:  # e.g. a prompt the tokenizer cannot encode
            return _("(no sample: {why})").format(why=exc)


@dataclass
class SessionTrainer:
    """The one training job of a browser session; ``close`` stops it and lets memory go.

    >>> job = TrainingJob(RunConfig(model.config), ids * 50, tokenizer, slots=TrainerSlots(1))
    >>> holder = SessionTrainer(); holder.submit(job)
    >>> holder.close(timeout=30); holder.job is None
    True
    """

    job: TrainingJob | None = None
    history: list[str] = field(default_factory=list)  # names registered by this session

    def submit(self, job: TrainingJob) -> None:
        if self.job is not None and self.job.active:
            raise RuntimeError(_("this session is already training; stop that run first."))
        self.job = job
        job.start()

    def close(self, timeout: float = 0.0) -> None:
        """Called when the session ends (tab closed): stop the thread, drop the job."""
        if self.job is not None:
            self.job.stop()
            self.job.join(timeout)
        self.job = None
