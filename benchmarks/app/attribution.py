"""Warm AppTest runs of the Transformer block page's "Who wrote the prediction" views, beside
two of the page's existing views, on every bundled model, in the same run.

    python -m benchmarks.app.attribution [--reps 7] [--model NAME]

Warm = the same AppTest session run again after a first (cold) run: the model loaded, its
forward pass and the figures cached, so what is timed is the page script, its figures and
their serialisation (``benchmarks.common.warm_runs``: the views take turns, run by run). The
ratio column is each view's warm time over the existing "The block, step by step" view's,
measured in the same run (machines here are noisy: compare ratios, not absolute times).
Target (issue 15): each new view ≤ 300 ms warm.
"""

from __future__ import annotations

from benchmarks.common import machine, warm_runs, warm_runs_args
from tests.helpers import app_test

EXISTING = ["The block, step by step", "Residual stream and logit lens"]
NEW = ["Direct logit attribution", "Commitment layer"]
TARGET_MS = 300


def block_runs(model: str, reps: int) -> dict[str, tuple[float, float]]:
    """{view: (cold s, median warm ms)} of each view on ``model``, the existing ones first."""
    return warm_runs({view: app_test("block", timeout=300, model=model, view=view)
                      for view in EXISTING + NEW}, reps)


def main() -> None:
    reps, models = warm_runs_args(__doc__)
    print(f"# Transformer block views, warm AppTest runs (median of {reps})\n\n{machine()}\n")
    print("| model | view | cold run (s) | warm run (ms) | × the block view | ≤ 300 ms |\n"
          "|---|---|---|---|---|---|")
    for model in models:
        rows = block_runs(model, reps)
        base = rows[EXISTING[0]][1]
        for view, (cold, warm) in rows.items():
            ok = ("yes" if warm <= TARGET_MS else "**no**") if view in NEW else "(existing)"
            print(f"| {model} | {view} | {cold:.2f} | {warm:.0f} | {warm / base:.2f} | {ok} |")


if __name__ == "__main__":
    main()
