"""The Attention page's circuits views in a real browser: each draws its figures and
formulas without an exception, the head pills redraw the circuits, a typed OV source
changes the table, and the taxonomy labels the grid.

Each wait is for what marks the figure drawn (its title, its SVG, a settled page), never
a fixed time: a loaded machine draws late. Screenshots land in the artifacts folder as
circuits-*.png (see tests/helpers.py).
"""

from __future__ import annotations

import pytest

from tests.helpers import MAIN, drawn, eventually, open_tab, screenshot, visit

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("from_home")]

MATH = ".katex"
VIEWS = ["Circuits of a head", "OV circuit", "Head taxonomy",
         "Summed heads", "Rollout"]


@pytest.mark.parametrize("model", ["mathematics-bpe", "induction-2layer"])
def test_every_circuits_view_draws(page, app_url, model):
    visit(page, f"{app_url}/attention?model={model}&layer=1&head=2")
    for n, label in enumerate(VIEWS):
        open_tab(page, label)
        assert page.get_by_role("tab", name=label, exact=True).get_attribute(
            "aria-selected") == "true"
        assert eventually(lambda v=label: f"view={v.replace(' ', '+')}" in page.url), page.url
        screenshot(page, f"circuits-{model}-{n}-{label.split()[0].lower()}")


def test_the_circuits_follow_the_head_and_the_check_passes(page, app_url):
    visit(page, f"{app_url}/attention?view=Circuits+of+a+head&layer=1&head=2")
    drawn(page, "circuits", charts=2, text="W_QK, layer 1, head 2")
    main = page.locator(MAIN)
    assert main.get_by_text("the four terms give the page's scores").is_visible()
    assert main.locator(MATH).count() >= 4
    page.locator(".st-key-head button", has_text="0").click()
    drawn(page, "circuits after choosing head 0", charts=2, text="W_OV, layer 1, head 0")
    assert main.get_by_text("W_QK, layer 1, head 0").first.is_visible()
    assert main.get_by_text("W_QK, layer 1, head 2").count() == 0  # head 2's are gone


def test_a_typed_ov_source_changes_the_table(page, app_url):
    visit(page, f"{app_url}/attention?model=mathematics-char&view=OV+circuit")
    drawn(page, "OV view")
    box = page.get_by_role("textbox", name="…or type one token")
    box.fill("xyz")
    box.press("Enter")
    drawn(page, "OV view with a token of 3", text="is 3 tokens")
    box.fill("q")
    box.press("Enter")
    drawn(page, "OV view with a typed token", text="for 'q', layer")
    screenshot(page, "circuits-ov-typed-q")


def test_the_taxonomy_says_how_each_score_is_measured(page, app_url):
    visit(page, f"{app_url}/attention?model=mathematics-char&view=Head+taxonomy")
    drawn(page, "taxonomy", text="standard repeated random sequence")  # and its grid drawn
    assert page.locator(MAIN).get_by_text("standard repeated random sequence").is_visible()
    screenshot(page, "circuits-taxonomy-char")
