"""A class on one server: N students at once, and what one more sees in Chromium.

    python -m benchmarks.server.crowd --sessions 1 10 30 [--stagger 10] [--out crowd.json]
    python -m benchmarks.server.crowd --sessions 30 --baseline REV --baseline-python PATH
    python -m benchmarks.server.crowd --url http://127.0.0.1:8080 --sessions 300 --stagger 60
        --think 2   (students only, aimed at a running proxy: see below)

Each student opens Home, Attention, Generation (5 × "Next token") and Tokenizers with a
prompt of its own (typed into a page's box when the page does not show it already), and
scrolls Attention down to the chosen head drawn large (``fold``: one more run). First
every student walks alone, one after the other; then, for each N, a new ``streamlit run
app.py`` (headless, loopback, torch threads as the app sets them) gets a warm-up walk
(RSS "idle"), and N students start over ``--stagger`` seconds, each a websocket session
(``streamlit_client.py``) timing each script run from the rerun to script_finished.
Meanwhile one Chromium, after loading each page once, walks the same pages (URLs with
its own prompt) and a bare one-line page on a second server (the floor) until the crowd
is done, timing each page on its own clock (``performance.now()``) until settled: script
finished, no skeleton, every plotly chart drawn, formulas typeset, after a click one more
token; it does not scroll, so its Attention is the first screen (the students' "scrolled
down" run is counted with Attention). Requests for other hosts go to a dead proxy (loopback
bypasses it) and are listed.
The server's RSS (process and children) is sampled every 100 ms, and 10 s after all left.

Why a protocol client: N Chromiums would spend our 2 cores drawing N pages, measuring
the browsers rather than the server; AppTest runs the scripts in this process, leaving
the server's threads, websockets, caches and session store idle. The client sends what a
browser tab sends (the same reruns, widget states, cached-message hashes), cheaply.

Failures: runs that time out or end badly, exceptions on a page, clicks that made no
token. Mixed results: runs whose text, formulas or figures differ from the same student's
walk alone (``Run.fingerprint``). N counts the students; Chromium is one more. Bounds:
``--timeout`` per run or page, ``--budget`` in all, ``--browser-walks`` per N. Servers do
not watch the sources (``STREAMLIT_SERVER_FILE_WATCHER_TYPE=none`` unless set otherwise):
an edit during a run would reload modules under the running scripts.

``--url``: the students only (no Chromium, no walk alone), aimed at a server already running,
such as a lecture hall's proxy (``python deploy/serve.py``): each keeps the proxy's cookie,
as a browser does, so that it stays on one replica; ``--think`` seconds between actions.
Reported: script-run times by page, failures, students that reached more than one replica,
and the share of a core this process used (``cpu_share``; it is pinned to one core where
the machine has more than one: ``--cpu``). ``benchmarks/server/hall.py`` starts halls of 1 to
N replicas and runs this crowd against each."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import re
import resource
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlencode, urlsplit

from benchmarks.common import HELLO, MATHEMATICS, ROOT, Rss, Server, chromium, machine, tree_at
from benchmarks.server import streamlit_client as sc
from tests.helpers import FOLD_IN_VIEW

WALK = [("", "Home"), ("attention", "Attention"), ("generation", "Generation"),
        ("tokenizers", "Tokenizers")]
LOADS = [name for _, name in WALK]  # the pages a browser loads
LOOPBACK = ("127.0.0.1", "localhost")
TEXT_KEY = {"tokenizers": "text"}  # the query param of a page's text box (else "prompt")
CLICKS = 5
SETTLED = """([text, tex, tokens]) => {
    const app = document.querySelector('[data-testid="stApp"]'), $ = s => document.querySelector(s);
    const main = $('[data-testid="stMain"]'), shown = main ? main.innerText : '';
    if (!app || app.getAttribute('data-test-script-state') !== 'notRunning'
        || $('[data-testid="stSkeleton"]') || !shown.includes(text) || (tex && !$('.katex'))
        || (tokens !== null && !shown.includes(tokens + ' generated'))
        || FOLD_IN_VIEW) return false;
    return [...document.querySelectorAll('[data-testid="stPlotlyChart"]')].every(
        chart => chart.querySelector('.main-svg'))
        && [...document.querySelectorAll('.gv-heat, .gv-svgbox')].every(c => c.dataset.drawn)
        && performance.now() - (window.gvClick || 0);
}""".replace("FOLD_IN_VIEW", FOLD_IN_VIEW)  # ms since the navigation (or the last click), settled


def prompts() -> list[str]:
    """253 prompts: the bundled corpus's sentences of 60 to 160 characters without TeX."""
    text = " ".join(MATHEMATICS.read_text().split())
    return list(dict.fromkeys(s for s in re.split(r"(?<=[.?!])\s+", text)
                              if 60 <= len(s) <= 160 and "$" not in s))


@dataclass
class Walk:
    """One student's walk: every script run (label, run) and what went wrong."""

    runs: list[tuple[str, sc.Run]] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    session: sc.ProtocolSession | None = None  # (its cookies, the replicas it reached)

    def add(self, label: str, run: sc.Run) -> sc.Run:
        self.runs.append((label, run))
        if run.status != "ok":
            self.failures.append(f"{label}: {run.status} after {run.seconds:.1f} s")
        self.failures += [f"{label}: exception {e[:120]!r}" for e in run.exceptions]
        return run

    def fingerprint(self) -> dict[str, dict[str, str]]:  # of the runs that did not fail
        return {label: run.fingerprint() for label, run in self.runs
                if run.status == "ok" and not run.exceptions}


def run_times(walks: list[Walk]) -> dict[str, list[float]]:
    """Script-run seconds by page ("Next token 3", "Generation, prompt typed": by page)."""
    times: dict[str, list[float]] = {}
    for label, run in (labelled for w in walks for labelled in w.runs):
        times.setdefault(label.split(",")[0].rstrip(" 0123456789"), []).append(run.seconds)
    return times


async def walk(ws_url: str, prompt: str, timeout_s: float, deadline: float,
               delay_s: float = 0, think_s: float = 0, cookies: dict | None = None) -> Walk:
    """Home, Attention, Generation with 5 clicks, Tokenizers: one student, one session,
    starting after ``delay_s`` and waiting ``think_s`` before each action but the first;
    it stops early (a failure) at ``deadline`` (monotonic). ``cookies``: keep them, as a
    browser does behind a proxy (``{}`` to start with none)."""
    await asyncio.sleep(delay_s)
    w = Walk()
    s = w.session = sc.ProtocolSession(ws_url, timeout_s, cookies=cookies)
    first = True

    def go_on(run: sc.Run) -> bool:  # a failed run leaves the stream unusable
        if run.status == "ok" and time.monotonic() > deadline:
            run.status = "stopped: the time budget is spent"
            w.failures.append(run.status)
        return run.status == "ok"

    async def think() -> bool:  # a student reads before the next action
        nonlocal first
        if not first:
            await asyncio.sleep(think_s)
        first = False
        return True
    try:
        await s.connect()
        for page, name in WALK:
            key = TEXT_KEY.get(page, "prompt")
            run = w.add(name, await think() and await s.open(page, urlencode({key: prompt})))
            if go_on(run) and s.text_value(run, key) not in (None, prompt):
                run = w.add(f"{name}, prompt typed",
                            await think() and await s.type_text(run, key, prompt))
            if go_on(run) and await think() and (
                    down := await s.send_state(run, "fold", {"reached": True})):
                run = w.add(f"{name}, scrolled down", down)  # the part below the fold
            for i in range(CLICKS if page == "generation" else 0):
                if go_on(run):
                    run = w.add(f"Next token {i + 1}", await think() and await s.click(
                        run, "click_counter", "Next token"))
            said = next((t for t in run.texts("markdown") if " generated · " in t), "nothing")
            if page == "generation" and run.status == "ok" and not said.startswith(f"{CLICKS} "):
                w.failures.append(f"lost clicks: after {CLICKS} clicks the page says {said!r}")
            if not go_on(run):
                break
    except Exception as exc:  # a refused connection, a page without its button...
        w.failures.append(f"{type(exc).__name__}: {exc}")
    finally:
        await s.close()
    return w


async def browser(app: str, bare: str, prompt: str, ready: asyncio.Event, done: asyncio.Event,
                  args) -> tuple[dict[str, list[float]], list[str], list[str]]:
    """Chromium loads every page once, sets ``ready``, then walks the bare page and the app
    until ``done`` (at least once, at most ``args.browser_walks`` times): settle seconds by
    page, failures, and the requests meant for other hosts."""
    from playwright.async_api import async_playwright

    times, failures, offsite = {}, [], []  # seconds by page; what went wrong; other hosts
    pages = [("bare page", f"{bare}/", "hello", False, None)] + [
        (name, f"{app}/{page}?{urlencode({TEXT_KEY.get(page, 'prompt'): prompt})}",
         name if page else "gptviz", True, 0 if page == "generation" else None)
        for page, name in WALK]
    async with async_playwright() as pw:
        browser = await chromium(pw, "--proxy-server=http://127.0.0.1:9")
        tab = await browser.new_page(viewport={"width": 1400, "height": 1000})
        tab.set_default_timeout(args.timeout * 1e3)
        tab.on("request", lambda r: None if r.url.startswith("data:") or urlsplit(
            r.url.removeprefix("blob:")).hostname in LOOPBACK else offsite.append(r.url))
        await tab.add_init_script("document.addEventListener('click', "
                                  "() => { window.gvClick = performance.now(); }, true)")

        async def timed(label: str, action, text: str, tex: bool, tokens: int | None) -> bool:
            try:
                await action
                got = await tab.wait_for_function(SETTLED, arg=[text, tex, tokens], polling=20)
                times.setdefault(label, []).append(await got.json_value() / 1e3)
                if await tab.locator('[data-testid="stException"]').count():
                    failures.append(f"browser, {label}: exception on the page")
                return True
            except Exception as exc:  # a timeout, a crashed tab
                failures.append(f"browser, {label}: {type(exc).__name__} {str(exc)[:80]}")
                return False

        for label, url, *_ in pages:  # warm-up: the JS bundle in the browser's cache
            await timed(f"warm-up, {label}", tab.goto(url), "", False, None)
        ready.set()
        for _ in range(args.browser_walks):
            for label, url, text, tex, tokens in pages:
                ok = await timed(label, tab.goto(url), text, tex, tokens)
                for i in range(CLICKS if tokens == 0 and ok else 0):
                    button = tab.get_by_role("button", name="Next token")
                    await timed("Next token", button.click(), text, tex, i + 1)
            if done.is_set():
                break
        await browser.close()
    return times, failures, offsite


def pct(xs: list[float], q: float) -> float:
    """The nearest-rank percentile: ``pct([4, 1, 3, 2], 0.5) == 2``, ``pct(xs, 1) == max``."""
    return sorted(xs)[max(0, math.ceil(q * len(xs)) - 1)] if xs else math.nan


def mixed(alone: list[Walk], crowded: list[Walk]) -> list[str]:
    """Every run whose page differed in the crowd from the same student's walk alone."""
    found = []
    for i, (a, c) in enumerate(zip(alone, crowded, strict=True)):
        fa, fc = a.fingerprint(), c.fingerprint()
        found += [f"student {i}, {d} (alone / crowd)" for d in sc.differences(fa, fc)]
        if fa.keys() ^ fc.keys() and not a.failures and not c.failures:
            found.append(f"student {i}: runs {sorted(fa.keys() ^ fc.keys())} in one walk only")
    return found


def pin(cpu: int | None) -> int | None:
    """Pin this process to ``cpu`` (default: the last one) where there is more than one;
    the core it got, or None."""
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_setaffinity") else []
    if len(cpus) < 2:
        return None
    core = cpus[-1] if cpu is None else cpu
    os.sched_setaffinity(0, {core})
    return core


def students_at(url: str, n: int, texts: list[str], args, deadline: float) -> dict:
    """N students through ``url`` (cookies kept), started over ``args.stagger`` s, each
    waiting ``args.think`` s between actions: their run times, failures, the students that
    reached more than one replica, and this process's share of a core meanwhile."""
    ws = "ws" + url.rstrip("/").removeprefix("http")
    before, start, load = resource.getrusage(resource.RUSAGE_SELF), time.monotonic(), \
        os.getloadavg()[0]

    async def crowd() -> list[Walk]:
        return await asyncio.gather(*(walk(ws, t, args.timeout, deadline, i * args.stagger / n,
                                           args.think, cookies={})
                                      for i, t in enumerate(texts[:n])))
    walks = asyncio.run(crowd())
    wall, after = time.monotonic() - start, resource.getrusage(resource.RUSAGE_SELF)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    moved = [f"student {i}: {' → '.join(dict.fromkeys(w.session.replicas))}"
             for i, w in enumerate(walks) if len(set(w.session.replicas)) > 1]
    return {"n": n, "runs": run_times(walks), "wall_s": wall, "cpu_share": cpu / wall,
            "failures": [f"student {i}: {f}" for i, w in enumerate(walks) for f in w.failures],
            "moved": moved, "replicas": sorted({r for w in walks for r in w.session.replicas}),
            "load": [load, os.getloadavg()[0]]}


def steps_table(results: list[dict], label: str = "N") -> str:
    """Script-run seconds by page: p50, p95 and max for each result (a column group each)."""
    pages = list(dict.fromkeys(p for r in results for p in r["runs"]))
    head = "| page | " + " | ".join(f"{label}={r[label.lower()]} p50 | p95 | max"
                                      for r in results) + " |"
    lines = [head, "|---|" + "---|---|---|" * len(results)]
    for page in pages:
        lines.append(f"| {page} | " + " | ".join(
            " | ".join(f"{pct(r['runs'].get(page, []), q):.2f}" for q in (0.5, 0.95, 1.0))
            for r in results) + " |")
    return "\n".join(lines)


def url_main(args) -> None:
    """``--url``: the students only, against a running server (see the module)."""
    core = pin(args.cpu)
    texts, deadline = prompts(), time.monotonic() + args.budget
    results = [students_at(args.url, n, texts, args, deadline) for n in args.sessions]
    print(f"\n# Crowd at {args.url}: N students, {args.think} s between actions, started "
          f"over {args.stagger} s\n\n{machine()} · this process on core {core}\n")
    print(steps_table(results))
    print("\n| N | failures | students on two replicas | replicas reached | this process's "
          "CPU (share of a core) | load avg before → after | wall (s) |\n|---|---|---|---|---|"
          "---|---|")
    for r in results:
        print(f"| {r['n']} | {len(r['failures'])} | {len(r['moved'])} | "
              f"{', '.join(r['replicas']) or '–'} | {r['cpu_share']:.2f} | "
              f"{r['load'][0]:.1f} → {r['load'][1]:.1f} | {r['wall_s']:.0f} |")
    for r in results:
        for kind in ("failures", "moved"):
            print("".join(f"- N={r['n']}, {kind}: {x}\n" for x in r[kind][:8]), end="")
    if args.out:
        args.out.write_text(json.dumps(results))


def measure(n: int, texts: list[str], alone: list[Walk], bare: Server, args,
            deadline: float, folder: Path = ROOT, python: str = sys.executable) -> dict:
    """A new server (of the app in ``folder``, run by ``python``), a warm-up walk, then N
    students and the browser: the figures for N."""
    server = Server(log="crowd", folder=folder, python=python)
    start, load = time.monotonic(), os.getloadavg()[0]
    rss = Rss(server.proc.pid)
    try:
        asyncio.run(walk(server.ws, texts[-1], args.timeout, deadline))
        time.sleep(3)
        idle = rss.peak = rss.now()

        async def both() -> tuple:
            ready, done = asyncio.Event(), asyncio.Event()
            seen = asyncio.create_task(browser(server.url, bare.url, texts[-2], ready, done, args))
            await asyncio.wait([seen, asyncio.create_task(ready.wait())],
                               return_when=asyncio.FIRST_COMPLETED)
            walks = await asyncio.gather(*(walk(server.ws, t, args.timeout, deadline,
                                                i * args.stagger / n)
                                           for i, t in enumerate(texts[:n])))
            done.set()
            return walks, await seen

        walks, (settle, browser_failures, offsite) = asyncio.run(both())
        peak = rss.peak
        time.sleep(10)
        after = rss.now()
    finally:
        rss.stop()
        server.stop()
    return {"n": n, "settle": settle, "runs": run_times(walks), "offsite": sorted(set(offsite)),
            "failures": [f"student {i}: {f}" for i, w in enumerate(walks) for f in w.failures]
            + browser_failures, "mixed": mixed(alone[:n], walks),
            "rss_mb": {"idle": idle, "peak": peak, "after": after},
            "load": [load, os.getloadavg()[0]], "wall_s": time.monotonic() - start}


def table(results: list[dict], alone: dict[str, list[float]]) -> str:
    """The report: settle and run times by page, then failures, memory and load."""
    def three(xs: list[float]) -> str:
        return " | ".join(f"{pct(xs, q):.2f}" for q in (0.5, 0.95, 1.0)) if xs else "– | – | –"
    lines = ["| page | N | browser settle p50 (s) | p95 | max | server run p50 (s) | p95 | max |",
             "|---|---|---|---|---|---|---|---|"]
    for r in [{"n": "alone", "settle": {}, "runs": alone}, *results]:
        settle = {**r["settle"], "all pages": [t for p, ts in r["settle"].items()
                                               if p in LOADS for t in ts]}
        runs = {**r["runs"], "all pages": [t for ts in r["runs"].values() for t in ts]}
        lines += [f"| {page} | {r['n']} | {three(settle.get(page, []))} | "
                  f"{three(runs.get(page, []))} |" for page in ["bare page", *LOADS[:3],
                  "Next token", LOADS[3], "all pages"] if settle.get(page) or runs.get(page)]
    lines += ["", "| N | script runs | failures | mixed results | RSS idle (MB) | peak | 10 s "
              "after close | load avg before → after | off-machine requests | wall (s) |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        m, load = r["rss_mb"], r["load"]
        lines.append(f"| {r['n']} | {sum(map(len, r['runs'].values()))} | {len(r['failures'])} "
                     f"| {len(r['mixed'])} | {m['idle']:.0f} | {m['peak']:.0f} | "
                     f"{m['after']:.0f} | {load[0]:.1f} → {load[1]:.1f} | {len(r['offsite'])} "
                     f"| {r['wall_s']:.0f} |")
    return "\n".join(lines + [f"- N={r['n']}, {kind}: {x}" for r in results
                              for kind in ("failures", "mixed", "offsite") for x in r[kind][:8]])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sessions", type=int, nargs="+", default=[1, 10, 30])
    p.add_argument("--stagger", type=float, default=10, help="seconds over which they start")
    p.add_argument("--timeout", type=float, default=60, help="seconds per script run or page")
    p.add_argument("--budget", type=float, default=2400, help="seconds for the whole run")
    p.add_argument("--browser-walks", type=int, default=5, help="at most this many per N")
    p.add_argument("--out", type=Path, help="also write every figure to this JSON file")
    p.add_argument("--url", help="students only, at this running server or proxy "
                                 "(e.g. http://127.0.0.1:8080), cookies kept")
    p.add_argument("--think", type=float, default=0, help="seconds between a student's actions")
    p.add_argument("--cpu", type=int, help="the core this process is pinned to (default: the "
                                           "last, where there are two or more)")
    p.add_argument("--baseline", metavar="REV", help="also each N against the app as of git "
                   "revision REV, right after the same N against this one (e.g. before a "
                   "dependency's upgrade)")
    p.add_argument("--baseline-python", metavar="PATH", default=sys.executable,
                   help="the Python that serves --baseline (another set of libraries)")
    args = p.parse_args()
    if args.url:
        return url_main(args)
    deadline = time.monotonic() + args.budget
    os.environ.setdefault("STREAMLIT_SERVER_FILE_WATCHER_TYPE", "none")  # see the docstring
    texts = prompts()
    if max(args.sessions) > len(texts) - 2:  # two more: the warm-up and Chromium
        p.error(f"at most {len(texts) - 2} sessions: there are {len(texts)} prompts")
    server = Server(log="crowd")  # every student alone, one after the other, after a warm-up walk
    alone = [asyncio.run(walk(server.ws, t, args.timeout, deadline))
             for t in texts[-1:] + texts[:max(args.sessions)]][1:]
    server.stop()
    print(f"alone: {len(alone)} walks, {sum(len(w.failures) for w in alone)} failures")
    results, bare, stack = [], Server(HELLO, log="crowd-bare"), contextlib.ExitStack()
    then = stack.enter_context(tree_at(args.baseline)) if args.baseline else None
    try:
        for n in args.sessions:
            if time.monotonic() > deadline:
                print(f"N={n} skipped: the {args.budget:.0f} s budget is spent")
                continue
            results.append(measure(n, texts, alone, bare, args, deadline))
            print(f"N={n} done in {results[-1]['wall_s']:.0f} s", flush=True)
            if then is not None:  # its runs are not compared with this app's walks alone
                results.append(measure(n, texts, [], bare, args, deadline, then,
                                       args.baseline_python))
                results[-1]["n"] = f"{n}, at {args.baseline}"
    finally:
        bare.stop()
        stack.close()
    print(f"\n# Crowd: N students + 1 Chromium; 'alone' is each student's walk on an idle "
          f"server\n\n{machine()}\n")
    print(table(results, run_times(alone)))
    if args.out:
        args.out.write_text(json.dumps({"alone": run_times(alone), "results": results}))


if __name__ == "__main__":
    main()
