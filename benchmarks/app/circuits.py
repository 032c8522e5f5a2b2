"""Warm AppTest runs of the Attention page's circuits views, on every bundled model.

    python -m benchmarks.app.circuits [--reps 7] [--model NAME]

Warm = the same AppTest session run again after a first (cold) run: the model loaded,
its forward pass, the induction test and the figures cached, so what is timed is the
page script, its figures and their serialisation (``benchmarks.common.warm_runs``: the
views take turns, run by run). The cold run includes the standard induction test (Head
taxonomy) and building the figures.
Target (issue 15): each new view ≤ 300 ms warm.
"""

from __future__ import annotations

from benchmarks.common import machine, warm_runs, warm_runs_args
from tests.helpers import app_test

VIEWS = ["Circuits of a head", "OV circuit", "Head taxonomy",
         "Summed heads", "Rollout"]
TARGET_MS = 300


def circuits_runs(model: str, reps: int) -> dict[str, tuple[float, float]]:
    """{view: (cold s, median warm ms)} of each circuits view on ``model``."""
    return warm_runs({view: app_test("attention", timeout=300, model=model, view=view,
                                     layer="1", head="1") for view in VIEWS}, reps)


def main() -> None:
    reps, models = warm_runs_args(__doc__)
    print(f"# Circuits views, warm AppTest runs (median of {reps})\n\n{machine()}\n")
    print("| model | view | cold run (s) | warm run (ms) | ≤ 300 ms |\n|---|---|---|---|---|")
    for model in models:
        for view, (cold, warm) in circuits_runs(model, reps).items():
            ok = "yes" if warm <= TARGET_MS else "**no**"
            print(f"| {model} | {view} | {cold:.2f} | {warm:.0f} | {ok} |")


if __name__ == "__main__":
    main()
