"""The Lesson page: each step settled in Chromium with a warm cache, and the handout built,
each beside a reference measured in the same run.

    python -m benchmarks.app.lesson [--rounds 3] [--model mathematics-bpe]

Browser: two servers on loopback, ``streamlit run app.py`` and a bare page (a button and a
count, as benchmarks/app/pages.py); one tab walks the lesson in presenter mode at 1280 × 720.
A first round walks every step and reveals every question, which fills the caches (the
forward pass, the continuation, the figures); the next ``--rounds`` rounds are timed: →
(Next) to settled for every step, and R (reveal) to settled where there is a question. A
page has settled when its script has finished, no skeleton is left, every plotly chart has
drawn and nothing changed for 250 ms (``benchmarks.common.timed``, ``tests.helpers.SETTLED``).
The reference is a click on the bare page's button, to settled, in the same tab's browser.
Target (issue 13): each step ≤ 1 s warm.

First reveal (``--first-reveal N``): the Reveal of step 6 (the lesson's first plotly
chart) in a new tab, N times each way, in alternating order: clicked as soon as the page has
settled, and clicked after the tab has been idle ``IDLE_S`` seconds, by which time it has
loaded plotly.js in the background (``gptviz.app.speedups.prefetch``). The reference is a
click on the bare page's button in the same run.

Handout: ``lesson_handout`` for the default prompt, cold (nothing cached: every figure built
and the model run, as for a model trained in the session) and warm (a bundled model's
figures from the server's cache, as after a walk through the lesson), beside its floor:
the same file with plotly.js and no step. Target: ≤ 5 s.
"""

from __future__ import annotations

import argparse
import statistics
import time

from benchmarks.common import bare_and_app, machine, seconds_to_settle, timed
from gptviz.checkpoints.folder import DEFAULT_MODEL

N_STEPS = 14
REVEAL = ".st-key-lesson_reveal button"
FIRST_CHART = 6  # the first step whose revealed figure is a plotly chart
IDLE_S = 6  # long enough for the prefetch: 3 s of a still page, then an idle moment


def key(page, name: str):
    def press() -> None:
        page.evaluate("document.activeElement && document.activeElement.blur()")
        page.keyboard.press(name)
    return press


def walk(page, url: str) -> dict[str, float]:
    """One pass over the lesson from step 1: {"3 →": s, "3 R": s, …}."""
    page.goto(url)
    seconds_to_settle(page, time.perf_counter())
    out = {}
    for step in range(1, N_STEPS + 1):
        if step > 1:
            out[f"{step} →"] = timed(page, key(page, "ArrowRight"))
        if page.locator(REVEAL).count():
            out[f"{step} R"] = timed(page, key(page, "r"))
    return out


def browser_rounds(model: str, rounds: int) -> tuple[dict[str, list[float]], list[float]]:
    """The lesson's timed moves ({"3 →": [s, …], …}, one per round) and the bare page's
    button clicks, five a round, in the same browser context."""
    with bare_and_app() as (browser, bare, app):
        context = browser.new_context(viewport={"width": 1280, "height": 720})
        page = context.new_page()
        url = f"{app}/lesson?presenter=true&model={model}"
        walk(page, url)  # cold: fills the caches, not counted
        steps: dict[str, list[float]] = {}
        floor: list[float] = []
        bare_page = context.new_page()
        bare_page.goto(bare + "/")
        seconds_to_settle(bare_page, time.perf_counter())
        button = bare_page.get_by_role("button", name="Again", exact=True)
        for _ in range(rounds):
            for name, s in walk(page, url).items():
                steps.setdefault(name, []).append(s)
            floor += [timed(bare_page, button.click) for _ in range(5)]
    return steps, floor


def first_reveals(model: str, n: int) -> tuple[dict[str, list[float]], list[float]]:
    """Seconds from Reveal at step ``FIRST_CHART`` to settled in a new tab: "at once" and
    "after idle" (``n`` each, alternating), and ``n`` bare button clicks."""
    out: dict[str, list[float]] = {"at once": [], f"after {IDLE_S} s idle": []}
    floor: list[float] = []
    with bare_and_app() as (browser, bare, app):
        url = f"{app}/lesson?model={model}&step={FIRST_CHART}"
        for rep in range(n + 1):  # the first round fills the server's caches
            for name in out if rep % 2 else list(out)[::-1]:
                context = browser.new_context(viewport={"width": 1400, "height": 1000})
                page = context.new_page()
                page.goto(url)
                seconds_to_settle(page, time.perf_counter())
                if name != "at once":
                    page.wait_for_timeout(IDLE_S * 1000)
                s = timed(page, page.locator(REVEAL).first.click)
                context.close()
                if rep:
                    out[name].append(s)
        context = browser.new_context()
        page = context.new_page()
        page.goto(bare + "/")
        seconds_to_settle(page, time.perf_counter())
        button = page.get_by_role("button", name="Again", exact=True)
        floor = [timed(page, button.click) for _ in range(n + 2)][2:]
        context.close()
    return out, floor


def handout_times(model: str, reps: int) -> dict[str, list[float] | int]:
    """Seconds to build the handout cold (nothing cached: every figure built, the model
    run) and warm (the figures the page has drawn, from the server's cache, as after a
    walk through the lesson), the floor, and the file's size."""
    from dataclasses import replace

    from plotly.offline import get_plotlyjs

    from gptviz.app.lesson.handout import handout_html, lesson_handout
    from gptviz.app.lesson.run import build_lesson
    from gptviz.app.shared.inputs import Prompt, example_prompt
    from gptviz.app.shared.picker import Picked
    from gptviz.checkpoints.folder import bundled_models, load_checkpoint

    ckpt = load_checkpoint(bundled_models()[model])
    text = example_prompt(ckpt)
    tokens = ckpt.tokenizer.tokens(text)
    prompt = Prompt(text, tokens, max(0, len(tokens) - ckpt.config.context_length))
    ls = build_lesson(Picked(model, ckpt, True), prompt, 0, 0, 1.0)
    out: dict[str, list[float] | int] = {"cold": [], "warm": [], "floor": []}
    lesson_handout(ls)  # imports, plotly.js read from disk, the caches filled
    for _ in range(reps):
        for name, build in [("cold", lambda: lesson_handout(replace(ls, offline=True))),
                            ("warm", lambda: lesson_handout(ls)),
                            ("floor", lambda: handout_html("t", [], [], get_plotlyjs()))]:
            t = time.perf_counter()
            page = build().encode("utf-8")
            out[name].append(time.perf_counter() - t)
            out["size"] = len(page) if name == "warm" else out.get("size", 0)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--model", default=DEFAULT_MODEL)
    p.add_argument("--no-browser", action="store_true")
    p.add_argument("--first-reveal", type=int, default=0, metavar="N",
                   help="only time step 6's Reveal in a new tab, N times each way")
    args = p.parse_args()
    if args.first_reveal:
        reveals, bare = first_reveals(args.model, args.first_reveal)
        b = statistics.median(bare)
        print(f"# Lesson, Reveal of step {FIRST_CHART} in a new tab, model {args.model}\n\n"
              f"{machine()}\n\nBare page's button, click to settled: "
              f"median **{b * 1e3:.0f} ms** of {len(bare)}.\n")
        print("| Reveal clicked | median (ms) | max (ms) | × bare click |\n|---|---|---|---|")
        for name, ts in reveals.items():
            med = statistics.median(ts)
            print(f"| {name} | {med * 1e3:.0f} | {max(ts) * 1e3:.0f} | {med / b:.1f}× |")
        return
    print(f"# Lesson page, model {args.model}\n\n{machine()}\n")
    h = handout_times(args.model, 3)
    med = {k: statistics.median(v) for k, v in h.items() if k != "size"}
    print(f"Handout ({h['size'] / 1e6:.1f} MB), median of {len(h['cold'])}: cold "
          f"**{med['cold']:.2f} s** (max {max(h['cold']):.2f} s), warm **{med['warm']:.2f} s** "
          f"(max {max(h['warm']):.2f} s); the file with plotly.js alone {med['floor']:.2f} s.\n")
    if args.no_browser:
        return
    steps, bare = browser_rounds(args.model, args.rounds)
    b = statistics.median(bare)
    print(f"Bare page, click to settled: median **{b * 1e3:.0f} ms** of {len(bare)}.\n")
    print("| step, key | median (ms) | max (ms) | × bare click |\n|---|---|---|---|")
    for name, ts in steps.items():
        med = statistics.median(ts)
        print(f"| {name} | {med * 1e3:.0f} | {max(ts) * 1e3:.0f} | {med / b:.1f}× |")
    every = [t for ts in steps.values() for t in ts]
    print(f"\nAll {len(every)} timed moves: median {statistics.median(every) * 1e3:.0f} ms, "
          f"max {max(every) * 1e3:.0f} ms; {sum(t > 1 for t in every)} over 1 s.")


if __name__ == "__main__":
    main()
