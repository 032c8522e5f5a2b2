"""Generation speed (ms per token) of the baby GPT: nanoGPT's loop vs gptviz, with and
without the KV cache.

    python -m benchmarks.engine.generate --ckpt /tmp/best-ckpt --threads 1

Without --ckpt a freshly initialised model of the same shape is timed (speed does not
depend on the weights). Sampling: temperature 0.8, top-k 200, as nanoGPT's sample.py.
"Window" runs generate 63 tokens from a 1-token prompt, so the whole sequence fits the
64-token context and the cache is used at every step; "long" runs generate 500 tokens,
and after the first 64 the window slides, so every position shifts and the exact cached
path must recompute the window, as the no-cache path does.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch

from benchmarks.common import machine, median_seconds
from benchmarks.engine.nanogpt_ref import NanoGPT
from gptviz.checkpoints.folder import load_checkpoint
from gptviz.generation.sampling import generate
from gptviz.model import GPT, GPTConfig


def timed(fn, n_tokens: int, reps: int) -> float:
    """Median ms per token over ``reps`` runs (after one warm-up run)."""
    return median_seconds(fn, reps, warmup=1)[0] / n_tokens * 1e3


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ckpt", type=Path, default=None)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--reps", type=int, default=5)
    args = p.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.ckpt:
        model = load_checkpoint(args.ckpt).model
    else:
        torch.manual_seed(0)
        model = GPT(GPTConfig(vocab_size=69, bias=False)).eval()
    c = model.config
    ref = NanoGPT.like(c).eval()
    print(f"{machine()}\nmodel {c}")
    kw = dict(temperature=0.8, top_k=200)
    for label, n_new in (("window", c.context_length - 1), ("long", 500)):
        prompt = torch.zeros(1, 1, dtype=torch.long)
        rows = {
            "nanoGPT generate (reference, no cache)":
                lambda n=n_new, prompt=prompt: ref.generate(prompt, n, **kw),
            "gptviz generate, no cache":
                lambda n=n_new: generate(model, [0], n, seed=1, use_cache=False, **kw),
            "gptviz generate, KV cache":
                lambda n=n_new: generate(model, [0], n, seed=1, use_cache=True, **kw),
        }
        for name, fn in rows.items():
            print(f"{label:6s} {n_new:3d} tokens  {name:40s} {timed(fn, n_new, args.reps):6.3f} "
                  "ms/token", flush=True)


if __name__ == "__main__":
    main()
