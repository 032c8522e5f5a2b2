"""Every page in Chromium beside a bare one-line Streamlit page, in the same run.

    python -m benchmarks.app.pages [--reps 5] [--clicks 10] [--floors] [--only Learning Lesson]

Two servers run side by side on loopback: ``streamlit run app.py`` and a bare page
(``st.write("hello")``, written to a temporary folder), which sets the floor: what
Streamlit itself costs to open a page (websocket, script run, React render). Each load
is a **new browser context** (a new session, no cached page state), loads are
interleaved bare/page so both see the same machine load, and the first round only
warms the server's caches and is not counted. A page has settled when its script has
finished, no skeleton is left, every plotly chart has drawn its SVG and the page has not
changed for ``QUIET_MS`` (``benchmarks.common``). The result is each page's median over
the bare page's median.
A second reference, served by the bare page's server, adds one two-point plotly chart:
Streamlit fetches and evaluates plotly.js (4.6 MB) only for a page that draws a chart,
so this is the floor of every page with a figure; a column divides by it.
A third floor is the bare page on a server that sets ``TCP_NODELAY`` on its sockets, as
the app does first (``gptviz/app/speedups/sockets.py``): the stock server makes each file
asked for on a kept-open connection wait ~40 ms for a delayed ACK, which the app no longer
pays, so its column is the app's pages against a bare page without that wait either.
``--floors`` adds the same chart drawn by Streamlit's two other chart libraries, ECharts
and Vega-Lite: what a page with one figure would cost if its figures moved there.
``--baseline REV`` serves a third app, this repository as of git revision ``REV`` (a
temporary worktree), and loads each page there too, interleaved with the rest: a change's
effect measured in one run, beside the same bare page.

A load does not scroll: what a view draws below its fold (``gptviz/app/speedups/fold.py``)
waits for the reader, and a marker in view keeps the page unsettled until it is drawn. How
long a reader who scrolls there waits is timed after the loads, per page.

It also times the Generation page's "Next token", click to settled, ``--clicks`` in a row
in one session, beside a bare page's button click (``st.button`` and a rerun). Targets
(issue 11): every page ≤ 1.5× the bare page; "Next token" ≤ 300 ms on a quiet machine.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time
import urllib.parse

from benchmarks.common import (
    BARE,
    PLOTLY_FLOOR,
    PLOTLY_PATH,
    ROOT,
    Server,
    app_at,
    bare_and_app,
    clicks,
    interleaved_loads,
    long_prompt,
    report_loads,
    seconds_to_settle,
    timed,
)
from gptviz.checkpoints.folder import DEFAULT_MODEL, bundled_models, load_checkpoint

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
    with bare_and_app() as (browser, bare, app), Server(NODELAY_BARE, log="bare-nodelay") as \
            nodelay, contextlib.ExitStack() as stack:
        shown = {k: v for k, v in pages(longest).items() if not args.only or k in args.only}
        if args.baseline:
            then = stack.enter_context(app_at(args.baseline))
            shown = {row: path for k, v in shown.items()
                     for row, path in ((k, v), (f"{k}, at {args.baseline}", then + v))}
        floors = {PLOTLY_FLOOR: PLOTLY_PATH, **(OTHER_FLOORS if args.floors else {})}
        targets = {**{label: bare + path for label, path in floors.items()},
                   NODELAY_FLOOR: nodelay.url + "/", **shown}
        times = interleaved_loads(browser, bare, app, targets, args.reps)
        report_loads(times, "Pages", "page", over={PLOTLY_FLOOR: "bare + plotly chart",
                                                   NODELAY_FLOOR: "bare page, fixed server"})
        if not args.clicks:  # --clicks 0: the page loads only
            return
        gen = clicks(browser, f"{app}/generation?model={DEFAULT_MODEL}", "Next token",
                     args.clicks)
        floor_click = clicks(browser, bare + "/", "Again", args.clicks)
        folds = {name: below_the_fold(browser, app + path, 3)
                 for name, path in pages(longest).items() if "://" not in path}
    report_clicks(gen, floor_click)
    report_folds(folds)


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
