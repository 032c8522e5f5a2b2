"""An inline SVG chart in a real browser (``svgbox``): what the page shows is, mark for mark,
the chart the server built, and its legend keys keep their size. The Positional page's
chart is used: sinusoidal PE is exact arithmetic, so the marks must match bit for bit."""

from __future__ import annotations

import pytest

from gptviz.app.speedups.svgplot import read_marks
from tests.helpers import (
    MAIN,
    check_no_exception,
    run_page,
    settle,
    svg_charts,
    unfold,
    visit,
)

pytestmark = pytest.mark.browser


def test_the_page_shows_the_marks_the_server_built(page, app_url):
    expected = svg_charts(run_page("positional"))
    assert expected and all(expected.values())
    visit(page, f"{app_url}/positional")
    unfold(page)  # the curves are below the fold
    settle(page)
    check_no_exception(page, "positional")
    charts = page.locator(MAIN).locator(".gv-svgbox[data-drawn='1'] .gv-svgplot")
    shown = {c.get_attribute("data-title"): read_marks(c.evaluate("e => e.outerHTML"))
             for c in charts.all()}
    assert shown == expected
    keys = page.locator(MAIN).locator(".gv-sp-key svg")
    assert keys.count() >= 2
    assert all(k.bounding_box()["width"] <= 30 for k in keys.all())  # 26 px, not stretched
