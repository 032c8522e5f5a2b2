"""The Generation page's speed: one "Next token" rerun, and "Generate 200" end to end.

    OMP_NUM_THREADS=1 python -m benchmarks.app.generation_page            # AppTest (server side)
    OMP_NUM_THREADS=1 python -m benchmarks.app.generation_page --browser  # + Chromium

AppTest runs the whole page script as the server does (widgets, the model step, the
figures and their serialisation) without a browser. ``--browser`` starts
``streamlit run app.py`` and times, in headless Chromium, from the click to the page
having settled (script finished, everything drawn). Beside each figure: the same work
done by the library alone (``generate.step`` and the KV-cached ``generate.generate``),
so the ratio shows what the page adds. Targets (issue 6): step <= 150 ms warm,
Generate 200 <= 2 s.

``--gpt2 SHAPE`` (issue 40) does the same with a GPT-2-shaped folder (random weights at the
real shapes, ``gpt2_shape.write_shaped``) and the prompt "The capital of France is":
"Generate n" and "Branch and continue" of ``--n`` tokens end to end in AppTest, beside the
engine's ``generate`` (KV cache) of as many tokens, ``step_through`` with its cache (the
Lesson's continuation) and without (what the pages ran before), in the same process.
Target: the page within 1.5x of ``generate``.
"""

from __future__ import annotations

import argparse
import statistics
import time

from benchmarks.common import Server, chromium, machine
from gptviz.checkpoints.folder import DEFAULT_MODEL, bundled_models, load_checkpoint
from gptviz.generation import sampling as gen
from tests.helpers import app_test

VIEWS = ["This step", "Three temperatures", "Sample N times", "Attention", "History"]


def ms(times: list[float]) -> str:
    return f"{statistics.median(times) * 1e3:.0f} ms (min {min(times) * 1e3:.0f})"


def apptest_step(view: str, reps: int) -> list[float]:
    """Seconds per warm "Next token" rerun with ``view`` open."""
    at = app_test("generation", timeout=300, view=view)
    at.run()
    clicks = 0

    def click() -> None:  # "Next token" sends its running total of clicks
        nonlocal clicks
        clicks += 1
        at.session_state["gen_next"] = {"clicks": clicks}

    for _ in range(3):  # warm: model loaded, caches and imports in place
        click()
        at.run()
    times = []
    for _ in range(reps):
        click()
        t = time.perf_counter()
        at.run()
        times.append(time.perf_counter() - t)
        assert not at.exception, at.exception
    return times


def press_generate(at, n: int) -> float:
    """Start the page's text over (where it has one), press "Generate n" and return the
    seconds of the rerun that makes the ``n`` tokens."""
    if not at.button(key="gen_reset").disabled:
        at.button(key="gen_reset").click().run()
    at.button(key="gen_run").click()
    t = time.perf_counter()
    at.run()
    seconds = time.perf_counter() - t
    assert len(at.session_state["gen_history"].turns) == n, "not every token was made"
    return seconds


def apptest_generate(n: int, reps: int) -> list[float]:
    """Seconds for "Generate n": the callback, the streamed loop, the rerun that redraws."""
    at = app_test("generation", timeout=300)
    at.run()
    at.number_input(key="gen_n").set_value(n).run()
    times = [press_generate(at, n) for _ in range(reps + 1)]
    return times[1:]  # the first is the warm-up


def library(n: int, reps: int) -> tuple[list[float], list[float], list[float]]:
    """The model work alone: one step, n steps (as the page runs them), n with the KV cache."""
    ckpt = load_checkpoint(bundled_models()[DEFAULT_MODEL])
    model = ckpt.model.eval()
    ids = ckpt.tokenizer.encode("The Steenrod problem asks which homology classes of a space")
    one, steps, cached = [], [], []
    for _ in range(reps + 1):
        t = time.perf_counter()
        gen.step(model, ids, 1.0, generator=None)
        one.append(time.perf_counter() - t)
        t = time.perf_counter()
        list(gen.step_through(model, ids, n, 1.0, seed=0))
        steps.append(time.perf_counter() - t)
        t = time.perf_counter()
        gen.generate(model, ids, n, 1.0, seed=0)
        cached.append(time.perf_counter() - t)
    return one[1:], steps[1:], cached[1:]


def browser(n: int, reps: int) -> tuple[list[float], list[float]]:
    """Click to settled page in Chromium: "Next token" and "Generate n"."""
    from playwright.sync_api import sync_playwright

    with Server() as server, sync_playwright() as pw:
        url = server.url
        b = chromium(pw)
        page = b.new_page(viewport={"width": 1400, "height": 1000})
        idle = '[data-testid="stApp"][data-test-script-state="notRunning"]'

        def settle() -> None:
            page.wait_for_timeout(50)  # let the click's rerun start
            page.wait_for_selector(idle, timeout=120_000)

        page.goto(url)
        settle()
        page.goto(f"{url}/generation")
        settle()
        step_times, gen_times = [], []
        for i in range(reps + 2):
            t = time.perf_counter()
            page.get_by_role("button", name="Next token").click()
            settle()
            if i >= 2:
                step_times.append(time.perf_counter() - t)
        box = page.get_by_label("n", exact=True)
        box.fill(str(n))
        box.press("Enter")
        settle()
        for _ in range(reps):
            page.get_by_role("button", name="Reset", exact=True).click()
            settle()
            t = time.perf_counter()
            page.get_by_role("button", name="Generate n").click()
            page.get_by_text(f"Generated {n} tokens").first.wait_for(timeout=120_000)
            settle()
            gen_times.append(time.perf_counter() - t)
        b.close()
    return step_times, gen_times


FRANCE = "The capital of France is"


def gpt2_generation(shape: str, n: int, reps: int) -> None:
    """The ``--gpt2`` measure (module doc), printed."""
    import os
    import tempfile
    from pathlib import Path

    from benchmarks.server.gpt2_shape import write_shaped

    with tempfile.TemporaryDirectory() as tmp:
        folder = write_shaped(Path(tmp) / f"{shape}-shaped", shape)
        os.environ.update(GPTVIZ_MODELS=tmp, GPTVIZ_HF_CACHE="0")
        ckpt = load_checkpoint(folder)
        model = ckpt.model.eval()
        ids = ckpt.tokenizer.encode(FRANCE)
        lib: dict[str, list[float]] = {"generate": [], "cached": [], "uncached": []}
        for _ in range(reps + 1):
            for name, run in (("generate", lambda: gen.generate(model, ids, n, 1.0, seed=0)),
                              ("cached", lambda: list(gen.step_through(model, ids, n, 1.0,
                                                                       seed=0))),
                              ("uncached", lambda: list(gen.step_through(
                                  model, ids, n, 1.0, seed=0, use_cache=False)))):
                t = time.perf_counter()
                run()
                lib[name].append(time.perf_counter() - t)
        lib = {k: v[1:] for k, v in lib.items()}  # the first round warms up
        page: dict[str, list[float]] = {"generate": [], "branch": []}
        for view, name in (("This step", "generate"), ("Branches", "branch")):
            at = app_test("generation", timeout=600, model=folder.name, prompt=FRANCE,
                          view=view)
            at.run()
            assert not at.exception, at.exception
            at.number_input(key="gen_n").set_value(n).run()
            for _ in range(reps + 1):
                seconds = press_generate(at, n)
                if name == "generate":
                    page[name].append(seconds)
                if name == "branch":  # at the step after the last: n more from there
                    at.button(key="gen_branch_run").click()
                    t = time.perf_counter()
                    at.run()
                    page[name].append(time.perf_counter() - t)
                    made = len(at.session_state["gen_history"].turns)
                    assert made >= 2 * n, f"Branch and continue: {made} tokens in all"
                assert not at.exception, at.exception
        page = {k: v[1:] for k, v in page.items()}
        ref = statistics.median(lib["generate"])
        print(f"## {shape}-shaped folder, prompt {FRANCE!r} ({len(ids)} tokens), {n} tokens, "
              f"median of {reps}\n\n{machine()}\n")
        print("| path | s | × generate |\n|---|---|---|")
        for label, times in (("engine: generate (KV cache), the reference", lib["generate"]),
                             ("engine: step_through with its cache (the Lesson)",
                              lib["cached"]),
                             ("engine: step_through without a cache (the pages before)",
                              lib["uncached"]),
                             ("page: Generate n, end to end (AppTest)", page["generate"]),
                             ("page: Branch and continue, end to end (AppTest)",
                              page["branch"])):
            med = statistics.median(times)
            print(f"| {label} | {med:.2f} (max {max(times):.2f}) | {med / ref:.2f}× |")
        print(f"\nload average at the end: {os.getloadavg()[0]:.2f}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--n", type=int, default=200)
    p.add_argument("--browser", action="store_true", help="also time it in headless Chromium")
    p.add_argument("--gpt2", choices=["distilgpt2", "gpt2", "gpt2-medium"],
                   help="a GPT-2-shaped folder of this shape instead (issue 40)")
    args = p.parse_args()
    if args.gpt2:
        gpt2_generation(args.gpt2, args.n, args.reps)
        return
    print(f"# Generation page, model {DEFAULT_MODEL}, median of {args.reps}\n\n{machine()}\n")
    one, steps, cached = library(args.n, args.reps)
    print("## Library alone")
    print(f"- one step (forward + P_T + choice): {ms(one)}")
    print(f"- {args.n} steps, each a full forward (what the page runs): {ms(steps)}")
    print(f"- {args.n} tokens with the KV cache (generate.generate): {ms(cached)}\n")
    print("## Page, AppTest (server side: script, model, figures)")
    for view in VIEWS:
        print(f"- Next token, '{view}' open: {ms(apptest_step(view, args.reps))}")
    runs = apptest_generate(args.n, max(3, args.reps // 2))
    print(f"- Generate {args.n}, end to end: {ms(runs)}")
    if args.browser:
        step_times, gen_times = browser(args.n, max(3, args.reps // 2))
        print("\n## Page in Chromium (click to settled page)")
        print(f"- Next token ('This step' open): {ms(step_times)}")
        print(f"- Generate {args.n}: {ms(gen_times)}")


if __name__ == "__main__":
    main()
