"""Every page in Chromium beside a bare one-line Streamlit page, in the same run.

    python -m benchmarks.app.pages [--reps 5] [--clicks 10] [--floors] [--only Learning Lesson]
    python -m benchmarks.app.pages --langs es zh --clicks 0   # each page in es and zh too

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
effect measured in one run, beside the same bare page. ``--baseline-python PATH`` serves it
with another Python (another set of libraries: the app before a dependency's upgrade).

``--stock-each [PIECE ...]`` measures the speed-ups of ``gptviz/app/speedups/`` against stock
instead: one server each for the app as it is, with ``GPTVIZ_STOCK=1`` (every piece off)
and with ``GPTVIZ_STOCK=<piece>`` (that piece alone off; every piece if none is named),
beside the bare page. Each round loads every page from every server and the bare page, in
an order that turns round by round. It prints each page's median and its ratio to the bare
page, each piece's **gain** on each page (the page's median with that piece off minus its
median with every piece on, over the bare page's median: the share of a bare page's load
the piece saves), the server's RSS after the loads, and, for ``prefetch``, the lesson's
first plotly chart after the tab has been idle (what it is for; a load does not show it).

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
import json
import statistics
import sys
import time
import urllib.parse
from pathlib import Path

from benchmarks.app.lesson import FIRST_CHART, IDLE_S, REVEAL
from benchmarks.common import (
    BARE,
    PLOTLY_FLOOR,
    PLOTLY_PATH,
    ROOT,
    Server,
    app_at,
    bare_and_app,
    chromium,
    clicks,
    family_rss_mb,
    interleaved_loads,
    load,
    long_prompt,
    machine,
    report_loads,
    seconds_to_settle,
    timed,
)
from gptviz.app.speedups.stock import PIECES
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


def with_lang(path: str, lang: str) -> str:
    """``path`` with ``lang=`` added to its query.

    >>> with_lang("/", "es"), with_lang("/attention?view=x", "zh")
    ('/?lang=es', '/attention?view=x&lang=zh')
    """
    return f"{path}{'&' if '?' in path else '?'}lang={lang}"


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
    p.add_argument("--baseline-python", metavar="PATH", default=sys.executable,
                   help="the Python that serves --baseline (default: this one)")
    p.add_argument("--stock-each", nargs="*", metavar="PIECE", choices=PIECES,
                   help="measure each speed-up against stock (GPTVIZ_STOCK): every piece, "
                        "or those named")
    p.add_argument("--langs", nargs="*", default=[], metavar="LANG",
                   help="also load each page in these languages (?lang=), interleaved with "
                        "English: the cost of translation (issue 41)")
    p.add_argument("--keep", type=Path, metavar="JSON",
                   help="with --stock-each: the loads so far, written after every round; a "
                        "run started with the same file goes on from there")
    args = p.parse_args()
    models = bundled_models()
    longest = max(sorted(models), key=lambda m: load_checkpoint(models[m]).config.context_length)
    if args.stock_each is not None:
        shown = {k: v for k, v in pages(longest).items() if not args.only or k in args.only}
        stock_each(shown, list(args.stock_each or PIECES), args.reps, args.keep)
        return
    with bare_and_app() as (browser, bare, app), Server(NODELAY_BARE, log="bare-nodelay") as \
            nodelay, contextlib.ExitStack() as stack:
        shown = {k: v for k, v in pages(longest).items() if not args.only or k in args.only}
        if args.langs:
            shown = {row: path for k, v in shown.items() for row, path in
                     [(k, v)] + [(f"{k}, ?lang={lang}", with_lang(v, lang))
                                 for lang in args.langs]}
        if args.baseline:
            then = stack.enter_context(app_at(args.baseline, args.baseline_python))
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


AS_IS, STOCK_ALL = "0", "1"  # GPTVIZ_STOCK: every piece on, every piece off


def stock_each(shown: dict[str, str], pieces: list[str], reps: int, keep: Path | None = None
               ) -> None:
    """Each page from the app as it is, in stock mode, and with each of ``pieces`` off,
    beside the bare page, ``reps`` rounds after a warm-up round; the tables of the module's
    docstring. ``keep``: a JSON file of the rounds done, read first and written after each
    round (a run cut short goes on, after a new warm-up round)."""
    from playwright.sync_api import sync_playwright

    variants = {AS_IS: AS_IS, STOCK_ALL: STOCK_ALL, **{piece: piece for piece in pieces}}
    with contextlib.ExitStack() as stack:
        bare = stack.enter_context(Server(BARE, log="bare")).url
        servers = {name: stack.enter_context(Server(log=f"stock-{value}", env={
                   "GPTVIZ_STOCK": value, "STREAMLIT_SERVER_FILE_WATCHER_TYPE": "none"}))
                   for name, value in variants.items()}
        browser = chromium(stack.enter_context(sync_playwright()))
        stack.callback(browser.close)
        times: dict[tuple[str, str], list[float]] = {}
        floor: list[float] = []
        done = 0
        if keep and keep.is_file():
            kept = json.loads(keep.read_text())
            floor, done = kept["floor"], kept["rounds"]
            times = {(page, name): ts for page, name, ts in kept["times"]}
        order = ["bare", *variants]
        for rep in [0, *range(done + 1, reps + 1)]:
            for n, (page, path) in enumerate(shown.items()):
                turn = (rep * 5 + n) % len(order)  # who goes first changes page by page
                for name in order[turn:] + order[:turn]:
                    url = bare + "/" if name == "bare" else servers[name].url + path
                    seconds = load(browser, url)
                    if not rep:
                        continue
                    if name == "bare":
                        floor.append(seconds)
                    else:
                        times.setdefault((page, name), []).append(seconds)
            print(f"round {rep} of {reps} done", file=sys.stderr, flush=True)
            if keep and rep:
                keep.write_text(json.dumps({"rounds": rep, "floor": floor, "times": [
                    [page, name, ts] for (page, name), ts in times.items()]}))
            if rep and rep < reps:  # the tables so far, in case the run is cut short
                report_stock_each(times, floor, list(shown), list(variants), {}, {})
        rss = {name: family_rss_mb(server.proc.pid) for name, server in servers.items()}
        reveals = first_chart_after_idle(
            browser, {name: servers[name].url for name in (AS_IS, "prefetch") if name in servers},
            reps) if "prefetch" in pieces else {}
    report_stock_each(times, floor, list(shown), list(variants), rss, reveals)


def first_chart_after_idle(browser, apps: dict[str, str], reps: int) -> dict[str, list[float]]:
    """Seconds from Reveal at the lesson's step ``FIRST_CHART`` (its first plotly chart) to
    settled, in a new tab idle ``IDLE_S`` s after it settled: ``reps`` each per app,
    alternating, after a round that is not counted."""
    out: dict[str, list[float]] = {name: [] for name in apps}
    for rep in range(reps + 1):
        for name, app in (apps.items() if rep % 2 else list(apps.items())[::-1]):
            context = browser.new_context(viewport={"width": 1400, "height": 1000})
            page = context.new_page()
            page.goto(f"{app}/lesson?model={DEFAULT_MODEL}&step={FIRST_CHART}")
            seconds_to_settle(page, time.perf_counter())
            page.wait_for_timeout(IDLE_S * 1000)
            seconds = timed(page, page.locator(REVEAL).first.click)
            context.close()
            if rep:
                out[name].append(seconds)
    return out


def report_stock_each(times: dict[tuple[str, str], list[float]], floor: list[float],
                      shown: list[str], variants: list[str], rss: dict[str, float],
                      reveals: dict[str, list[float]]) -> None:
    bare = statistics.median(floor)
    med = {key: statistics.median(ts) for key, ts in times.items()}
    reps = len(next(iter(times.values())))
    print(f"\n# Each speed-up against stock, in Chromium; {reps} loads of each page from each "
          f"server after a warm-up round, each a new context\n\n{machine()}\n")
    print(f"Bare one-line page (same run, its loads among the pages'): median **{bare:.2f} s** "
          f"of {len(floor)} loads.\n\nEach page's median load, × the bare page's (and "
          "seconds):\n")
    print("| page, `GPTVIZ_STOCK=` | " + " | ".join(f"`{v}`" for v in variants) + " |\n|---|"
          + "---|" * len(variants))
    for page in shown:
        print(f"| {page} | " + " | ".join(
            f"{med[page, v] / bare:.2f}× ({med[page, v]:.2f})" for v in variants) + " |")
    if rss:
        print("| server RSS after the loads | "
              + " | ".join(f"{rss[v]:.0f} MB" for v in variants) + " |")
    off = [v for v in variants if v != AS_IS]
    print("\nGain of each piece on each page: (its page's median with the piece off − with "
          "every piece on) / the bare page's median; ≥ 0.10 keeps a piece for speed.\n")
    print("| `GPTVIZ_STOCK=` | " + " | ".join(shown) + " | largest |\n|---|"
          + "---|" * (len(shown) + 1))
    for v in off:
        gains = [(med[page, v] - med[page, AS_IS]) / bare for page in shown]
        print(f"| `{v}` | " + " | ".join(f"{g:+.2f}" for g in gains)
              + f" | **{max(gains):+.2f}** |")
    if reveals:
        shown_reveals = "; ".join(
            f"{name}: median {statistics.median(ts):.2f} s ({statistics.median(ts) / bare:.2f}×"
            f" the bare page's load)" for name, ts in reveals.items())
        print(f"\nThe lesson's first plotly chart (step {FIRST_CHART}'s Reveal) after the tab "
              f"has been idle {IDLE_S} s, {len(next(iter(reveals.values())))} each: "
              f"{shown_reveals}.")


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
