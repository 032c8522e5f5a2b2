"""Speed of the model pages: warm AppTest runs of every view, and the browser time until
the Attention page is fully drawn for a 128-token prompt with all heads.

    python -m benchmarks.app.app [--reps 7] [--no-browser] [--langs es zh]

Warm = the same AppTest session run again after a first (cold) run: models loaded and
forward passes cached, so what is timed is the page script, its figures and their
serialisation; a page's views take turns, run by run (``benchmarks.common.warm_runs``, which
the circuits and attribution benchmarks use too). The browser figure is the time from
``page.goto`` to: script finished, every plotly chart drawn (its SVG present) and every
formula typeset. It uses the bundled model with the longest context (the
prompt is cut to exactly 128 tokens of the bundled corpus, or to the context if that is
shorter). Targets (issue 5): ≤ 300 ms per warm run with the default model; ≤ 1.5 s for
the Attention page.
"""

from __future__ import annotations

import argparse
import statistics
import time
import urllib.parse

from benchmarks.common import Server, chromium, long_prompt, machine, warm_runs
from gptviz.checkpoints.folder import DEFAULT_MODEL, bundled_models, load_checkpoint
from tests.helpers import MODEL_PAGE_VIEWS, app_test, wait_for_app

DRAWN = """(charts) => {
    const app = document.querySelector('[data-testid="stApp"]');
    if (!app || app.getAttribute('data-test-script-state') !== 'notRunning') return false;
    if (document.querySelector('[data-testid="stSkeleton"]')) return false;
    const all = document.querySelectorAll(
        '[data-testid="stPlotlyChart"], .gv-heat, .gv-svgbox').length;
    const drawn = document.querySelectorAll('[data-testid="stPlotlyChart"] .main-svg, '
        + '.gv-heat[data-drawn="1"], .gv-svgbox[data-drawn="1"]').length;
    return all >= charts && drawn >= all && document.querySelectorAll('.katex').length > 0;
}"""  # script finished, every chart drawn (plotly's SVG, a canvas heatmap, an SVG chart),
# formulas typeset


def warm_apptest(model: str, reps: int, langs: tuple[str, ...] = ("en",)
                 ) -> list[tuple[str, str, str, float, float]]:
    """(page, view, language, cold s, median warm ms) for every view of every page, each
    language's session of a view interleaved with the others'."""
    rows = []
    for page, views in MODEL_PAGE_VIEWS.items():
        runs = warm_runs({(v, lang): app_test(page, timeout=300, model=model, view=v,
                                              lang=lang)
                          for v in views for lang in langs}, reps,
                         {(v, lang): lang for v in views for lang in langs})
        rows += [(page, view, lang, cold, warm) for (view, lang), (cold, warm) in runs.items()]
    return rows


def browser_attention(model: str, reps: int) -> tuple[int, list[float], list[float]]:
    """Seconds until Attention (128 tokens) and, as a reference, Home are fully drawn."""
    from playwright.sync_api import sync_playwright

    prompt, n = long_prompt(model)
    with Server() as server, sync_playwright() as pw:
        base = server.url
        pages = {"attention": (f"{base}/attention?" + urllib.parse.urlencode(
            {"model": model, "prompt": prompt}), 2), "home": (f"{base}/?model={model}", 0)}
        times: dict[str, list[float]] = {name: [] for name in pages}
        browser = chromium(pw)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(base)  # the router first (see tests/test_browser_model_pages.py)
        wait_for_app(page)
        for rep in range(reps + 1):  # the first round fills the caches: not counted
            for name, (url, charts) in pages.items():  # interleaved: same load for both
                t = time.perf_counter()
                page.goto(url)
                page.wait_for_function(DRAWN, arg=charts, timeout=120_000, polling=20)
                if rep:
                    times[name].append(time.perf_counter() - t)
        browser.close()
    return n, times["attention"], times["home"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=7)
    p.add_argument("--no-browser", action="store_true")
    p.add_argument("--langs", nargs="*", default=[], metavar="LANG",
                   help="also each view in these languages (?lang=), beside English")
    args = p.parse_args()
    models = bundled_models()
    if not models:
        raise SystemExit("no bundled models in assets/models (or GPTVIZ_MODELS_DIR)")
    default = DEFAULT_MODEL if DEFAULT_MODEL in models else sorted(models)[0]
    print(f"# Model pages, models: {', '.join(sorted(models))}\n\n{machine()}\n")
    print(f"## Warm AppTest runs, model {default} (median of {args.reps}; target ≤ 300 ms "
          "for each page's default view)\n")
    langs = ("en", *args.langs)
    rows = warm_apptest(default, args.reps, langs)
    english = {(page, view): warm for page, view, lang, _, warm in rows if lang == "en"}
    print("| page | view | language | cold run (s) | warm run (ms) | × English |")
    print("|---|---|---|---|---|---|")
    for page, view, lang, cold, warm in rows:
        print(f"| {page} | {view} | {lang} | {cold:.2f} | {warm:.0f} | "
              f"{warm / english[page, view]:.2f} |")
    if args.no_browser:
        return
    longest = max(sorted(models), key=lambda m: load_checkpoint(models[m]).config.context_length)
    n, attention, home = browser_attention(longest, max(3, args.reps // 2))
    c = load_checkpoint(models[longest]).config
    print(f"\n## Browser: Attention page fully drawn, {n}-token prompt, all "
          f"{c.n_layer * c.n_head} heads ({c.n_layer} layers × {c.n_head}), model {longest}\n")
    print("Each load is a new session (page.goto), caches warm; Home (the router, the model "
          "picker and one formula) is loaded alternately as the reference.\n")
    print("| page | median (s) | min (s) | max (s) |\n|---|---|---|---|")
    for name, times in [("Attention, 128 tokens", attention), ("Home (reference)", home)]:
        print(f"| {name} | {statistics.median(times):.2f} | {min(times):.2f} | "
              f"{max(times):.2f} |")
    extra = statistics.median(a - h for a, h in zip(attention, home, strict=True))
    print(f"\nAttention − Home, median of pairs: {extra:.2f} s. Target: ≤ 1.5 s for the "
          "Attention page.")


if __name__ == "__main__":
    main()
