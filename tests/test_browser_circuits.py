"""The Attention page's circuits views in a real browser: each draws its figures and
formulas without an exception, the head pills redraw the circuits, a typed OV source
changes the table, and the taxonomy labels the grid.

Screenshots land in the artifacts folder as circuits-*.png (see tests/helpers.py).
"""

from __future__ import annotations

import pytest

from tests.helpers import check_no_exception, eventually, screenshot, visit, wait_for_app

pytestmark = pytest.mark.browser

CHART = '[data-testid="stPlotlyChart"] .main-svg'
MATH = ".katex"
VIEWS = ["Circuits of a head", "OV circuit", "Head taxonomy",
         "Summed heads", "Rollout"]


@pytest.fixture(autouse=True)
def _router_first(page, app_url):
    """Open the app's root first, as a user arriving from Home does."""
    page.set_viewport_size({"width": 1400, "height": 2400})
    visit(page, app_url)


def main(page):
    return page.get_by_test_id("stMainBlockContainer")


def open_tab(page, label: str) -> None:
    page.get_by_role("tab", name=label, exact=True).click()
    wait_for_app(page)


def drawn(page, where: str) -> None:
    check_no_exception(page, where)
    page.locator(CHART).first.wait_for(state="visible", timeout=20_000)


@pytest.mark.parametrize("model", ["mathematics-bpe", "induction-2layer"])
def test_every_circuits_view_draws(page, app_url, model):
    visit(page, f"{app_url}/attention?model={model}&layer=1&head=2")
    for n, label in enumerate(VIEWS):
        open_tab(page, label)
        drawn(page, f"attention / {label}")
        assert page.get_by_role("tab", name=label, exact=True).get_attribute(
            "aria-selected") == "true"
        assert f"view={label.replace(' ', '+')}" in page.url
        screenshot(page, f"circuits-{model}-{n}-{label.split()[0].lower()}")


def test_the_circuits_follow_the_head_and_the_check_passes(page, app_url):
    visit(page, f"{app_url}/attention?view=Circuits+of+a+head&layer=1&head=2")
    drawn(page, "circuits")
    assert main(page).get_by_text("W_QK, layer 1, head 2").first.is_visible()
    assert main(page).get_by_text("the four terms give the page's scores").is_visible()
    assert main(page).locator(MATH).count() >= 4
    page.locator(".st-key-head button", has_text="0").click()
    wait_for_app(page)
    check_no_exception(page, "circuits after choosing head 0")
    assert eventually(lambda: main(page).get_by_text("W_OV, layer 1, head 0").first.is_visible())


def test_a_typed_ov_source_changes_the_table(page, app_url):
    visit(page, f"{app_url}/attention?model=mathematics-char&view=OV+circuit")
    drawn(page, "OV view")
    box = page.get_by_role("textbox", name="…or type one token")
    box.fill("xyz")
    box.press("Enter")
    wait_for_app(page)
    assert eventually(lambda: main(page).get_by_text("is 3 tokens").is_visible())
    box.fill("q")
    box.press("Enter")
    wait_for_app(page)
    assert eventually(lambda: main(page).get_by_text("E W_OV W_U for 'q'").first.is_visible())
    check_no_exception(page, "OV view with a typed token")
    screenshot(page, "circuits-ov-typed-q")


def test_the_taxonomy_says_how_each_score_is_measured(page, app_url):
    visit(page, f"{app_url}/attention?model=mathematics-char&view=Head+taxonomy")
    drawn(page, "taxonomy")
    assert main(page).get_by_text("standard repeated random sequence").is_visible()
    assert main(page).get_by_text("L0 H0", exact=False).first.is_visible()
    screenshot(page, "circuits-taxonomy-char")
