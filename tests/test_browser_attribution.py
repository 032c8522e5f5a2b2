"""The Transformer block page's "Who wrote the prediction" views in a real browser: the
waterfall and the commitment strip draw without an exception on two models, the check
that the bars add up to the logit shows, and a typed token that is several tokens gets a
message while the waterfall stays.

Screenshots land in the artifacts folder as attribution-*.png (see tests/helpers.py).
"""

from __future__ import annotations

import pytest

from tests.helpers import check_no_exception, eventually, screenshot, visit, wait_for_app

pytestmark = pytest.mark.browser

CHART = '[data-testid="stPlotlyChart"] .main-svg'
MATH = ".katex"
VIEWS = ["Direct logit attribution", "Commitment layer"]


@pytest.fixture(autouse=True)
def _router_first(page, app_url):
    """Open the app's root first, as a user arriving from Home does."""
    page.set_viewport_size({"width": 1400, "height": 2000})
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
def test_both_views_draw(page, app_url, model):
    visit(page, f"{app_url}/block?model={model}")
    for n, label in enumerate(VIEWS):
        open_tab(page, label)
        drawn(page, f"block / {label}")
        assert f"view={label.replace(' ', '+')}" in page.url
        screenshot(page, f"attribution-{model}-{n}-{label.split()[0].lower()}")
    open_tab(page, VIEWS[0])
    assert eventually(lambda: main(page).get_by_text(
        "The bars add up to the model's logit").is_visible())
    assert main(page).get_by_text("is frozen at its value for this input").is_visible()
    assert main(page).locator(f"{MATH}").count() >= 1
    assert main(page).locator("g.waterfalllayer g.trace").count() == 1  # the waterfall


def test_a_typed_token_of_several_tokens_gets_a_message(page, app_url):
    page.goto(f"{app_url}/block?model=mathematics-char&view=Direct+logit+attribution")
    wait_for_app(page, timeout_ms=120_000)  # a cold model on a busy machine: allow more
    drawn(page, "attribution")
    box = page.get_by_role("textbox", name="…or type a token")
    box.fill("xyz")
    box.press("Enter")
    wait_for_app(page)
    assert eventually(lambda: main(page).get_by_text("is 3 tokens").is_visible())
    check_no_exception(page, "attribution with a bad token")
    assert main(page).locator(CHART).count() >= 1  # the waterfall stays, for the list's token
    screenshot(page, "attribution-bad-token")
    box.fill("q")
    box.press("Enter")
    wait_for_app(page)
    assert eventually(lambda: main(page).get_by_text("who wrote the logit of “q”").is_visible())
    screenshot(page, "attribution-typed-q")
