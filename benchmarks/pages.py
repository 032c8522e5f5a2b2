"""Every page in Chromium beside a bare one-line Streamlit page, in the same run.

    python benchmarks/pages.py [--reps 5] [--clicks 10] [--floors] [--only Learning Lesson]

Two servers run side by side on loopback: ``streamlit run app.py`` and a bare page
(``st.write("hello")``, written to a temporary folder), which sets the floor: what
Streamlit itself costs to open a page (websocket, script run, React render). Each load
is a **new browser context** (a new session, no cached page state), loads are
interleaved bare/page so both see the same machine load, and the first round only
warms the server's caches and is not counted. A page has settled when its script has
finished, no skeleton is left, every plotly chart has drawn its SVG and the page has not
changed for ``QUIET_MS``. The result is each page's median over the bare page's median.
A second reference, served by the bare page's server, adds one two-point plotly chart:
Streamlit fetches and evaluates plotly.js (4.6 MB) only for a page that draws a chart,
so this is the floor of every page with a figure; the last column divides by it.
A third floor is the bare page on a server that sets ``TCP_NODELAY`` on its sockets, as
the app does first (``gptviz/app/shared/sockets.py``): the stock server makes each file
asked for on a kept-open connection wait ~40 ms for a delayed ACK, which the app no longer
pays, so its column is the app's pages against a bare page without that wait either.
``--floors`` adds the same chart drawn by Streamlit's two other chart libraries, ECharts
and Vega-Lite: what a page with one figure would cost if its figures moved there.
``--baseline REV`` serves a third app, this repository as of git revision ``REV`` (a
temporary worktree), and loads each page there too, interleaved with the rest: a change's
effect measured in one run, beside the same bare page.

A load does not scroll: what a view draws below its fold (``gptviz/app/shared/fold.py``)
waits for the reader, and a marker in view keeps the page unsettled until it is drawn. How
long a reader who scrolls there waits is timed after the loads, per page.

It also times the Generation page's "Next token", click to settled, ``--clicks`` in a row
in one session, beside a bare page's button click (``st.button`` and a rerun). Targets
(issue 11): every page ≤ 1.5× the bare page; "Next token" ≤ 300 ms on a quiet machine.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.app import long_prompt  # noqa: E402
from gptviz.checkpoints.folder import DEFAULT_MODEL, bundled_models, load_checkpoint  # noqa: E402
from tests.helpers import (  # noqa: E402
    CHROMIUM,
    CHROMIUM_ARGS,
    free_port,
    settle,
    start_streamlit,
    wait_until_healthy,
)

QUIET_MS = 250
BARE = """import streamlit as st
st.write("hello")
st.session_state.n = st.session_state.get("n", 0) + 1
st.button("Again")
st.caption(st.session_state.n)
if "plotly" in st.query_params:  # the plotly.js floor: the bare page and one tiny chart
    st.plotly_chart({"data": [{"type": "scatter", "x": [0, 1], "y": [0, 1]}]})
if "echarts" in st.query_params:  # the same chart in Streamlit's two other chart libraries
    st.echarts_chart({"xAxis": {"type": "value"}, "yAxis": {"type": "value"},
                      "series": [{"type": "line", "data": [[0, 0], [1, 1]]}]})
if "vega" in st.query_params:
    st.vega_lite_chart({"mark": "line", "data": {"values": [{"x": 0, "y": 0}, {"x": 1, "y": 1}]},
                        "encoding": {"x": {"field": "x", "type": "quantitative"},
                                     "y": {"field": "y", "type": "quantitative"}}})
"""  # a click changes the page (the count), so its rerun can be seen
PLOTLY_FLOOR = "bare page + one 2-point plotly chart (reference)"
PLOTLY_PATH = "/?plotly=1"  # on the bare page's server
NODELAY_FLOOR = "bare page, its server with the app's TCP_NODELAY fix (reference)"
NODELAY_BARE = f"""import sys
sys.path.insert(0, {str(ROOT)!r})
from gptviz.app.speedups.sockets import no_delay
no_delay()
""" + BARE  # the bare page on a server that gets what app.py does first (sockets.py)
OTHER_FLOORS = {  # --floors: what a page with one chart would cost in another library
    "bare page + one 2-point ECharts chart (reference)": "/?echarts=1",
    "bare page + one 2-point Vega-Lite chart (reference)": "/?vega=1",
}
WATCH = """() => {
    window.__gvRan = false;
    const app = document.querySelector('[data-testid="stApp"]');
    window.__gvBefore = app.innerHTML;
    new MutationObserver((_, obs) => {
        if (app.getAttribute('data-test-script-state') === 'running') {
            window.__gvRan = true; obs.disconnect(); }
    }).observe(app, {attributes: true, attributeFilter: ['data-test-script-state']});
}"""  # notes the rerun a click starts, however short it is
RAN = """() => window.__gvRan ||
    document.querySelector('[data-testid="stApp"]').innerHTML !== window.__gvBefore"""


def pages(model: str) -> dict[str, str]:
    """Page label -> path and query of the app's page as a student opens it."""
    prompt, n = long_prompt(model)
    long = urllib.parse.urlencode({"model": model, "prompt": prompt})
    c = load_checkpoint(bundled_models()[model]).config
    return {
        "Home": "/", "Tokenizers": "/tokenizers", "Embeddings": "/embeddings",
        "Positional encoding": "/positional", "Attention": "/attention",
        f"Attention, {n} tokens, all {c.n_layer * c.n_head} heads ({model})":
            f"/attention?{long}&view=All+heads",
        "Transformer block": "/block", "Generation": "/generation", "Training": "/training",
        "Lesson": "/lesson", "Learning": "/learning",
    }


def seconds_to_settle(page, started: float) -> float:
    """Seconds from ``started`` (a ``time.perf_counter()``) until the page settled."""
    settle(page, QUIET_MS, timeout_ms=180_000, polling_ms=20)
    return time.perf_counter() - started - QUIET_MS / 1000


def load(browser, url: str) -> float:
    """Seconds from navigation to a settled page, in a fresh browser context."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    t = time.perf_counter()
    page.goto(url)
    seconds = seconds_to_settle(page, t)
    context.close()
    return seconds


def timed(page, action: Callable[[], object], until: str = RAN, arg: object = None) -> float:
    """Seconds from ``action()`` (a click, a key press) to a settled page that satisfies
    ``until`` (JavaScript called with ``arg``; by default: the rerun it started has shown)."""
    page.evaluate(WATCH)
    t = time.perf_counter()
    action()
    page.wait_for_function(until, arg=arg, timeout=60_000, polling=5)
    return seconds_to_settle(page, t)


def clicks(browser, url: str, label: str, n: int) -> list[float]:
    """Seconds from each of ``n`` clicks on the button ``label`` to a settled page."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.goto(url)
    seconds_to_settle(page, time.perf_counter())
    button = page.get_by_role("button", name=label, exact=True).first
    times = [timed(page, button.click) for _ in range(n + 2)]
    context.close()
    return times[2:]  # two clicks to warm up


def below_the_fold(browser, url: str, n: int) -> list[float]:
    """Seconds from scrolling to a view's fold marker (``fold.below``) to the settled page
    with the part below drawn, ``n`` times, each in a new context after a settled load;
    empty when the page has no marker in its first view."""
    out = []
    for _ in range(n):
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        page = context.new_page()
        page.goto(url)
        seconds_to_settle(page, time.perf_counter())
        marker = page.locator(".gv-fold").first
        if not marker.count():
            context.close()
            return []
        out.append(timed(page, marker.scroll_into_view_if_needed,
                         until="() => !document.querySelector('.gv-fold')"))
        context.close()
    return out


def serve(script_dir: Path, script: str) -> tuple[subprocess.Popen, str]:
    """Start ``streamlit run script`` in ``script_dir`` on a free port: (process, base URL)."""
    port = free_port()
    proc = start_streamlit(port, subprocess.DEVNULL, script, script_dir)
    url = f"http://127.0.0.1:{port}"
    if not wait_until_healthy(url, 120):
        proc.terminate()
        raise SystemExit(f"streamlit did not start for {script}")
    return proc, url


@contextlib.contextmanager
def bare_and_app() -> Iterator[tuple[object, str, str]]:
    """Chromium, the bare page's URL and the app's, both servers on loopback; all stopped
    afterwards."""
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "bare.py").write_text(BARE)
        bare_proc, bare = serve(Path(tmp), "bare.py")
        app_proc, app = serve(ROOT, "app.py")
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                yield browser, bare, app
                browser.close()
        finally:
            for proc in (bare_proc, app_proc):
                proc.terminate()
                proc.wait(timeout=10)


@contextlib.contextmanager
def app_at(rev: str) -> Iterator[str]:
    """The app as of git revision ``rev``, served from a temporary worktree: its base URL."""
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "app"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), rev],
                       check=True, capture_output=True)
        try:
            proc, url = serve(tree, "app.py")
            try:
                yield url
            finally:
                proc.terminate()
                proc.wait(timeout=10)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)],
                           check=False, capture_output=True)


def interleaved_loads(browser, bare: str, app: str, targets: dict[str, str | Callable[[], str]],
                      reps: int) -> dict[str, list[float]]:
    """Seconds to a settled page: ``reps`` loads of each target (a path of the app, or a
    function giving a new path at each load), each beside a load of the bare page, in
    alternating order, after a first round that is not counted. Keys: "bare", then targets."""
    times: dict[str, list[float]] = {name: [] for name in ["bare", *targets]}
    for rep in range(reps + 1):
        for name, path in targets.items():
            server = bare if name == PLOTLY_FLOOR or name in OTHER_FLOORS else app
            path = path() if callable(path) else path
            pair = [("bare", bare + "/"), (name, path if "://" in path else server + path)]
            for label, url in pair if rep % 2 else pair[::-1]:
                seconds = load(browser, url)
                if rep:
                    times[label].append(seconds)
    return times


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--clicks", type=int, default=10)
    p.add_argument("--floors", action="store_true",
                   help="also the bare page with one ECharts and one Vega-Lite chart")
    p.add_argument("--only", nargs="*", default=None, metavar="PAGE",
                   help="load only these pages (labels as in the table, e.g. Learning)")
    p.add_argument("--baseline", metavar="REV",
                   help="also load each page from the app as of git revision REV")
    args = p.parse_args()
    models = bundled_models()
    longest = max(sorted(models), key=lambda m: load_checkpoint(models[m]).config.context_length)
    with bare_and_app() as (browser, bare, app), tempfile.TemporaryDirectory() as tmp, \
            contextlib.ExitStack() as stack:
        (Path(tmp) / "bare.py").write_text(NODELAY_BARE)
        nodelay_proc, nodelay = serve(Path(tmp), "bare.py")
        try:
            shown = {k: v for k, v in pages(longest).items() if not args.only or k in args.only}
            if args.baseline:
                then = stack.enter_context(app_at(args.baseline))
                shown = {row: path for k, v in shown.items()
                         for row, path in ((k, v), (f"{k}, at {args.baseline}", then + v))}
            targets = {PLOTLY_FLOOR: PLOTLY_PATH, NODELAY_FLOOR: nodelay + "/",
                       **(OTHER_FLOORS if args.floors else {}), **shown}
            times = interleaved_loads(browser, bare, app, targets, args.reps)
            report_loads(times, "Pages", "page")
            if not args.clicks:  # --clicks 0: the page loads only
                return
            gen = clicks(browser, f"{app}/generation?model={DEFAULT_MODEL}", "Next token",
                         args.clicks)
            floor_click = clicks(browser, bare + "/", "Again", args.clicks)
            folds = {name: below_the_fold(browser, app + path, 3)
                     for name, path in pages(longest).items() if "://" not in path}
        finally:
            nodelay_proc.terminate()
    report_clicks(gen, floor_click)
    report_folds(folds)


def report_loads(times: dict[str, list[float]], title: str, what: str,
                 target_s: float | None = None) -> None:
    """The table of ``interleaved_loads``: each target's median and max, and its median over
    the bare page's; with ``target_s``, whether the median meets it."""
    floor = statistics.median(times["bare"])
    reps = len(next(iter(list(times.values())[1:])))
    print(f"# {title} in Chromium, each load a new context; {reps} loads of each {what} after "
          f"a warm-up round; load average {os.getloadavg()[0]:.1f}\n")
    print(f"Bare one-line page (same run, loaded before or after each {what}): median "
          f"**{floor:.2f} s** of {len(times['bare'])} loads.\n")
    target = f" ≤ {target_s} s |" if target_s else ""
    plotly = statistics.median(times[PLOTLY_FLOOR]) if PLOTLY_FLOOR in times else None
    fixed = statistics.median(times[NODELAY_FLOOR]) if NODELAY_FLOOR in times else None
    extra = " × bare + plotly chart |" * bool(plotly) + " × bare page, fixed server |" * bool(fixed)
    print(f"| {what} | median (s) | max (s) | × bare page |{extra}{target}\n"
          f"|---|---|---|---|{'---|' * (bool(plotly) + bool(fixed) + bool(target_s))}")
    for name, ts in list(times.items())[1:]:
        med = statistics.median(ts)
        ok = f" {'yes' if med <= target_s else 'no'} |" if target_s else ""
        over = f" {med / plotly:.2f}× |" * bool(plotly) + f" {med / fixed:.2f}× |" * bool(fixed)
        print(f"| {name} | {med:.2f} | {max(ts):.2f} | {med / floor:.2f}× |{over}{ok}")


def report_clicks(gen: list[float], floor_click: list[float]) -> None:
    g, b = statistics.median(gen), statistics.median(floor_click)
    print(f"\n\"Next token\", click to settled, {len(gen)} clicks in a row: median "
          f"{g * 1e3:.0f} ms, p90 {sorted(gen)[int(0.9 * (len(gen) - 1))] * 1e3:.0f} ms, max "
          f"{max(gen) * 1e3:.0f} ms; a bare page's button: median {b * 1e3:.0f} ms "
          f"({g / b:.2f}×).")


def report_folds(folds: dict[str, list[float]]) -> None:
    shown = [f"{name} {statistics.median(ts) * 1e3:.0f} ms (max {max(ts) * 1e3:.0f})"
             for name, ts in folds.items() if ts]
    print("\nBelow the fold (``fold.below``), from scrolling to the marker to the settled page "
          "with that part drawn, median of 3: " + "; ".join(shown) + ".")


if __name__ == "__main__":
    main()
