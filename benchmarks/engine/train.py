"""Training speed and quality on Tiny Shakespeare (characters), nanoGPT's CPU "baby GPT".

    python -m benchmarks.engine.train compare       # ms/iter of nanoGPT (reference) vs gptviz
    python -m benchmarks.engine.train full --impl nanogpt      # 2000 iterations, val loss curve
    python -m benchmarks.engine.train full --impl gptviz --dtype float32
    python -m benchmarks.engine.train best --out /tmp/best-ckpt  # the best recipe, 45 s budget

Settings: 4 layers, 4 heads, 128 dims, context 64, batch 12, lr 1e-3 -> 1e-4 (cosine),
warmup 100, dropout 0, AdamW(0.9, 0.99, wd 0.1), clip 1.0. Validation loss: the same 100
fixed batches of 12 windows for every implementation (evaluation time excluded from
training time). MFU = achieved FLOP/s (nanoGPT's 6N + 12 L d T per token) / the float32
matmul peak measured at the start of the same run.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch

from benchmarks.common import SHAKESPEARE, machine, prose
from benchmarks.engine.nanogpt_ref import NanoGPT, train_step
from gptviz.data import SlidingWindowDataset
from gptviz.model import GPTConfig, RunConfig, TrainConfig
from gptviz.tokenizers.char import CharTokenizer
from gptviz.train.trainer import Trainer

BABY = dict(n_layer=4, n_head=4, d_model=128, context_length=64)
BEST = dict(learning_rate=6e-3, steps=1300, warmup_steps=100, min_lr=1e-4, dtype="bfloat16")


def load_text() -> str:
    path = prose()
    if path != SHAKESPEARE:
        print(f"note: {SHAKESPEARE} is absent; using {path.name}")
    return path.read_text(encoding="utf-8")


def matmul_peak(dtype: torch.dtype = torch.float32, n: int = 1024, reps: int = 20) -> float:
    """GFLOP/s of an n x n matmul on this machine, now."""
    a, b = torch.randn(n, n, dtype=dtype), torch.randn(n, n, dtype=dtype)
    for _ in range(3):
        a @ b
    t = time.perf_counter()
    for _ in range(reps):
        a @ b
    return 2 * n**3 * reps / (time.perf_counter() - t) / 1e9


def flops_per_token(n_params_no_pos: int, cfg: dict) -> float:
    return 6 * n_params_no_pos + 12 * cfg["n_layer"] * cfg["d_model"] * cfg["context_length"]


class Run:
    """One implementation set up on the corpus: ``step(i)`` trains, ``val()`` evaluates."""

    def __init__(self, impl: str, ids: np.ndarray, vocab: int, val_ds: SlidingWindowDataset,
                 steps: int, train_kw: dict, seed: int = 1337) -> None:
        self.impl, self.val_batches = impl, val_ds.fixed_batches(100, 12)
        n = len(ids) - len(val_ds.ids)
        torch.manual_seed(seed)
        if impl == "nanogpt":
            self.model = NanoGPT(vocab, 64, 4, 4, 128)
            self.opt = self.model.configure_optimizers(0.1, 1e-3, (0.9, 0.99))
            self.data = ids[:n]
            self.cfg = dict(lr=1e-3, min_lr=1e-4, warmup=100, iters=steps, block_size=64,
                            batch_size=12)
            self.n_params = sum(p.numel() for p in self.model.parameters()) - 64 * 128
        else:
            config = RunConfig(GPTConfig(vocab_size=vocab, bias=False, **BABY),
                               TrainConfig(steps=steps, seed=seed, device="cpu", **train_kw))
            self.trainer = Trainer(config, ids[:n].astype(np.int64), val_ds.ids)
            self.model, self.gen = self.trainer.model, torch.Generator().manual_seed(seed)
            self.model.train()
            self.n_params = self.model.num_params() - 64 * 128

    def step(self, i: int) -> float:
        if self.impl == "nanogpt":
            return train_step(self.model, self.opt, self.data, i, self.cfg)
        return self.trainer._step(i, self.gen).loss

    @torch.no_grad()
    def val(self) -> float:
        self.model.eval()
        if self.impl == "nanogpt":
            losses = [self.model(x, y)[1].item() for x, y in self.val_batches]
        else:
            losses = [self.trainer.loss(x, y).item() for x, y in self.val_batches]
        self.model.train()
        return sum(losses) / len(losses)


def setup(impl: str, steps: int, train_kw: dict) -> Run:
    text = load_text()
    if impl == "nanogpt":  # nanoGPT's prepare.py: the sorted characters, 65 of them
        stoi = {c: i for i, c in enumerate(sorted(set(text)))}
        ids, vocab = np.array([stoi[c] for c in text], dtype=np.uint16), len(stoi)
    else:
        tok = CharTokenizer()
        tok.train(text)
        ids, vocab = np.array(tok.encode(text), dtype=np.int64), tok.vocab_size
    n_val = len(ids) // 10
    val_ds = SlidingWindowDataset(ids[-n_val:].astype(np.int64), 64, 64)
    return Run(impl, ids, vocab, val_ds, steps, train_kw)


def compare(args: argparse.Namespace) -> None:
    peak = matmul_peak()
    print(f"float32 matmul peak: {peak:.0f} GFLOP/s; bf16: {matmul_peak(torch.bfloat16):.0f}")
    runs = {"nanoGPT (reference)": setup("nanogpt", 2000, {}),
            "gptviz float32": setup("gptviz", 2000, {"dtype": "float32"}),
            "gptviz bf16 autocast": setup("gptviz", 2000, {"dtype": "bfloat16"})}
    times: dict[str, list[float]] = {k: [] for k in runs}
    for block in range(args.blocks):  # interleaved, so load changes hit every run alike
        for name, run in runs.items():
            for i in range(5):
                run.step(block * args.iters + i)  # warm-up
            t = time.perf_counter()
            for i in range(args.iters):
                run.step(block * args.iters + 5 + i)
            times[name].append((time.perf_counter() - t) / args.iters)
    ref = np.median(times["nanoGPT (reference)"])
    print(f"{'implementation':24s} {'ms/iter':>8s} {'tokens/s':>9s} {'MFU':>5s} {'vs ref':>6s}")
    for name, ts in times.items():
        ms = float(np.median(ts))
        tps = 12 * 64 / ms
        mfu = tps * flops_per_token(runs[name].n_params, BABY) / (peak * 1e9)
        print(f"{name:24s} {ms * 1e3:8.1f} {tps:9.0f} {mfu:5.0%} {ref / ms:5.2f}x")


def full(args: argparse.Namespace, train_kw: dict, steps: int, budget_s: float | None) -> Run:
    run = setup(args.impl, steps, train_kw)
    print(f"{args.impl} {train_kw} steps={steps}")
    print(f"{'iter':>5s} {'train s':>8s} {'val loss':>8s}")
    print(f"{0:5d} {0.0:8.1f} {run.val():8.4f}")
    elapsed = 0.0
    for i in range(steps):
        t = time.perf_counter()
        run.step(i)
        elapsed += time.perf_counter() - t
        if (i + 1) % args.eval_interval == 0 or i + 1 == steps:
            print(f"{i + 1:5d} {elapsed:8.1f} {run.val():8.4f}", flush=True)
        if budget_s is not None and elapsed > budget_s:
            print(f"stopped: over the {budget_s:.0f} s budget at iter {i + 1}: val {run.val():.4f}")
            break
    print(f"training time {elapsed:.1f} s, {elapsed / (i + 1) * 1e3:.1f} ms/iter")
    return run


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("mode", choices=("compare", "full", "best"))
    p.add_argument("--impl", choices=("nanogpt", "gptviz"), default="gptviz")
    p.add_argument("--dtype", choices=("float32", "bfloat16"), default="float32")
    p.add_argument("--threads", type=int, default=None, help="torch intra-op threads")
    p.add_argument("--blocks", type=int, default=4, help="compare: interleaved blocks")
    p.add_argument("--iters", type=int, default=25, help="compare: timed iterations per block")
    p.add_argument("--eval-interval", type=int, default=250)
    p.add_argument("--out", type=Path, default=None, help="best: save the checkpoint here")
    p.add_argument("--lr", type=float, default=BEST["learning_rate"], help="best: peak lr")
    p.add_argument("--steps", type=int, default=BEST["steps"], help="best: schedule length")
    p.add_argument("--batch", type=int, default=12, help="best: batch size")
    p.add_argument("--budget", type=float, default=45.0, help="best: seconds (0: no limit)")
    args = p.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    print(machine())
    if args.mode == "compare":
        compare(args)
    elif args.mode == "full":
        full(args, {"dtype": args.dtype}, 2000, None)
    else:
        args.impl = "gptviz"
        kw = {**BEST, "learning_rate": args.lr, "batch_size": args.batch}
        kw.pop("steps")
        run = full(args, kw, args.steps, args.budget or None)
        if args.out:
            from gptviz.checkpoints.folder import save_checkpoint

            tok = CharTokenizer()
            tok.train(load_text())
            save_checkpoint(args.out, run.model.eval(), tok, {"recipe": BEST})
            print(f"saved {args.out}")


if __name__ == "__main__":
    main()
