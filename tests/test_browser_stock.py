"""Stock mode in a real browser: a server started with ``GPTVIZ_STOCK=1`` serves the pages
with Streamlit's and plotly's own elements, no element of the wing and no server patch,
and no page shows an exception. Screenshots: ``stock-<page>.png`` in the artifacts folder.
"""

from __future__ import annotations

import urllib.request

import pytest

from gptviz.app.speedups import fonts
from tests.helpers import MAIN, check_no_exception, running_app, screenshot, settle, visit
from tests.test_browser import PAGES

pytestmark = pytest.mark.browser
WING = ".gv-heat, .gv-svgbox, .gv-svgplot, .gv-fold, .gv-choice, .gv-download"
PLOTLY = '[data-testid="stPlotlyChart"] .main-svg'
CHARTS = {"embeddings", "positional", "attention", "block", "learning"}  # on the first view
# A short walk: the pages that hold every speed-up between them (heatmaps, SVG bars and
# lines, token and corpus boxes, CSV buttons, folds); the AppTest walk covers every view.
WALK = ["", "attention", "positional", "training", "learning"]


@pytest.fixture(scope="module")
def stock_url():
    with running_app({"GPTVIZ_STOCK": "1"}) as url:
        yield url


@pytest.fixture
def tall(page):
    page.set_viewport_size({"width": 1400, "height": 2400})
    return page


def test_index_html_is_streamlits_own(stock_url):
    """No server patch: a page's address gets Streamlit's plain file, without the app's
    root written into it or the page's font preloads."""
    visit_first = urllib.request.urlopen(f"{stock_url}/").read()  # the router has run after
    html = urllib.request.urlopen(f"{stock_url}/attention").read().decode()
    assert visit_first and "__streamlit" not in html and "BACKEND_BASE_URL" not in html
    assert fonts.ICONS not in html and "KaTeX_" not in html


@pytest.mark.parametrize("path", WALK)
def test_pages_in_stock_mode(tall, stock_url, path):
    visit(tall, f"{stock_url}/{path}")
    assert tall.get_by_text(PAGES[path]).first.is_visible()
    main = tall.locator(MAIN)
    assert main.locator(WING).count() == 0, "an element of the wing in stock mode"
    if path in CHARTS:
        main.locator(PLOTLY).first.wait_for()  # charts by plotly.js
    settle(tall)
    check_no_exception(tall, f"stock {path}")
    screenshot(tall, f"stock-{path or 'home'}")


def test_the_stock_widgets_work(tall, stock_url):
    """Attention's query token is Streamlit's select box, its CSV Streamlit's button; a new
    query redraws the row it names."""
    visit(tall, f"{stock_url}/attention")
    main = tall.locator(MAIN)
    assert main.get_by_test_id("stDownloadButton").count() >= 1
    box = main.get_by_test_id("stSelectbox").filter(has_text="Query token")
    box.click()
    tall.get_by_role("option").first.click()  # position 0
    settle(tall)
    check_no_exception(tall, "stock attention, query 0")
    assert main.get_by_text("(position 0) looks most").first.is_visible()
