"""The Transformer block page's "Who wrote the prediction" views in a real browser: the
waterfall and the commitment strip draw without an exception on two models, the check
that the bars add up to the logit shows, and a typed token that is several tokens gets a
message while the waterfall stays.

Screenshots land in the artifacts folder as attribution-*.png (see tests/helpers.py).
"""

from __future__ import annotations

import pytest

from tests.helpers import CHART, MAIN, drawn, eventually, open_tab, screenshot, visit

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("from_home")]

MATH = ".katex"
VIEWS = ["Direct logit attribution", "Commitment layer"]


@pytest.mark.parametrize("model", ["mathematics-bpe", "induction-2layer"])
def test_both_views_draw(page, app_url, model):
    visit(page, f"{app_url}/block?model={model}")
    for n, label in enumerate(VIEWS):
        open_tab(page, label)
        assert eventually(lambda v=label: f"view={v.replace(' ', '+')}" in page.url), page.url
        screenshot(page, f"attribution-{model}-{n}-{label.split()[0].lower()}")
    open_tab(page, VIEWS[0])
    main = page.locator(MAIN)
    assert eventually(lambda: main.get_by_text("The bars add up to the model's logit")
                      .is_visible())
    assert main.get_by_text("is frozen at its value for this input").is_visible()
    assert main.locator(MATH).count() >= 1
    assert main.locator("g.waterfalllayer g.trace").count() == 1  # the waterfall


def test_a_typed_token_of_several_tokens_gets_a_message(page, app_url):
    page.goto(f"{app_url}/block?model=mathematics-char&view=Direct+logit+attribution")
    drawn(page, "attribution")  # a cold model on a busy machine: drawn allows two minutes
    box = page.get_by_role("textbox", name="…or type a token")
    box.fill("xyz")
    box.press("Enter")
    drawn(page, "attribution with a bad token", text="is 3 tokens")
    assert page.locator(MAIN).locator(CHART).count() >= 1  # the waterfall stays
    screenshot(page, "attribution-bad-token")
    box.fill("q")
    box.press("Enter")
    drawn(page, "attribution with a typed q", text="who wrote the logit of “q”")
    screenshot(page, "attribution-typed-q")
