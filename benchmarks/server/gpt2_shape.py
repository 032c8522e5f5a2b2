"""A GPT-2-small-shaped model (random weights, the real shapes: 124M parameters) saved as a
Hugging Face folder, beside the bundled default model, in one run: load time, RSS, the
forward pass and run_with_cache on 64 tokens; with --pages, each page's warm rerun.

    python -m benchmarks.server.gpt2_shape [--repeat 5] [--pages]

Each model is measured in a fresh Python process (so RSS is its own): RSS after the
imports, after the load, and the peak. Times are medians; the machine's other load
shows in them, so compare the two rows of one run rather than absolute times.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import ROOT, machine, proc_kb

PAGES = ["home", "embeddings", "positional", "attention", "block", "generation", "lesson",
         "learning", "training"]


def rss_mb(field: str = "VmRSS") -> float:
    """This process's resident memory now (VmRSS) or at its peak since exec (VmHWM), MB."""
    return proc_kb(field) / 1024


def measure(path: str, repeat: int) -> dict:
    """One model, in this (fresh) process."""
    import torch

    from gptviz.checkpoints.folder import load_checkpoint

    before = rss_mb()
    t0 = time.perf_counter()
    ckpt = load_checkpoint(path)
    load_s = time.perf_counter() - t0
    loaded = rss_mb()
    ids = torch.randint(0, ckpt.config.vocab_size, (1, 64))
    times: dict[str, list[float]] = {"forward": [], "run_with_cache": []}
    with torch.no_grad():
        for _ in range(repeat):
            for name, run in (("forward", lambda: ckpt.model(ids)),
                              ("run_with_cache", lambda: ckpt.model.run_with_cache(ids))):
                t0 = time.perf_counter()
                run()
                times[name].append(time.perf_counter() - t0)
    return {"params": ckpt.model.num_params(), "load_s": load_s, "rss_imports_mb": before,
            "rss_loaded_mb": loaded, "rss_peak_mb": rss_mb("VmHWM"),
            "threads": torch.get_num_threads(),
            **{f"{k}_ms": 1000 * statistics.median(v) for k, v in times.items()}}


def page_reruns(model: str, models_dir: str | None) -> dict[str, float]:
    """Each page's warm rerun (the second run of the same script), in ms, through AppTest."""
    if models_dir:
        os.environ["GPTVIZ_MODELS"] = models_dir
    os.environ["GPTVIZ_HF_CACHE"] = "0"
    from tests.helpers import app_test

    out = {}
    for page in PAGES:
        at = app_test(model=model, timeout=600)
        if page != "home":
            at.switch_page(f"app_pages/{page}.py")
        at.run()  # cold: the model, the forward pass, the figures
        t0 = time.perf_counter()
        at.run()
        out[page] = 1000 * (time.perf_counter() - t0)
        if at.exception:
            out[page] = float("nan")
    return out


def child(args: list[str]) -> dict:
    out = subprocess.run([sys.executable, "-m", "benchmarks.server.gpt2_shape", *args],
                         capture_output=True, text=True, cwd=ROOT, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--pages", action="store_true", help="also each page's warm rerun")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # a child: measure this model
    parser.add_argument("--pages-of", nargs=2, help=argparse.SUPPRESS)  # a child: name, dir
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(args.one, args.repeat)))
        return
    if args.pages_of:
        name, folder = args.pages_of
        print(json.dumps(page_reruns(name, folder or None)))
        return

    import torch

    from gptviz.checkpoints.folder import DEFAULT_MODEL, bundled_models
    from gptviz.checkpoints.gpt2_weights import save_hf_gpt2
    from gptviz.model import GPT, GPT_CONFIG_124M, GPTConfig

    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        torch.manual_seed(0)
        config = GPTConfig(**{**GPT_CONFIG_124M, "dropout": 0.0, "activation": "gelu_tanh"})
        save_hf_gpt2(Path(tmp) / "gpt2-shaped", GPT(config))
        size = sum(f.stat().st_size for f in (Path(tmp) / "gpt2-shaped").iterdir()) / 1e6
        print(f"wrote a random GPT-2-small-shaped Hugging Face folder ({size:.0f} MB) in "
              f"{time.perf_counter() - t0:.1f} s", file=sys.stderr)
        print(machine())
        rows = {DEFAULT_MODEL: child(["--one", str(bundled_models()[DEFAULT_MODEL]),
                                      "--repeat", str(args.repeat)]),
                "gpt2-shaped": child(["--one", str(Path(tmp) / "gpt2-shaped"),
                                      "--repeat", str(args.repeat)])}
        print("| model | params | load (s) | RSS after imports (MB) | RSS loaded (MB) | "
              "peak RSS (MB) | forward, 64 tokens (ms) | run_with_cache, 64 tokens (ms) |")
        print("|---|---|---|---|---|---|---|---|")
        for name, r in rows.items():
            print(f"| {name} | {r['params'] / 1e6:.1f}M | {r['load_s']:.2f} | "
                  f"{r['rss_imports_mb']:.0f} | {r['rss_loaded_mb']:.0f} | "
                  f"{r['rss_peak_mb']:.0f} | {r['forward_ms']:.1f} | "
                  f"{r['run_with_cache_ms']:.1f} |")
        print(f"\ntorch threads: {rows['gpt2-shaped']['threads']}; medians of {args.repeat}.")
        if args.pages:
            reruns = {DEFAULT_MODEL: child(["--pages-of", DEFAULT_MODEL, ""]),
                      "gpt2-shaped": child(["--pages-of", "gpt2-shaped", tmp])}
            print("\n| page | warm rerun, " + " (ms) | ".join(reruns) + " (ms) |")
            print("|---|---|---|")
            for page in PAGES:
                print(f"| {page} | " + " | ".join(f"{r[page]:.0f}" for r in reruns.values())
                      + " |")


if __name__ == "__main__":
    main()
