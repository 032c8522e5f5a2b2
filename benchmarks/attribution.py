"""Warm AppTest runs of the Transformer block page's "Who wrote the prediction" views, beside
two of the page's existing views, on every bundled model, in the same run.

    python benchmarks/attribution.py [--reps 7] [--model NAME]

Warm = the same AppTest session run again after a first (cold) run: the model loaded, its
forward pass and the figures cached, so what is timed is the page script, its figures and
their serialisation (as in benchmarks/app.py and benchmarks/circuits.py). The ratio column
is each view's warm time over the existing "The block, step by step" view's, measured in
the same run (machines here are noisy: compare ratios, not absolute times).
Target (issue 15): each new view ≤ 300 ms warm.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gptviz.checkpoints import bundled_models  # noqa: E402
from tests.helpers import app_test  # noqa: E402

EXISTING = ["The block, step by step", "Residual stream and logit lens"]
NEW = ["Direct logit attribution", "Commitment layer"]
TARGET_MS = 300


def warm_runs(model: str, reps: int) -> list[tuple[str, float, float]]:
    """(view, cold s, median warm ms) of each view on ``model``, the views interleaved
    rep by rep so that all of them see the same machine load."""
    sessions, cold = {}, {}
    for view in EXISTING + NEW:
        at = app_test("block", timeout=300, model=model, view=view)
        t = time.perf_counter()
        at.run()
        cold[view] = time.perf_counter() - t
        assert not at.exception, at.exception
        sessions[view] = at
    times: dict[str, list[float]] = {view: [] for view in sessions}
    for _ in range(reps):
        for view, at in sessions.items():
            t = time.perf_counter()
            at.run()
            times[view].append((time.perf_counter() - t) * 1e3)
            assert not at.exception, at.exception
    return [(view, cold[view], statistics.median(times[view])) for view in sessions]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=7)
    p.add_argument("--model", action="append", help="a bundled model (default: all)")
    args = p.parse_args()
    import torch

    torch.set_num_threads(1)  # as the tests run (shared cores)
    models = args.model or sorted(bundled_models())
    print(f"# Transformer block views, warm AppTest runs (median of {args.reps}), load "
          f"average {os.getloadavg()[0]:.1f}\n")
    print("| model | view | cold run (s) | warm run (ms) | × the block view | ≤ 300 ms |\n"
          "|---|---|---|---|---|---|")
    for model in models:
        rows = warm_runs(model, args.reps)
        base = rows[0][2]
        for view, cold, warm in rows:
            ok = ("yes" if warm <= TARGET_MS else "**no**") if view in NEW else "(existing)"
            print(f"| {model} | {view} | {cold:.2f} | {warm:.0f} | {warm / base:.2f} | {ok} |")


if __name__ == "__main__":
    main()
