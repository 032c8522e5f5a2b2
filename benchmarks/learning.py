"""The Learning page's microscope view in Chromium beside a bare one-line Streamlit page,
measured in the same run.

    python benchmarks/learning.py [--reps 5]

The method is benchmarks/pages.py's: two servers side by side on loopback (``streamlit run
app.py`` and a bare ``st.write("hello")`` page), each load in a **new browser context** (a
new session), loads interleaved bare/page so both see the same machine load, and the first
round only warms the servers and is not counted. A page has settled when its script has
finished, no skeleton is left, every plotly chart has drawn and nothing has changed for
250 ms. Three cases:

- the default window, computed once and then served from the cache (what a class opening
  the page sees after the first student);
- a new window at every load (``?start=K``, never seen before): the gradient, gᵀHg and the
  SGD step for every η of the slider are computed during the load, for the default BPE
  model (N = 64) and the character model (N = 128).

Before the browser, the server's part alone: the page script run by AppTest (as the
server runs it, without a browser), cold (caches cleared: encoding, gradient, gᵀHg and
every η's step) and warm (a rerun, as after moving the η slider).

Target (issue 14): the microscope view settled in ≤ 1.5 s.
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.pages import BARE, load, serve  # noqa: E402
from gptviz.checkpoints import DEFAULT_MODEL  # noqa: E402
from tests.helpers import CHROMIUM, CHROMIUM_ARGS, app_test  # noqa: E402

TARGET_S = 1.5
CHAR_MODEL = "mathematics-char"


def cases() -> dict[str, object]:
    """Case label -> its path, or a function of the load's number giving a new path."""
    return {
        f"microscope, default window, cached ({DEFAULT_MODEL})": "/learning",
        f"microscope, a new window each load ({DEFAULT_MODEL})":
            lambda k: f"/learning?start={1000 + 37 * k}",
        f"microscope, a new window each load ({CHAR_MODEL})":
            lambda k: f"/learning?model={CHAR_MODEL}&start={1000 + 37 * k}",
    }


def server_side(reps: int) -> None:
    """Seconds of one script run of the page, cold and warm, by AppTest."""
    import streamlit as st

    print("| model | cold run (s), median | warm rerun (s), median |\n|---|---|---|")
    for model in (DEFAULT_MODEL, CHAR_MODEL):
        cold, warm = [], []
        for _ in range(reps):
            st.cache_data.clear()
            st.cache_resource.clear()
            at = app_test("learning", model=model)
            t = time.perf_counter()
            at.run()
            cold.append(time.perf_counter() - t)
            t = time.perf_counter()
            at.run()
            warm.append(time.perf_counter() - t)
            assert not at.exception, at.exception
        print(f"| {model} | {statistics.median(cold):.2f} | {statistics.median(warm):.2f} |")
    print()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=5)
    args = p.parse_args()
    from playwright.sync_api import sync_playwright

    print(f"# Learning page, server side (AppTest, {args.reps} runs each); load average "
          f"{os.getloadavg()[0]:.1f}\n")
    app_test("learning").run()  # imports and the first model load, not counted
    server_side(args.reps)

    targets = cases()
    count = itertools.count()
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "bare.py").write_text(BARE)
        bare_proc, bare = serve(Path(tmp), "bare.py")
        app_proc, app = serve(ROOT, "app.py")
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                times: dict[str, list[float]] = {name: [] for name in ["bare", *targets]}
                for rep in range(args.reps + 1):
                    for name, path in targets.items():
                        url = app + (path(next(count)) if callable(path) else path)
                        pair = [("bare", bare + "/"), (name, url)]
                        for label, u in pair if rep % 2 else pair[::-1]:
                            seconds = load(browser, u)
                            if rep:
                                times[label].append(seconds)
                browser.close()
        finally:
            for proc in (bare_proc, app_proc):
                proc.terminate()
                proc.wait(timeout=10)
    report(times)


def report(times: dict[str, list[float]]) -> None:
    floor = statistics.median(times["bare"])
    reps = len(next(iter(list(times.values())[1:])))
    print(f"# Learning page in Chromium, each load a new context; {reps} loads of each case "
          f"after a warm-up round; load average {os.getloadavg()[0]:.1f}\n")
    print(f"Bare one-line page (same run, loaded before or after each case): median "
          f"**{floor:.2f} s** of {len(times['bare'])} loads.\n")
    print(f"| case | median (s) | max (s) | × bare page | ≤ {TARGET_S} s |\n|---|---|---|---|---|")
    for name, ts in list(times.items())[1:]:
        med = statistics.median(ts)
        print(f"| {name} | {med:.2f} | {max(ts):.2f} | {med / floor:.2f}× | "
              f"{'yes' if med <= TARGET_S else 'no'} |")


if __name__ == "__main__":
    main()
