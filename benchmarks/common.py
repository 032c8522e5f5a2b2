"""What the benchmarks share: where things are, the machine, timing, a Streamlit server on
loopback with Chromium, the bare page every page is measured against, and AppTest's warm runs.

Each benchmark runs from the repository's root as a module, ``python -m
benchmarks.<room>.<name>`` (engine, app or server), so ``gptviz`` and ``tests.helpers`` import
as they are; each prints ``machine()`` before its figures, the line BENCHMARKS.md keeps beside
each table. Machines here are shared and noisy: a figure is only read beside a reference
measured in the same run (the nanoGPT loop, tiktoken, the bare page, greedy decoding...).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import importlib.metadata
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from tests.helpers import (
    ARTIFACTS,
    CHROMIUM,
    CHROMIUM_ARGS,
    free_port,
    settle,
    start_streamlit,
    wait_until_healthy,
)

if TYPE_CHECKING:
    from streamlit.testing.v1 import AppTest

T = TypeVar("T")
ROOT = Path(__file__).resolve().parents[1]
MATHEMATICS = ROOT / "assets" / "corpora" / "mathematics.txt"  # the bundled corpus
SHAKESPEARE = ROOT.parent / "shared" / "data" / "tinyshakespeare.txt"  # not in the repository


# ---- where and when ---------------------------------------------------------------------

def machine() -> str:
    """When and where a benchmark runs, one line: the UTC time, the CPU, the versions that
    set the speed and the load average (torch's threads once it is imported)."""
    cpu = platform.machine()
    with contextlib.suppress(OSError):
        found = re.search(r"^model name\s*:\s*(.+)$", Path("/proc/cpuinfo").read_text(), re.M)
        cpu = found.group(1).strip() if found else cpu
    versions = [f"Python {platform.python_version()}"]
    for package in ("torch", "streamlit"):
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            versions.append(f"{package} {importlib.metadata.version(package)}")
    if "torch" in sys.modules:
        threads = sys.modules["torch"].get_num_threads()
        versions[1] += f" ({threads} thread{'s' * (threads != 1)})"
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return (f"{now} · {cpu}, {os.cpu_count()} CPUs · {' · '.join(versions)} · load average "
            f"{os.getloadavg()[0]:.1f}")


def prose() -> Path:
    """The prose the engine's benchmarks read: Tiny Shakespeare when it is beside the
    repository (``../shared/data``), else the bundled mathematics corpus."""
    return SHAKESPEARE if SHAKESPEARE.is_file() else MATHEMATICS


def median_seconds(fn: Callable[[], T], reps: int, warmup: int = 0) -> tuple[float, T]:
    """The median wall time of ``reps`` calls of ``fn`` after ``warmup`` calls that are not
    counted, and the last call's result."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


# ---- a process's memory -----------------------------------------------------------------

def proc_kb(field: str = "VmRSS", pid: int | str = "self") -> int:
    """A field of ``/proc/PID/status`` in kB (VmRSS, VmHWM, RssAnon...); 0 if absent."""
    found = re.search(rf"^{field}:\s+(\d+)", Path(f"/proc/{pid}/status").read_text(), re.M)
    return int(found.group(1)) if found else 0


def family(pid: int) -> list[int]:
    """``pid`` and its descendants, from ``/proc``."""
    parents = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError, ValueError):  # a process gone
            parents[int(stat.parent.name)] = int(stat.read_text().rsplit(")")[-1].split()[1])
    found, grew = {pid}, True
    while grew:
        more = {p for p, parent in parents.items() if parent in found} - found
        found |= more
        grew = bool(more)
    return sorted(found)


def family_rss_mb(pid: int) -> float:
    """The RSS of ``pid`` and its children, in MB (MiB)."""
    kb = 0
    for p in family(pid):
        with contextlib.suppress(OSError):  # a process gone
            kb += proc_kb("VmRSS", p)
    return kb / 1024


class Rss:
    """The RSS of a process and its children (``family_rss_mb``), sampled every 100 ms in a
    thread of its own: ``peak`` so far, ``now()``, ``stop()``."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak, self._stop = pid, 0.0, threading.Event()
        threading.Thread(target=self._sample, daemon=True).start()

    def now(self) -> float:
        return family_rss_mb(self.pid)

    def _sample(self) -> None:
        while not self._stop.wait(0.1):
            self.peak = max(self.peak, self.now())

    def stop(self) -> None:
        self._stop.set()


# ---- a Streamlit server and Chromium ------------------------------------------------------

class Server:
    """``streamlit run`` on a free loopback port: the app by default, ``script`` of
    ``folder``, or a page made of ``source`` (written to a temporary folder), with ``env``
    added to its environment (e.g. ``{"GPTVIZ_STOCK": "fold"}``), run by ``python``. Its
    output goes to ``ARTIFACTS/<log>-<port>.log``; ``url`` and ``ws`` are its addresses,
    ``proc`` its process. Use it in a ``with`` block, or call ``stop()``."""

    def __init__(self, source: str | None = None, *, script: str = "app.py",
                 folder: Path = ROOT, log: str = "bench-streamlit", timeout_s: float = 120,
                 env: dict[str, str] | None = None, python: str = sys.executable) -> None:
        self.port = free_port()
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        self.log = (ARTIFACTS / f"{log}-{self.port}.log").open("w")
        self.tmp = tempfile.TemporaryDirectory() if source else None
        if self.tmp is not None:
            folder, script = Path(self.tmp.name), "page.py"
            (folder / script).write_text(source)
        self.proc = start_streamlit(self.port, self.log, script, folder, env, python)
        self.url, self.ws = f"http://127.0.0.1:{self.port}", f"ws://127.0.0.1:{self.port}"
        if not wait_until_healthy(self.url, timeout_s):
            self.stop()
            raise SystemExit(f"streamlit did not start for {script}; see {self.log.name}")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        if self.tmp is not None:
            self.tmp.cleanup()

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()


def chromium(pw, *args: str):
    """Debian's Chromium launched by Playwright (sync or async ``pw``) with the tests'
    flags and ``args``."""
    return pw.chromium.launch(executable_path=CHROMIUM, args=[*CHROMIUM_ARGS, *args])


@contextlib.contextmanager
def tree_at(rev: str) -> Iterator[Path]:
    """This repository as of git revision ``rev``, in a temporary worktree: its folder."""
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "app"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), rev],
                       check=True, capture_output=True)
        try:
            yield tree
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)],
                           check=False, capture_output=True)


@contextlib.contextmanager
def app_at(rev: str, python: str = sys.executable) -> Iterator[str]:
    """The app as of git revision ``rev``, served from a temporary worktree by ``python``
    (another one: the app with other libraries, e.g. before an upgrade): its base URL."""
    with tree_at(rev) as tree, Server(folder=tree, python=python) as server:
        yield server.url


# ---- the bare page: the reference of every page in the browser --------------------------

HELLO = 'import streamlit as st\n\nst.write("hello")\n'  # a one-line page
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
"""  # the one-line page with a button: a click changes the page (the count), so its rerun shows
PLOTLY_FLOOR = "bare page + one 2-point plotly chart (reference)"
PLOTLY_PATH = "/?plotly=1"  # on the bare page's server
QUIET_MS = 250
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


def seconds_to_settle(page, started: float) -> float:
    """Seconds from ``started`` (a ``time.perf_counter()``) until the page settled: its
    script finished, no skeleton, every chart drawn, and no change for ``QUIET_MS``
    (``tests.helpers.SETTLED``)."""
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


@contextlib.contextmanager
def bare_and_app() -> Iterator[tuple[object, str, str]]:
    """Chromium, the bare page's URL and the app's, both servers on loopback; all stopped
    afterwards."""
    from playwright.sync_api import sync_playwright

    with Server(BARE, log="bare") as bare, Server() as app, sync_playwright() as pw:
        browser = chromium(pw)
        yield browser, bare.url, app.url
        browser.close()


def interleaved_loads(browser, bare: str, app: str, targets: dict[str, str | Callable[[], str]],
                      reps: int) -> dict[str, list[float]]:
    """Seconds to a settled page: ``reps`` loads of each target (a path on the app's server,
    a whole URL, or a function giving a new one at each load), each beside a load of the bare
    page, in alternating order, after a first round that is not counted. Keys: "bare", then
    the targets."""
    times: dict[str, list[float]] = {name: [] for name in ["bare", *targets]}
    for rep in range(reps + 1):
        for name, path in targets.items():
            path = path() if callable(path) else path
            pair = [("bare", bare + "/"), (name, path if "://" in path else app + path)]
            for label, url in pair if rep % 2 else pair[::-1]:
                seconds = load(browser, url)
                if rep:
                    times[label].append(seconds)
    return times


def report_loads(times: dict[str, list[float]], title: str, what: str,
                 target_s: float | None = None, over: dict[str, str] | None = None) -> None:
    """The table of ``interleaved_loads``: each target's median and max, its median over the
    bare page's, and over each reference of ``over`` (its label -> the column's name; by
    default the plotly floor, when it was loaded); with ``target_s``, whether the median
    meets it."""
    floor = statistics.median(times["bare"])
    reps = len(next(iter(list(times.values())[1:])))
    over = {PLOTLY_FLOOR: "bare + plotly chart"} if over is None else over
    refs = {label: statistics.median(times[label]) for label in over if label in times}
    print(f"# {title} in Chromium, each load a new context; {reps} loads of each {what} after "
          f"a warm-up round\n\n{machine()}\n")
    print(f"Bare one-line page (same run, loaded before or after each {what}): median "
          f"**{floor:.2f} s** of {len(times['bare'])} loads.\n")
    target = f" ≤ {target_s} s |" if target_s else ""
    print(f"| {what} | median (s) | max (s) | × bare page |"
          + "".join(f" × {over[label]} |" for label in refs) + f"{target}\n"
          + "|---|---|---|---|" + "---|" * (len(refs) + bool(target_s)))
    for name, ts in list(times.items())[1:]:
        med = statistics.median(ts)
        ok = f" {'yes' if med <= target_s else 'no'} |" if target_s else ""
        print(f"| {name} | {med:.2f} | {max(ts):.2f} | {med / floor:.2f}× |"
              + "".join(f" {med / ref:.2f}× |" for ref in refs.values()) + ok)


def long_prompt(model: str, n: int = 128) -> tuple[str, int]:
    """The first ``n`` tokens of the bundled corpus for ``model`` (or its context, if
    shorter), as text, and that number of tokens: the Attention page's longest prompt."""
    from gptviz.checkpoints.folder import bundled_models, load_checkpoint

    ckpt = load_checkpoint(bundled_models()[model])
    n = min(n, ckpt.config.context_length)
    text = MATHEMATICS.read_text(encoding="utf-8")[:4000]
    tokens = ckpt.tokenizer.tokens(text)
    return text[: tokens[n - 1].span[1]], n


# ---- AppTest: the server's part of a page, without a browser ----------------------------

def warm_runs(sessions: dict[Any, AppTest], reps: int,
              langs: dict[Any, str] | None = None) -> dict[Any, tuple[float, float]]:
    """{label: (cold run s, median warm run ms)}: each AppTest session run once (cold), then
    ``reps`` more times, the sessions interleaved run by run so that all of them see the
    same machine load. No run may raise."""
    from gptviz import i18n

    def seconds(at: AppTest, lang: str = "en") -> float:
        t = time.perf_counter()
        with i18n.use(lang):  # AppTest formats select boxes again on this thread
            at.run()
        assert not at.exception, at.exception
        return time.perf_counter() - t

    langs = langs or {}
    cold = {label: seconds(at, langs.get(label, "en")) for label, at in sessions.items()}
    warm: dict[str, list[float]] = {label: [] for label in sessions}
    for _ in range(reps):
        for label, at in sessions.items():
            warm[label].append(seconds(at, langs.get(label, "en")) * 1e3)
    return {label: (cold[label], statistics.median(warm[label])) for label in sessions}


def warm_runs_args(doc: str) -> tuple[int, list[str]]:
    """The command line of a benchmark of warm runs, ``[--reps 7] [--model NAME ...]``:
    (reps, the models named, else every bundled one). Torch then uses one thread, as the
    tests do (shared cores)."""
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--reps", type=int, default=7)
    p.add_argument("--model", action="append", help="a bundled model (default: all)")
    args = p.parse_args()
    import torch

    from gptviz.checkpoints.folder import bundled_models

    torch.set_num_threads(1)
    return args.reps, args.model or sorted(bundled_models())
