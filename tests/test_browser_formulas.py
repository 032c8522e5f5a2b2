"""Display formulas in a real browser: one wider than its column can be scrolled to its end,
with room for its scrollbar, and one that fits gets no scrollbar (``widgets.FORMULA_CSS``)."""

from __future__ import annotations

import io
from urllib.parse import urlparse

import pytest
from PIL import Image

from tests.conftest import LOCAL_HOSTS
from tests.helpers import CHROMIUM, CHROMIUM_ARGS, MAIN, settle, visit

pytestmark = pytest.mark.browser

MEASURE = """els => els.map(d => {
  const box = d.parentElement.getBoundingClientRect(), r = d.getBoundingClientRect();
  return {over: d.scrollWidth - d.clientWidth, x: getComputedStyle(d).overflowX,
          bar: d.offsetHeight - d.clientHeight, clipped: r.bottom - box.bottom,
          left: r.left, right: r.right, bottom: r.bottom};
})"""


def formulas(page) -> list[dict]:
    return page.locator(MAIN).locator(".katex-display").evaluate_all(MEASURE)


def test_a_formula_wider_than_its_column_shows_a_scrollbar(browser, app_url):
    # Playwright hides scrollbars by default; a student's browser shows them
    chromium = browser.browser_type.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS,
                                           ignore_default_args=["--hide-scrollbars"])
    outside: list[str] = []

    def guard(route) -> None:
        if urlparse(route.request.url).hostname not in LOCAL_HOSTS:
            outside.append(route.request.url)
            return route.abort()
        return route.continue_()

    try:
        page = chromium.new_page(viewport={"width": 800, "height": 1000})
        page.route("**/*", guard)
        visit(page, f"{app_url}/attention", "formulas_800")
        settle(page)
        wide = [f for f in formulas(page) if f["over"] > 8]
        assert wide, "at 800 px the Attention page's first formula is wider than its column"
        # it scrolls, its scrollbar takes room, and the box around it does not cut that off
        assert all(f["x"] == "auto" and f["bar"] >= 5 and f["clipped"] <= 0.5 for f in wide)
        # and the scrollbar is drawn: its thumb shows without hovering (the theme's is
        # transparent until the mouse is over it)
        f = wide[0]
        strip = page.screenshot(clip={"x": f["left"], "y": f["bottom"] - f["bar"],
                                      "width": f["right"] - f["left"], "height": f["bar"]})
        pixels = Image.open(io.BytesIO(strip)).convert("L").tobytes()
        assert sum(p < 225 for p in pixels) >= 40, "no visible scrollbar under the formula"
    finally:
        chromium.close()
    assert not outside


def test_a_formula_that_fits_gets_no_scrollbar(page, app_url):
    visit(page, f"{app_url}/positional")
    settle(page)
    shown = formulas(page)
    assert shown
    # none overflows by the 2 px of KaTeX's trailing spacer: each fits, or really is wider
    # than its column
    assert not [f for f in shown if 0 < f["over"] <= 8]
