"""Warm AppTest runs of the Attention page's circuits views, on every bundled model.

    python benchmarks/circuits.py [--reps 7] [--model NAME]

Warm = the same AppTest session run again after a first (cold) run: the model loaded,
its forward pass, the induction test and the figures cached, so what is timed is the
page script, its figures and their serialisation (as in benchmarks/app.py). The cold
run includes the standard induction test (Head taxonomy) and building the figures.
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

VIEWS = ["Circuits of a head", "OV circuit", "Head taxonomy",
         "Summed heads", "Rollout"]
TARGET_MS = 300


def warm_runs(model: str, reps: int) -> list[tuple[str, float, float]]:
    """(view, cold s, median warm ms) of each circuits view on ``model``."""
    rows = []
    for view in VIEWS:
        at = app_test("attention", timeout=300, model=model, view=view, layer="1", head="1")
        t = time.perf_counter()
        at.run()
        cold = time.perf_counter() - t
        assert not at.exception, at.exception
        times = []
        for _ in range(reps):
            t = time.perf_counter()
            at.run()
            times.append((time.perf_counter() - t) * 1e3)
        rows.append((view, cold, statistics.median(times)))
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=7)
    p.add_argument("--model", action="append", help="a bundled model (default: all)")
    args = p.parse_args()
    import torch

    torch.set_num_threads(1)  # as the tests run (shared cores)
    models = args.model or sorted(bundled_models())
    print(f"# Circuits views, warm AppTest runs (median of {args.reps}), load average "
          f"{os.getloadavg()[0]:.1f}\n")
    print("| model | view | cold run (s) | warm run (ms) | ≤ 300 ms |\n|---|---|---|---|---|")
    for model in models:
        for view, cold, warm in warm_runs(model, args.reps):
            ok = "yes" if warm <= TARGET_MS else "**no**"
            print(f"| {model} | {view} | {cold:.2f} | {warm:.0f} | {ok} |")


if __name__ == "__main__":
    main()
