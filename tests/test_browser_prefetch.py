"""plotly.js loaded while the tab is idle (``gptviz.app.speedups.prefetch``), in Chromium.

The Lesson's step 6 draws its first plotly chart on Reveal. The module must be fetched
once, before the click, at the very address Streamlit's own import asks for: a second
request for it after the click would mean Streamlit loaded and evaluated it again.
"""

from __future__ import annotations

import pytest

from gptviz.app.speedups.prefetch import AFTER_MS, plotly_chunk
from tests.helpers import CHART, check_no_exception, eventually, settle, visit, wait_for_app

pytestmark = pytest.mark.browser

REVEAL = ".st-key-lesson_reveal button"


def test_streamlit_has_the_module_we_prefetch():
    chunk = plotly_chunk()
    assert chunk and chunk.startswith("PlotlyChart.") and chunk.endswith(".js")


def test_the_reveal_finds_plotly_loaded(page, app_url):
    asked: list[str] = []
    page.on("request", lambda r: "PlotlyChart." in r.url and asked.append(r.url))
    visit(page, f"{app_url}/lesson?step=6")
    assert asked == []  # the first view has no plotly chart, and is not kept waiting
    assert eventually(lambda: page.evaluate("window.gvPrefetched === true"),
                      timeout_s=AFTER_MS / 1000 + 30)
    assert asked == [page.evaluate("window.gvPrefetch")]
    assert asked[0].endswith("/static/js/" + plotly_chunk())

    page.locator(REVEAL).first.click()
    wait_for_app(page)
    assert eventually(lambda: page.locator('[data-testid="stPlotlyChart"] .main-svg').count())
    settle(page)
    check_no_exception(page, "lesson step 6 revealed")
    assert page.locator(CHART).count() >= 1
    assert len(asked) == 1, f"plotly.js was fetched again: {asked}"


def test_a_chart_drawn_at_once_is_not_fetched_twice(page, app_url):
    """A page that draws plotly at once: Streamlit's import comes first; ours, later,
    finds the module loaded."""
    asked: list[str] = []
    page.on("request", lambda r: "PlotlyChart." in r.url and asked.append(r.url))
    visit(page, f"{app_url}/lesson?step=6")
    page.locator(REVEAL).first.click()  # at once: before the prefetch starts
    wait_for_app(page)
    assert eventually(lambda: page.locator('[data-testid="stPlotlyChart"] .main-svg').count())
    assert eventually(lambda: page.evaluate("window.gvPrefetched === true"),
                      timeout_s=AFTER_MS / 1000 + 30)
    assert len(asked) == 1, asked
