"""Shared fixtures: clean Streamlit caches for AppTest, and a running app in Chromium.

The browser fixtures start ``streamlit run app.py`` once per test session on a
free port and drive it with Playwright through Debian's Chromium. Without
Chromium (or Playwright) those tests are skipped with the reason; ``.ci/run``
installs both, so CI always runs them.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCREENSHOTS = ROOT / "tests" / "artifacts" / "screenshots"
CHROMIUM = os.environ.get("GPTVIZ_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]


@pytest.fixture(autouse=True)
def _one_thread():
    """Tiny tensors: one intra-op thread avoids thread contention on shared CI cores."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(autouse=True)
def _clear_streamlit_caches():
    """AppTest runs share one session id, so session-scoped caches would leak between tests."""
    import streamlit as st

    st.cache_data.clear()
    st.cache_resource.clear()
    yield


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def running_app():
    """``streamlit run app.py`` on a free port; yields its base URL, stops it afterwards."""
    port = _free_port()
    _mkdirs()
    log = (ROOT / "tests" / "artifacts" / f"streamlit-{port}.log").open("w")  # noqa: SIM115
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
         "--server.port", str(port), "--server.address", "127.0.0.1",
         "--browser.gatherUsageStats", "false"],
        cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok":
                    break
            except OSError:
                time.sleep(0.3)
        else:
            pytest.fail("streamlit did not answer /_stcore/health within 60 s; see tests/artifacts")
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        log.close()


@pytest.fixture(scope="session")
def app_url():
    """Base URL of ``streamlit run app.py`` started for this test session."""
    with running_app() as url:
        yield url


def _mkdirs() -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)


def _skip_or_fail(reason: str) -> None:
    """CI sets GPTVIZ_REQUIRE_BROWSER=1: there a missing browser is a failure, not a skip."""
    if os.environ.get("GPTVIZ_REQUIRE_BROWSER") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists():
        _skip_or_fail(f"Chromium not found at {CHROMIUM}: apt-get install -y chromium")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _skip_or_fail("playwright is not installed: pip install -r requirements-dev.txt")
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    p = context.new_page()
    yield p
    context.close()


def wait_for_app(page, timeout_ms: int = 60_000) -> None:
    """Wait until the script has finished running and the page has settled."""
    page.wait_for_selector('[data-testid="stApp"]', timeout=timeout_ms)
    page.wait_for_function(
        """() => {
            const app = document.querySelector('[data-testid="stApp"]');
            return app && app.getAttribute('data-test-script-state') === 'notRunning'
                && !document.querySelector('[data-testid="stSkeleton"]');
        }""", timeout=timeout_ms)
    page.wait_for_timeout(300)


def visit(page, url: str, name: str | None = None) -> None:
    """Open ``url``, wait for the app, check there is no exception, save a screenshot."""
    page.goto(url)
    wait_for_app(page)
    check_no_exception(page, name or url)
    if name:
        screenshot(page, name)


def eventually(condition, timeout_s: float = 20.0, every_s: float = 0.25) -> bool:
    """Poll ``condition()`` until it is true or time runs out (a rerun may still be
    drawing when the script state first reads "notRunning"); returns its last value."""
    deadline = time.time() + timeout_s
    while True:
        try:
            if condition():
                return True
        except Exception:  # an element replaced mid-read: try again
            pass
        if time.time() > deadline:
            return bool(condition())
        time.sleep(every_s)


def check_no_exception(page, where: str) -> None:
    errors = page.locator('[data-testid="stException"]')
    assert errors.count() == 0, f"{where}: {errors.first.inner_text()[:500]}"


def screenshot(page, name: str) -> Path:
    _mkdirs()
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
