"""Shared fixtures: clean Streamlit caches for AppTest, and a running app in Chromium.

The browser fixtures start ``streamlit run app.py`` once per test session on a
free port and drive it with Playwright through Debian's Chromium. Without
Chromium (or Playwright) those tests are skipped with the reason; ``.ci/run``
installs both, so CI always runs them. Screenshots and server logs go to
``tests.helpers.ARTIFACTS`` (``GPTVIZ_ARTIFACTS`` overrides it); the session's
summary names that folder. The plain helpers live in tests/helpers.py.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlparse

import pytest

from tests.helpers import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, running_app, visit

_browser_used = False  # set by the browser fixtures: only then is ARTIFACTS worth naming


@pytest.fixture(autouse=True)
def _one_thread():
    """Tiny tensors: one intra-op thread avoids thread contention on shared CI cores."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(autouse=True)
def _speedups_on(monkeypatch):
    """Every speed-up on, whatever the shell says: a test that wants stock mode (or some
    pieces off) sets GPTVIZ_STOCK itself (tests/test_app_stock.py)."""
    monkeypatch.delenv("GPTVIZ_STOCK", raising=False)


@pytest.fixture(autouse=True)
def _no_idle_emptying(monkeypatch):
    """A test's released leases never empty the shared stores in the middle of a later test
    (tests of the idle check set IDLE_S themselves)."""
    from gptviz.app.serving import sessions

    monkeypatch.setattr(sessions, "IDLE_S", 1e9)


@pytest.fixture(autouse=True)
def _clear_streamlit_caches():
    """AppTest runs share one session id, so session-scoped caches would leak between tests."""
    import streamlit as st

    st.cache_data.clear()
    st.cache_resource.clear()
    yield


@pytest.fixture(scope="session")
def app_url():
    """Base URL of ``streamlit run app.py`` started for this test session."""
    global _browser_used
    _browser_used = True
    with running_app() as url:
        yield url


def _skip_or_fail(reason: str) -> None:
    """CI sets GPTVIZ_REQUIRE_BROWSER=1: there a missing browser is a failure, not a skip."""
    if os.environ.get("GPTVIZ_REQUIRE_BROWSER") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def browser():
    global _browser_used
    if not Path(CHROMIUM).exists():
        _skip_or_fail(f"Chromium not found at {CHROMIUM}: apt-get install -y chromium")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _skip_or_fail("playwright is not installed: pip install -r requirements-dev.txt")
    _browser_used = True
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


@pytest.fixture
def page(browser):
    """A fresh tab. Nothing may leave the machine (classrooms are offline): any request
    to another host is blocked and fails the test that made it."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    outside: list[str] = []

    def guard(route) -> None:
        url = route.request.url
        if urlparse(url).scheme in ("http", "https", "ws", "wss") and \
                urlparse(url).hostname not in LOCAL_HOSTS:
            outside.append(url)
            route.abort()
        else:
            route.continue_()

    context.route("**/*", guard)
    p = context.new_page()
    yield p
    context.close()
    assert not outside, f"the page asked another host for: {outside[:5]}"


@pytest.fixture
def from_home(page, app_url):
    """``page`` in a tall window (most of a view in one screenshot), on the app's root
    first, as a user arriving from Home does. A test module asks for it with
    ``pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("from_home")]``."""
    page.set_viewport_size({"width": 1400, "height": 2400})
    visit(page, app_url)
    return page


def pytest_terminal_summary(terminalreporter) -> None:
    """Name the artifacts folder once, so that a developer can open the screenshots. Under
    pytest-xdist the browsers ran in the workers, so the controller looks for reports of
    tests marked ``browser``."""
    ran = any("browser" in r.keywords for key in ("passed", "failed")
              for r in terminalreporter.stats.get(key, []) if r.when == "call")
    if _browser_used or ran:
        terminalreporter.write_line(f"browser screenshots and server logs: {ARTIFACTS}")
