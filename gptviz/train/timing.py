"""How long a run will take on this machine, timed on the run's own shapes.

A FLOP count divided by a nominal rate misses what a small model spends outside its
matrix products (the optimizer, Python, small kernels) and whether this CPU has fast bf16:
the Training page said "19 s" for a run that took 45 s. Here a throwaway copy of the run
(random ids, the same model and batch shapes, one torch thread as the trainer uses) takes
a few real steps, an evaluation and a sample, and the estimate is the sum of those over the
plan (``benchmarks/engine/train_estimate.py`` checks it against full runs).
"""

from __future__ import annotations

import functools
import json
import time
from dataclasses import dataclass, replace

import torch

from gptviz.generation.sampling import generate
from gptviz.model import GPTConfig, RunConfig, TrainConfig
from gptviz.train.trainer import Trainer

TIMED_STEPS = 3  # optimizer steps timed after one warm-up step


@dataclass(frozen=True)
class StepTimes:
    """Seconds of one optimizer step, one evaluation and one sample on this machine."""

    step_s: float
    eval_s: float
    sample_s: float

    def run_seconds(self, run: RunConfig, samples: bool = True) -> float:
        """The whole plan: every step, the evaluations at 0, every ``eval_interval`` steps
        and at the end, each with its sample when the Training page draws one.

        >>> from gptviz.model import TrainConfig
        >>> plan = RunConfig(model.config, TrainConfig(steps=100, eval_interval=50))
        >>> round(StepTimes(0.01, 0.1, 0.2).run_seconds(plan), 6)  # 100 steps, evals at 0, 50, 100
        1.9
        """
        t = run.train
        n_evals = t.steps // t.eval_interval + 1 + (t.steps % t.eval_interval != 0)
        return t.steps * self.step_s + n_evals * (self.eval_s + (self.sample_s if samples else 0))


def time_steps(run: RunConfig, sample_tokens: int = 80, seed: int = 0) -> StepTimes:
    """Time ``TIMED_STEPS`` optimizer steps, one evaluation and one ``sample_tokens``-token
    sample of a fresh model with ``run``'s shapes, on one torch thread (as the trainer runs)."""
    m, t = run.model, run.train
    gen = torch.Generator().manual_seed(seed)
    n = m.context_length * (t.batch_size * max(t.eval_batches, 1) + t.batch_size + 2)
    ids = torch.randint(m.vocab_size, (n,), generator=gen)
    probe = replace(run, train=replace(t, steps=TIMED_STEPS + 1))
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        trainer = Trainer(probe, ids, ids)
        trainer.model.train()
        trainer._step(0, gen)  # warm-up: first-call allocations and kernel choices
        t0 = time.perf_counter()
        for step in range(1, TIMED_STEPS + 1):
            trainer._step(step, gen)
        step_s = (time.perf_counter() - t0) / TIMED_STEPS
        t0 = time.perf_counter()
        trainer.evaluate()
        eval_s = time.perf_counter() - t0
        sample_s = 0.0
        if sample_tokens > 0:
            trainer.model.eval()
            t0 = time.perf_counter()
            generate(trainer.model, [0], sample_tokens, temperature=0.8, seed=0)
            sample_s = time.perf_counter() - t0
    finally:
        torch.set_num_threads(before)
    return StepTimes(step_s, eval_s, sample_s)


@functools.lru_cache(maxsize=64)
def _cached(key: str, sample_tokens: int) -> StepTimes:
    model, train = json.loads(key)
    return time_steps(RunConfig(GPTConfig.from_dict(model), TrainConfig.from_dict(train)),
                      sample_tokens)


def estimate_run_seconds(run: RunConfig, sample_tokens: int = 80) -> float:
    """The run's time on this machine (``time_steps`` once per shape, kept for the process;
    the step count does not change the shape, so a new count costs nothing)."""
    shape = replace(run.train, steps=1, eval_interval=1)
    key = json.dumps([run.model.to_dict(), shape.to_dict()], sort_keys=True)
    return _cached(key, sample_tokens).run_seconds(run, samples=sample_tokens > 0)
