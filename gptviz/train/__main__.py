"""``python -m gptviz.train``: train a tokenizer and a GPT on a text file, save a checkpoint.

    python -m gptviz.train --corpus input.txt --tokenizer char --layers 4 --steps 2000 --out ckpt/
    torchrun --standalone --nproc_per_node=2 -m gptviz.train --corpus input.txt ... --out ckpt/
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

from gptviz.analysis.induction import induction_test
from gptviz.checkpoints.folder import save_checkpoint
from gptviz.checkpoints.snapshots import Snapshots, fitting_count
from gptviz.data import decode_text, split_text
from gptviz.model import GPTConfig, RunConfig, TrainConfig
from gptviz.model.config import ACTIVATIONS, DTYPES, POSITIONALS
from gptviz.tokenizers import train_tokenizer
from gptviz.train import ddp
from gptviz.train.heldout import held_out_loss
from gptviz.train.trainer import EvalInfo, StepInfo, Trainer


class ProgressBar:
    """A one-line text bar: ``[#####.....] 120/2000 loss 2.310 0.8k tok/s``."""

    def __init__(self, total: int, stream: TextIO | None = None, width: int = 30) -> None:
        self.total, self.stream, self.width = total, stream or sys.stderr, width
        self.last = 0.0

    def update(self, done: int, text: str = "", force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self.last < 0.2 and done < self.total:
            return  # at most 5 redraws a second
        self.last = now
        filled = self.width * done // max(1, self.total)
        bar = "#" * filled + "." * (self.width - filled)
        self.stream.write(f"\r[{bar}] {done}/{self.total} {text}")
        self.stream.flush()

    def close(self) -> None:
        self.stream.write("\n")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m gptviz.train", description=__doc__.splitlines()[0])
    p.add_argument("--corpus", required=True, type=Path, help="UTF-8 text file to train on")
    p.add_argument("--tokenizer", choices=("char", "word", "bpe"), default="char")
    p.add_argument("--vocab-size", type=int, default=None,
                   help="tokenizer vocabulary (specials included)")
    m, t = GPTConfig(), TrainConfig()
    p.add_argument("--layers", type=int, default=m.n_layer)
    p.add_argument("--heads", type=int, default=m.n_head)
    p.add_argument("--d-model", type=int, default=m.d_model)
    p.add_argument("--d-ff", type=int, default=None, help="FFN width (default 4 * d_model)")
    p.add_argument("--context-length", type=int, default=m.context_length)
    p.add_argument("--activation", choices=ACTIVATIONS, default=m.activation)
    p.add_argument("--positional", choices=POSITIONALS, default=m.positional)
    p.add_argument("--dropout", type=float, default=m.dropout)
    p.add_argument("--no-tie", action="store_true", help="separate unembedding matrix")
    p.add_argument("--no-bias", action="store_true",
                   help="no biases in linear layers and LayerNorms")
    p.add_argument("--steps", type=int, default=t.steps)
    p.add_argument("--batch-size", type=int, default=t.batch_size)
    p.add_argument("--lr", type=float, default=t.learning_rate)
    p.add_argument("--min-lr", type=float, default=t.min_lr)
    p.add_argument("--warmup", type=int, default=t.warmup_steps)
    p.add_argument("--weight-decay", type=float, default=t.weight_decay)
    p.add_argument("--grad-clip", type=float, default=t.grad_clip)
    p.add_argument("--eval-interval", type=int, default=t.eval_interval)
    p.add_argument("--eval-batches", type=int, default=t.eval_batches)
    p.add_argument("--seed", type=int, default=t.seed)
    p.add_argument("--device", default=t.device)
    p.add_argument("--dtype", choices=DTYPES, default=t.dtype)
    p.add_argument("--keep", choices=("best", "last"), default="best",
                   help="save the weights of the evaluation with the lowest validation loss "
                        "(best, the default) or those of the last step")
    p.add_argument("--snapshots-mb", type=float, default=0.0,
                   help="keep snapshots of the weights (float16) at evenly spaced evaluations, "
                        "as many as fit this many MB, for the training replay")
    p.add_argument("--out", required=True, type=Path, help="checkpoint folder to write")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    return p.parse_args(argv)


def build_config(a: argparse.Namespace, vocab_size: int) -> RunConfig:
    model = GPTConfig(
        vocab_size=vocab_size, context_length=a.context_length, d_model=a.d_model,
        n_layer=a.layers, n_head=a.heads, d_ff=a.d_ff, activation=a.activation,
        positional=a.positional, dropout=a.dropout, tie_embeddings=not a.no_tie,
        bias=not a.no_bias,
    )
    train = TrainConfig(
        steps=a.steps, batch_size=a.batch_size, learning_rate=a.lr,
        min_lr=min(a.min_lr, a.lr), warmup_steps=min(a.warmup, a.steps),
        weight_decay=a.weight_decay,
        grad_clip=a.grad_clip, eval_interval=a.eval_interval, eval_batches=a.eval_batches,
        seed=a.seed, device=a.device, dtype=a.dtype,
    )
    return RunConfig(model, train)


def train_and_save(a: argparse.Namespace) -> Path | None:
    """Train and save; returns the checkpoint folder (None on non-zero ranks)."""
    dist = ddp.init_from_env(a.device)
    try:
        text = decode_text(a.corpus.read_bytes(), str(a.corpus), limit=50_000_000)
        # the held-out tail never shapes the tokenizer: it learns from the training part only
        train_text, val_text = split_text(text, TrainConfig().val_fraction)
        tokenizer = train_tokenizer(a.tokenizer, train_text, a.vocab_size)
        train_ids, val_ids = tokenizer.encode(train_text), tokenizer.encode(val_text)
        config = build_config(a, tokenizer.vocab_size)
        need = config.model.context_length + 1
        if min(len(train_ids), len(val_ids)) < need:
            raise ValueError(
                f"the corpus is too short to hold one window of {need} tokens in both the "
                f"training part ({len(train_ids):,} tokens) and the held-out last "
                f"{config.train.val_fraction:.0%} ({len(val_ids):,} tokens): use a longer text "
                "or a shorter context length.")
        show = not a.quiet and (dist is None or dist.is_main)
        read = getattr(tokenizer, "trained_chars", None)
        if show and read is not None and read < len(train_text):
            print(f"BPE learned its merges from the first {read:,} of {len(train_text):,} "
                  "training characters "
                  "(its memory bounds, ByteLevelBPE.limits); the model trains on all of them.")
        bar = ProgressBar(config.train.steps)
        last_val: list[str] = []

        def on_step(s: StepInfo) -> None:
            if show:
                bar.update(s.step, f"loss {s.loss:.3f} {s.tokens_per_s / 1000:.1f}k tok/s "
                                   f"{' '.join(last_val)}")

        snapshots, induction = Snapshots(), {}
        tracks_induction = config.model.context_length >= 20

        def on_eval(e: EvalInfo) -> None:
            last_val[:] = [f"val {e.val_loss:.3f}"]
            if e.step in keep_at:
                snapshots.add(e.step, trainer.model)
            if tracks_induction:  # the best head at length 10, 16 sequences: a quick curve
                with contextlib.suppress(ValueError):  # no letters or digits in the vocabulary
                    induction[e.step] = induction_test(trainer.model, tokenizer, 10, n=16).best[2]

        trainer = Trainer(config, train_ids, val_ids, on_step=on_step, on_eval=on_eval, dist=dist)
        keep_at = snapshot_steps(config.train, fitting_count(trainer.model,
                                                             int(a.snapshots_mb * 2**20)))
        result = trainer.train()
        if show:
            bar.close()
        if a.keep == "best":
            trainer.keep_best()
        kept = result.best if a.keep == "best" else result.evals[-1]
        card = {
            "corpus": a.corpus.name, "corpus_chars": len(text),
            "tokens": len(train_ids) + len(val_ids), "val_chars": len(val_text),
            "tokenizer": a.tokenizer, "steps": result.steps_done, "stopped": result.stopped,
            "train_config": config.train.to_dict(), "elapsed_s": round(result.elapsed_s, 2),
            "evals": [{"step": e.step, "train_loss": _finite(e.train_loss), "val_loss": e.val_loss,
                       **({"induction_score": round(induction[e.step], 4)}
                          if e.step in induction else {})} for e in result.evals],
            "final_val_loss": result.evals[-1].val_loss,
            "kept": a.keep, "kept_step": kept.step, "kept_val_loss": kept.val_loss,
            "held_out": held_out_loss(trainer.model, tokenizer, val_text).to_dict(),
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
            "world_size": dist.world_size if dist else 1,
        }
        out = None
        if dist is not None:
            card["replicas_identical"] = ddp.replicas_identical(trainer.model)
        if dist is None or dist.is_main:
            card["snapshot_steps"] = snapshots.steps
            out = save_checkpoint(a.out, trainer.model, tokenizer, card, snapshots or None)
        ddp.finish()  # every rank leaves together, after rank 0 has saved
        return out
    finally:
        ddp.cleanup()


def snapshot_steps(tc: TrainConfig, count: int) -> set[int]:
    """``count`` evaluation steps spread evenly between the first and the last (both left
    out: step 0 is the seed's initialisation, the end is the checkpoint itself).

    >>> sorted(snapshot_steps(TrainConfig(steps=1000, eval_interval=100), 3))
    [200, 500, 800]
    """
    evals = [s for s in range(tc.eval_interval, tc.steps, tc.eval_interval)]
    if count <= 0 or not evals:
        return set()
    if count >= len(evals):
        return set(evals)
    return {evals[round((i + 1) * (len(evals) + 1) / (count + 1)) - 1] for i in range(count)}


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None  # JSON has no NaN


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        out = train_and_save(args)
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if out is not None:
        print(f"saved checkpoint to {out}")
    return 0


if __name__ == "__main__":
    code = main()
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        # A rank of a data-parallel run leaves at once, its checkpoint saved and its process
        # group destroyed: gloo's threads, torn down later with the interpreter, sometimes
        # aborted a rank that had finished ("terminate called without an active exception").
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    raise SystemExit(code)
