"""Helpers the tests and the benchmarks share: AppTest runners and readers, plotly
figure readers, a tiny GPT, and the browser helpers (a streamlit server, Chromium).

Fixtures live in tests/conftest.py; everything here is a plain function or constant,
so the benchmarks can import it (``from tests.helpers import run_page``).

Browser artifacts (screenshots, streamlit server logs) go to ``ARTIFACTS``, a folder
under the system's temporary directory unless ``GPTVIZ_ARTIFACTS`` names another one:

>>> ARTIFACTS.name == "gptviz-test-artifacts" or "GPTVIZ_ARTIFACTS" in os.environ
True
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import html
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Coroutine, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, NamedTuple

import numpy as np
import pandas as pd
import pytest

if TYPE_CHECKING:
    import torch
    from streamlit.testing.v1 import AppTest

    from gptviz.model import GPT
    from gptviz.model.hooks import ActivationCache

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = Path(os.environ.get("GPTVIZ_ARTIFACTS")
                 or Path(tempfile.gettempdir()) / "gptviz-test-artifacts")
SCREENSHOTS = ARTIFACTS / "screenshots"
CHROMIUM = os.environ.get("GPTVIZ_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
# a chart that has drawn: plotly's once its SVG exists, an inline SVG chart (svgplot) once
# its component has put it in the page, a canvas heatmap once painted
CHART = '[data-testid="stPlotlyChart"]:has(.main-svg), .gv-svgplot, .gv-heat[data-drawn="1"]'
MAIN = '[data-testid="stMainBlockContainer"]'  # the main column: no sidebar, no toolbar

# The views of each model page, as its view picker names them.
MODEL_PAGE_VIEWS = {
    "embeddings": ["One-hot × E", "The vocabulary (PCA)", "Trained vs untrained"],
    "positional": ["Sinusoidal formula", "This model's positions", "X + PE for the prompt",
                   "Order without positions", "Four encodings compared"],
    "attention": ["All heads", "Steps of one head", "Masks and the SDPA check", "Head ablation",
                  "Circuits of a head", "OV circuit", "Head taxonomy", "Summed heads", "Rollout"],
    "block": ["The block, step by step", "LayerNorm", "GELU vs ReLU", "Parameters",
              "Residual stream and logit lens", "Direct logit attribution", "Commitment layer"],
}




def __getattr__(name: str) -> Any:
    """``MODELS``: the bundled models' names, sorted, for ``@pytest.mark.parametrize("model",
    MODELS)`` (a test's id is then the model's name). Read from ``assets/models`` on first use,
    so that importing this module does not import torch."""
    if name == "MODELS":
        from gptviz.checkpoints.folder import bundled_models

        globals()["MODELS"] = sorted(bundled_models())
        return globals()["MODELS"]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ---- AppTest ------------------------------------------------------------------------------

def app_test(page: str | None = None, *, timeout: float = 120, **query: str) -> AppTest:
    """An AppTest of ``app_pages/<page>.py`` (or of ``app.py``, the router whose default
    page is Home, when ``page`` is None) with URL query params, not yet run; every fold
    (``fold.below``) already reached, as if the reader had scrolled down.

    Example: ``app_test("attention", model="mathematics-char").run()``.
    """
    from streamlit.testing.v1 import AppTest

    from gptviz.app.speedups import fold

    script = ROOT / ("app.py" if page is None else f"app_pages/{page}.py")
    at = AppTest.from_file(str(script), default_timeout=timeout)
    for name in fold.FOLDS:  # nothing scrolls here: every view is drawn whole
        at.session_state[fold.reached_key(name)] = True
    for key, value in query.items():
        at.query_params[key] = value
    return at


def run_page(page: str | None = None, *, timeout: float = 120, **query: str) -> AppTest:
    """``app_test(page, **query)`` run once, checked for an exception.

    Example: ``run_page("tokenizers", tokenizer="GPT-2").metric`` are its metrics.
    """
    return rerun(app_test(page, timeout=timeout, **query))


def area_catalog(lang: str, *folders: str) -> dict[str, str]:
    """msgid → ``lang``'s translation of every singular message the source marks in
    ``folders`` (paths from the repository's root, e.g. "gptviz/app/generation/"): a part
    of the one catalog, as a page's own tests read it."""
    from gptviz import i18n

    have = i18n.catalog_entries(lang)
    return {m: have[m] for m, where in i18n.source_messages().items()
            if isinstance(m, str) and "\x04" not in m and isinstance(have.get(m), str)
            and any(w.startswith(folders) for w in where)}


def lesson_steps(at: AppTest) -> Iterator[int]:
    """Walk the Lesson open in ``at`` through every step, each answer revealed where the
    step asks a question; yields each step's number with the step drawn."""
    from gptviz.app.lesson.steps import STEPS

    for step in range(1, len(STEPS) + 1):
        at.session_state["step"] = step
        rerun(at)
        if any(b.key == "lesson_reveal" for b in at.button):
            at.button(key="lesson_reveal").click()
            rerun(at)
        yield step


def rerun(at: AppTest) -> AppTest:
    """Run the script again (after a widget or state change); no exception allowed."""
    at.run()
    assert not at.exception, at.exception
    return at


def checkpoint_uploader(at: AppTest):
    """The sidebar's checkpoint uploader, after turning on the switch that shows it."""
    if not any(w.key == "model_upload" for w in at.file_uploader):
        at.toggle(key="upload_open").set_value(True)
        rerun(at)
    return at.file_uploader(key="model_upload")


def texts(at: AppTest, *kinds: str) -> str:
    """Every element of the given kinds, joined: ``texts(at, "info", "warning")``."""
    return " ".join(str(e.value) for kind in kinds for e in getattr(at, kind))


def metric(at: AppTest, label: str) -> str:
    """The value of the metric labelled ``label``, e.g. ``metric(at, "Tokens") == "12"``."""
    return next(m.value for m in at.metric if m.label == label)


def read_percent(text: str) -> float:
    """A probability as ``tex.percent`` writes it, read back: "29.3%" is 0.293, "2.1e-5"
    is 2.1e-5."""
    text = text.strip()
    return float(text[:-1]) / 100 if text.endswith("%") else float(text)


# ---- plotly figures -----------------------------------------------------------------------

def figures(at: AppTest) -> list[dict]:
    """Every plotly figure on the page, in page order, as its JSON dict (arrays still
    encoded): those plotly.js draws and those drawn on a canvas (``heatcanvas``)."""
    from gptviz.app.speedups.heatcanvas import NAME

    out = []
    for e in at._tree:
        if e.type == "plotly_chart":
            out.append(json.loads(e.proto.spec))
        elif e.type == "bidi_component" and e.proto.component_name == NAME:
            out.append(json.loads(e.proto.json)["figure"])
    return out


def svg_charts(at: AppTest) -> dict[str, list[dict]]:
    """The page's inline SVG charts (``svgplot``), by title: the marks each one draws."""
    from gptviz.app.speedups.svgbox import NAME
    from gptviz.app.speedups.svgplot import read_marks

    charts = {}
    for e in at._tree:
        if e.type == "bidi_component" and e.proto.component_name == NAME:
            body = json.loads(e.proto.json)["html"]
            title = re.search(r'data-title="([^"]*)"', body).group(1)
            charts[html.unescape(title)] = read_marks(body)
    return charts


class ChoiceBox:
    """A ``choice.choose`` box of a page read back, with what the tests used of AppTest's
    select box: ``.value`` (the index shown), ``.options`` (their labels), ``.set_value(i)``
    (the reader picks option ``i``; then rerun)."""

    def __init__(self, at: AppTest, key: str) -> None:
        from gptviz.app.speedups.choice import NAME

        self.at, self.key = at, key
        found = [e for e in at._tree if e.type == "bidi_component"
                 and e.proto.component_name == NAME and e.proto.id.split("-", 2)[2:] == [key]]
        if not found:
            raise KeyError(f"no choice box {key!r} on the page")
        self.data = json.loads(found[0].proto.json)

    @property
    def value(self) -> int:
        return self.data["index"]

    @property
    def options(self) -> list[str]:
        return self.data["options"]

    def set_value(self, index: int) -> AppTest:
        """As the browser sends a pick: each one numbered anew."""
        ChoiceBox.picks += 1
        self.at.session_state[self.key] = {"pick": {"index": index, "stamp": self.data["stamp"],
                                                    "n": ChoiceBox.picks}}
        return self.at

    picks = 0


def choice_box(at: AppTest, key: str) -> ChoiceBox:
    """The ``choice.choose`` box keyed ``key`` on the page (``ChoiceBox``)."""
    return ChoiceBox(at, key)


def downloads(at: AppTest) -> list[dict]:
    """Every download button on the page, in page order: ``{"label"}`` and, for a
    button that carries its file (``download.download_text``), ``"name"`` and ``"text"``."""
    from gptviz.app.speedups.download import NAME

    out = []
    for e in at._tree:
        if e.type == "download_button":
            out.append({"label": e.proto.label})
        elif e.type == "bidi_component" and e.proto.component_name == NAME:
            out.append(json.loads(e.proto.json))
    return out


class Table(NamedTuple):
    value: pd.DataFrame  # as st.dataframe's element gives it: ``tables(at)[0].value``
    shown: pd.DataFrame | None = None  # the cells as text where the page wrote them


def _grid_text(e) -> pd.DataFrame | None:
    """The display values a data grid was sent (``widgets.data_grid`` writes them through a
    pandas Styler), or None where the grid formats its numbers itself."""
    import pyarrow as pa

    data = e.proto.arrow_data.styler.display_values
    return pa.ipc.open_stream(data).read_pandas() if data else None


def _html_table(body: str) -> Table:
    """A ``widgets.plain_table`` read back: floats from their exact ``data-v``, ints, text;
    and its cells' text as shown."""
    def cell(m: re.Match) -> Any:
        attrs, text = m.group(1), html.unescape(m.group(2))
        exact = re.search(r'data-v="([^"]*)"', attrs)
        if exact:
            return float(exact.group(1))
        return int(text) if "gv-num" in attrs else text

    head = [html.unescape(h) for h in re.findall(r"<th>(.*?)</th>", body, re.S)]
    cells = [list(re.finditer(r"<td([^>]*)>(.*?)</td>", row, re.S))
             for row in re.findall(r"<tr>(.*?)</tr>", body.split("<tbody>", 1)[1], re.S)]
    return Table(pd.DataFrame([[cell(m) for m in row] for row in cells], columns=head),
                 pd.DataFrame([[html.unescape(m.group(2)) for m in row] for row in cells],
                              columns=head))


def tables(at: AppTest) -> list[Table]:
    """Every table on the page, in page order: data grids (``st.dataframe``) and plain HTML
    tables (``widgets.plain_table``), each with its DataFrame as ``.value``."""
    out = []
    for e in at._tree:
        if e.type == "dataframe":
            out.append(Table(e.value, _grid_text(e)))
        elif e.type == "html" and 'class="gv-table"' in e.value:
            out.append(_html_table(e.value))
    return out


def text_blocks(at: AppTest) -> list[str]:
    """The plain texts the page shows in monospace boxes (``widgets.text_block``)."""
    return [html.unescape(m.group(1)) for h in at.get("html")
            for m in re.finditer(r'<div class="gv-text">(.*?)</div>', h.value, re.S)]


def figure(at: AppTest, title: str) -> dict:
    """The first figure whose title contains ``title``."""
    return next(f for f in figures(at) if title in str(f["layout"].get("title", {}).get("text")))


def array_of(value: Any) -> np.ndarray:
    """A trace's array as numpy: plotly 6 sends numpy data as {"dtype", "bdata", "shape"}.

    >>> array_of({"dtype": "i1", "bdata": "AQID", "shape": "3"})
    array([1, 2, 3], dtype=int8)
    >>> array_of([[0, 1]]).shape
    (1, 2)
    """
    if isinstance(value, dict) and "bdata" in value:
        arr = np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"])
        shape = [int(x) for x in str(value.get("shape", len(arr))).split(",")]
        return arr.reshape(shape)
    return np.asarray(value, dtype=np.float64)


def z_of(trace: dict) -> np.ndarray:
    """A heatmap trace's ``z`` as a numpy array."""
    return array_of(trace["z"])


# ---- a tiny model -------------------------------------------------------------------------

def tiny_gpt(vocab_size: int, seed: int = 0, **config: Any) -> GPT:
    """A seeded GPT in eval mode, N = 8, d = 16, one layer of 2 heads unless ``config``
    says otherwise: ``tiny_gpt(12, context_length=6)``."""
    import torch

    from gptviz.model import GPT, GPTConfig

    torch.manual_seed(seed)
    shape = {"context_length": 8, "d_model": 16, "n_layer": 1, "n_head": 2, **config}
    return GPT(GPTConfig(vocab_size=vocab_size, **shape)).eval()


# The small model and prompt the unit tests of captured activations share.
TINY_CONFIG = {"vocab_size": 20, "context_length": 16, "d_model": 32, "n_layer": 2, "n_head": 4}
TINY_IDS = [3, 1, 4, 1, 5, 9, 2, 6]


def tiny_run(ids: list[int] = TINY_IDS) -> tuple[GPT, torch.Tensor, ActivationCache]:
    """``tiny_gpt(**TINY_CONFIG)`` (seed 0), its logits for ``ids`` and every activation.

    >>> model, logits, cache = tiny_run()
    >>> tuple(logits.shape)
    (1, 8, 20)
    """
    model = tiny_gpt(**TINY_CONFIG)
    logits, cache = model.run_with_cache(ids)
    return model, logits, cache


# ---- a running app ------------------------------------------------------------------------

def run_alone(coroutine: Coroutine[Any, Any, Any]) -> Any:
    """``asyncio.run(coroutine)`` on a thread of its own, and its result: under pytest-xdist
    a browser test's event loop may already run on the worker's main thread, where
    ``asyncio.run`` refuses."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def own_thread(test: Callable[..., Any]) -> Callable[..., Any]:
    """Run a test that drives its own event loop on a thread of its own (under pytest-xdist
    a worker that ran a browser test has a loop running on its main thread)."""
    import functools

    @functools.wraps(test)
    def run(*args: Any, **kwargs: Any) -> Any:
        with ThreadPoolExecutor(1) as pool:
            return pool.submit(test, *args, **kwargs).result()

    return run


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_streamlit(port: int, log: IO | int = subprocess.DEVNULL, script: str = "app.py",
                    cwd: Path = ROOT, env: dict[str, str] | None = None,
                    python: str = sys.executable) -> subprocess.Popen:
    """``streamlit run script`` (the app by default) in ``cwd`` on 127.0.0.1:``port``, its
    output to ``log``, with ``env`` added to this process's environment; run by ``python``
    (this one by default: another serves the app with another set of libraries)."""
    return subprocess.Popen(
        [python, "-m", "streamlit", "run", script, "--server.headless", "true",
         "--server.port", str(port), "--server.address", "127.0.0.1",
         "--browser.gatherUsageStats", "false"],
        cwd=cwd, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})})


def wait_until_healthy(url: str, timeout_s: float = 60) -> bool:
    """Poll ``url``/_stcore/health until the server answers "ok"; False if it never does."""
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        try:
            if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok":
                return True
        except OSError:
            time.sleep(0.3)
    return False


@contextlib.contextmanager
def running_app(env: dict[str, str] | None = None) -> Iterator[str]:
    """``streamlit run app.py`` on a free port, ``env`` added to its environment (e.g.
    ``{"GPTVIZ_STOCK": "1"}``); yields its base URL, stops it afterwards. Its log is
    ``ARTIFACTS/streamlit-<port>.log``."""
    port = free_port()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    log = (ARTIFACTS / f"streamlit-{port}.log").open("w")  # noqa: SIM115
    proc = start_streamlit(port, log, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        if not wait_until_healthy(url):
            pytest.fail(f"streamlit did not answer /_stcore/health within 60 s; see {ARTIFACTS}")
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        log.close()


# ---- the browser --------------------------------------------------------------------------

def wait_for_app(page, timeout_ms: int = 60_000) -> None:
    """Wait until the script has finished running and the page has settled."""
    page.wait_for_selector('[data-testid="stApp"]', timeout=timeout_ms)
    page.wait_for_function(
        """() => {
            const app = document.querySelector('[data-testid="stApp"]');
            return app && app.getAttribute('data-test-script-state') === 'notRunning'
                && !document.querySelector('[data-testid="stSkeleton"]') && !(FOLD_IN_VIEW);
        }""".replace("FOLD_IN_VIEW", FOLD_IN_VIEW), timeout=timeout_ms)
    page.wait_for_timeout(300)


def unfold(page) -> None:
    """Scroll to each fold's marker (``fold.below``), as a reader scrolling down, until the
    view is drawn whole."""
    for _ in range(5):
        marker = page.locator(".gv-fold").first
        if not marker.count():
            return
        marker.scroll_into_view_if_needed()
        wait_for_app(page)
    raise AssertionError("a fold's marker stayed after it was scrolled into view")


def visit(page, url: str, name: str | None = None) -> None:
    """Open ``url``, wait for the app, check there is no exception, save a screenshot."""
    page.goto(url)
    wait_for_app(page)
    check_no_exception(page, name or url)
    if name:
        screenshot(page, name)


def show_checkpoint_uploader(page) -> None:
    """Turn on the sidebar's "Upload a checkpoint" switch and wait for its uploader."""
    page.get_by_test_id("stSidebar").get_by_text("Upload a checkpoint").click()
    page.locator('[data-testid="stSidebar"] [data-testid="stFileUploaderDropzoneInput"]'
                 ).wait_for(state="attached")


def eventually(condition: Callable[[], Any], timeout_s: float = 20.0,
               every_s: float = 0.25) -> bool:
    """Poll ``condition()`` until it is true or time runs out (a rerun may still be
    drawing when the script state first reads "notRunning"); returns its last value."""
    deadline = time.time() + timeout_s
    while True:
        with contextlib.suppress(Exception):  # an element replaced mid-read: try again
            if condition():
                return True
        if time.time() > deadline:
            return bool(condition())
        time.sleep(every_s)


def check_no_exception(page, where: str) -> None:
    errors = page.locator('[data-testid="stException"]')
    assert errors.count() == 0, f"{where}: {errors.first.inner_text()[:500]}"
    failed = page.locator('.gv-heat[data-drawn="error"]').count()
    assert failed == 0, f"{where}: {failed} canvas heatmap(s) could not be drawn"


def screenshot(page, name: str) -> Path:
    """Save a full-page screenshot as ``SCREENSHOTS/<name>.png``."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


# A fold's marker (``fold.below``) in view is about to be replaced by what it stands for.
FOLD_IN_VIEW = """[...document.querySelectorAll('.gv-fold')].some(f => {
    const r = f.getBoundingClientRect(); return r.top < window.innerHeight && r.bottom > 0; })"""
SETTLED = """(quietMs) => {
    const app = document.querySelector('[data-testid="stApp"]');
    if (!app || app.getAttribute('data-test-script-state') !== 'notRunning') return false;
    if (document.querySelector('[data-testid="stSkeleton"], [data-stale="true"]')) return false;
    if (FOLD_IN_VIEW) return false;
    for (const c of document.querySelectorAll('[data-testid="stPlotlyChart"]'))
        if (!c.querySelector('.main-svg')) return false;
    for (const c of document.querySelectorAll('.gv-heat, .gv-svgbox'))
        if (!c.dataset.drawn) return false;  // "1", or "error" (check_no_exception fails it)
    const html = app.innerHTML;
    if (window.__gvLast !== html) { window.__gvLast = html; window.__gvSince = performance.now(); }
    return performance.now() - window.__gvSince >= quietMs;
}""".replace("FOLD_IN_VIEW", FOLD_IN_VIEW)
# script finished, nothing loading or stale or about to be drawn, every chart drawn, quiet


def settle(page, quiet_ms: int = 300, timeout_ms: int = 120_000, polling_ms: int = 50) -> None:
    """Wait until the page has settled (``SETTLED``), however long that takes."""
    page.wait_for_function(SETTLED, arg=quiet_ms, timeout=timeout_ms, polling=polling_ms)


def drawn(page, where: str, charts: int = 1, text: str | None = None,
          timeout_ms: int = 120_000) -> None:
    """Wait until the main column shows ``text`` (what marks the awaited redraw), the open tab
    has ``charts`` drawn charts and the page has settled; an exception shown fails at once."""
    main, error = page.locator(MAIN), page.get_by_test_id("stException")
    chart = main.get_by_role("tabpanel").first.locator(CHART).nth(charts - 1)  # the open tab
    for awaited in ([main.get_by_text(text).first] if text else []) + [chart]:
        awaited.or_(error).first.wait_for(timeout=timeout_ms)  # an exception ends the wait
    settle(page, timeout_ms=timeout_ms)
    check_no_exception(page, where)


def open_tab(page, label: str, charts: int = 1) -> None:
    """Click the view tab ``label`` (not the open one) and wait until its view is drawn."""
    page.get_by_role("tab", name=label, exact=True).click()
    drawn(page, label, charts)
