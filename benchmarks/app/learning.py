"""The Learning page's microscope view in Chromium beside a bare one-line Streamlit page,
measured in the same run.

    python -m benchmarks.app.learning [--reps 5] [--moves 10]

The method is benchmarks/app/pages.py's: two servers side by side on loopback (``streamlit run
app.py`` and a bare ``st.write("hello")`` page), each load in a **new browser context** (a
new session), loads interleaved bare/page so both see the same machine load, and the first
round only warms the servers and is not counted. A page has settled when its script has
finished, no skeleton is left, every plotly chart has drawn and nothing has changed for
250 ms. A reference and three cases:

- the bare page with one two-point plotly chart (``benchmarks.common.PLOTLY_FLOOR``, the
  pages benchmark's second reference: plotly.js is fetched and evaluated for a new context's
  first chart, a floor of every page that draws one);
- the default window, computed once and then served from the cache (what a class opening
  the page sees after the first student);
- a new window at every load (``?start=K``, never seen before): the gradient, gᵀHg and the
  SGD step for every η of the slider are computed during the load, for the default BPE
  model (N = 64) and the character model (N = 128).

Before the browser, the server's part alone: the page script run by AppTest (as the
server runs it, without a browser), cold (caches cleared: encoding, gradient, gᵀHg and
every η's step) and warm (a rerun, as after moving the η slider).

Then the way a student reaches it: the app opened at Home in a new context (settled), then
the sidebar's "Learning" link clicked, to the settled microscope (``--reps`` arrivals, each
in a new context; the page's JavaScript for widgets and formulas that Home already loaded is
not fetched again, as in a class).

Last, the Training replay's step slider on induction-2layer (it ships snapshots), in one
tab: the time from a key press on the slider to the settled redraw of the new step (its
embedding figure's title names the step; then the page has settled as above). A first
pass visits every step once, each step's figures computed (cold); then ``--moves`` moves
between steps already seen (warm). Beside it, in the same run, the bare page's button
clicked to settled (``benchmarks.common.clicks``).

Target (issue 14): the microscope view settled in ≤ 1.5 s.
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import time

from benchmarks.common import (
    PLOTLY_FLOOR,
    PLOTLY_PATH,
    bare_and_app,
    clicks,
    interleaved_loads,
    machine,
    report_loads,
    seconds_to_settle,
    timed,
)
from gptviz.analysis.replay import replay_steps
from gptviz.checkpoints.folder import DEFAULT_MODEL, bundled_models, load_checkpoint
from tests.helpers import app_test, unfold

TARGET_S = 1.5
CHAR_MODEL = "mathematics-char"
REPLAY_MODEL = "induction-2layer"
ARRIVED = """() => [...document.querySelectorAll('h4')]
    .some(e => e.textContent.includes('The loss of one prediction'))"""  # the microscope
REDRAWN = """step => [...document.querySelectorAll('.st-key-replay_pca .gtitle')]
    .some(e => e.textContent.includes(`at step ${step} on`))"""  # the new step's figure


def cases(bare: str) -> dict[str, object]:
    """Case label -> its URL or path on the app's server, or a function giving a new path at
    each load; ``bare`` is the bare page's server."""
    count = itertools.count()
    return {
        PLOTLY_FLOOR: bare + PLOTLY_PATH,
        f"microscope, default window, cached ({DEFAULT_MODEL})": "/learning",
        f"microscope, a new window each load ({DEFAULT_MODEL})":
            lambda: f"/learning?start={1000 + 37 * next(count)}",
        f"microscope, a new window each load ({CHAR_MODEL})":
            lambda: f"/learning?model={CHAR_MODEL}&start={1000 + 37 * next(count)}",
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


def replay_moves(browser, app: str, moves: int) -> tuple[list[float], list[float]]:
    """Seconds from a key press on the replay's step slider to the settled redraw: the first
    pass over every step (cold), then ``moves`` moves to steps already seen (warm)."""
    steps = replay_steps(load_checkpoint(bundled_models()[REPLAY_MODEL]))
    context = browser.new_context(viewport={"width": 1400, "height": 2400})
    page = context.new_page()
    page.goto(f"{app}/learning?model={REPLAY_MODEL}&view=Training+replay")
    seconds_to_settle(page, time.perf_counter())
    slider = page.locator(".st-key-replay_step").get_by_role("slider")
    at = len(steps) - 1  # the slider starts at the checkpoint's own step

    def move(to: int) -> float:
        nonlocal at
        key = "Home" if to == 0 else "ArrowRight" if to > at else "ArrowLeft"
        seconds = timed(page, lambda: slider.press(key), REDRAWN, steps[to])
        at = 0 if key == "Home" else to
        return seconds

    cold = [move(0)] + [move(i) for i in range(1, len(steps) - 1)]  # the last is cached
    warm, step = [], -1
    for _ in range(moves):  # back and forth over the steps, one at a time
        if not 0 <= at + step < len(steps):
            step = -step
        warm.append(move(at + step))
    context.close()
    return cold, warm


def arrivals(browser, app: str, reps: int) -> list[float]:
    """Seconds from a click on the sidebar's "Learning" link, on a settled Home page in a new
    context, to the settled microscope (its loss section drawn)."""
    out = []
    for _ in range(reps + 1):  # the first warms the server and is not counted
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        page = context.new_page()
        page.goto(f"{app}/")
        seconds_to_settle(page, time.perf_counter())
        link = page.get_by_test_id("stSidebarNav").get_by_role("link", name="Learning")
        out.append(timed(page, link.click, ARRIVED))
        context.close()
    return out[1:]


def microscope_moves(browser, app: str, moves: int) -> dict[str, list[float]]:
    """Seconds from a change on the open microscope to the settled page, in one tab: the
    learning rate η one notch along its slider (the step is recomputed from the cached
    gradient), and the target position t one up (a new prediction: loss, gradient,
    back-propagation and every η's step computed). Sections 2–4 are below the fold: the
    tab scrolls to them first, and η, drawn there, reruns that part alone (a fragment)."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.goto(f"{app}/learning?t=20")
    seconds_to_settle(page, time.perf_counter())
    unfold(page)
    eta = page.locator(".st-key-learn_eta").get_by_role("slider")
    up = page.locator(".st-key-t").get_by_test_id("stNumberInputStepUp")
    back = "back to the microscope from the gradient check (view tab)"
    out: dict[str, list[float]] = {"η one notch": [], "t one up (a new prediction)": [],
                                   back: []}
    for k in range(moves):
        out["η one notch"].append(timed(page, lambda k=k: eta.press(
            "ArrowRight" if k % 2 else "ArrowLeft")))
        out["t one up (a new prediction)"].append(timed(page, up.click))
    for _ in range(moves):
        timed(page, page.get_by_role("tab", name="Gradient check", exact=True).click)
        out[back].append(timed(page, page.get_by_role(
            "tab", name="One step under the microscope", exact=True).click, ARRIVED))
    context.close()
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--moves", type=int, default=10)
    args = p.parse_args()
    print(f"# Learning page, server side (AppTest, {args.reps} runs each)\n\n{machine()}\n")
    app_test("learning").run()  # imports and the first model load, not counted
    server_side(args.reps)
    with bare_and_app() as (browser, bare, app):
        times = interleaved_loads(browser, bare, app, cases(bare), args.reps)
        arrived = arrivals(browser, app, args.reps)
        inside = microscope_moves(browser, app, args.moves)
        cold, warm = replay_moves(browser, app, args.moves)
        floor = clicks(browser, bare + "/", "Again", args.moves)
    report_loads(times, "Learning page", "case", TARGET_S)
    report_inside({"arrival from Home by the sidebar link (a new context each)": arrived}
                  | inside, floor)
    report_moves(cold, warm, floor)


def report_inside(inside: dict[str, list[float]], floor: list[float]) -> None:
    print(f"\n## The microscope, one change in an open page, to settled; load average "
          f"{os.getloadavg()[0]:.1f}\n")
    print(f"| change | moves | median (s) | max (s) | × bare page's button | ≤ {TARGET_S} s |\n"
          "|---|---|---|---|---|---|")
    base = statistics.median(floor)
    for name, ts in inside.items():
        med = statistics.median(ts)
        print(f"| {name} | {len(ts)} | {med:.2f} | {max(ts):.2f} | {med / base:.2f}× | "
              f"{'yes' if max(ts) <= TARGET_S else 'no'} |")


def report_moves(cold: list[float], warm: list[float], floor: list[float]) -> None:
    print(f"\n## Training replay ({REPLAY_MODEL}): step slider, key press to settled redraw; "
          f"load average {os.getloadavg()[0]:.1f}\n")
    print("| what | moves | median (ms) | max (ms) | × bare page's button |\n"
          "|---|---|---|---|---|")
    base = statistics.median(floor)
    for name, ts in [("first pass, each step computed (cold)", cold),
                     ("steps already seen (warm)", warm),
                     ("bare one-line page, button click (same run)", floor)]:
        med = statistics.median(ts)
        print(f"| {name} | {len(ts)} | {med * 1e3:.0f} | {max(ts) * 1e3:.0f} | "
              f"{med / base:.2f}× |")


if __name__ == "__main__":
    main()
