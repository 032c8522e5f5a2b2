"""The Learning page in a real browser: the microscope draws its formulas and charts, the η
slider moves P(y) and reaches the NaN message, a bad position gets a message, and the
gradient check passes. Screenshots land in the artifacts folder as learning-*.png."""

from __future__ import annotations

import pytest

from tests.helpers import (
    MAIN,
    check_no_exception,
    drawn,
    eventually,
    screenshot,
    visit,
    wait_for_app,
)

pytestmark = pytest.mark.browser


def metric_value(page, label: str) -> str:
    box = page.get_by_test_id("stMetric").filter(has_text=label).first
    return box.get_by_test_id("stMetricValue").inner_text()


def test_the_microscope_and_the_gradient_check(page, app_url):
    page.set_viewport_size({"width": 1400, "height": 4400})  # the whole view in one shot
    visit(page, app_url)  # the root first, as a user arriving from Home
    main = page.locator(MAIN)
    page.get_by_role("link", name="Learning").first.click()
    wait_for_app(page, timeout_ms=120_000)  # the first, cold load encodes the corpus too
    drawn(page, "learning", charts=3)  # then the page has settled: no fixed wait
    assert main.locator(".katex").count() > 3
    assert main.get_by_text("equals autograd's ∂L/∂z on all").is_visible()
    assert main.get_by_text("A small step").is_visible()
    before = metric_value(page, "P(y) after")
    screenshot(page, "learning-microscope")

    thumb = main.get_by_role("slider").first  # the η slider, at 1e-04
    thumb.focus()
    for _ in range(2):
        thumb.press("ArrowRight")
    wait_for_app(page)
    assert eventually(lambda: metric_value(page, "P(y) after") != before)
    thumb.press("End")  # η = 1e+20
    wait_for_app(page)
    assert eventually(lambda: main.get_by_text("the step overflows:").is_visible())
    check_no_exception(page, "learning with a huge η")
    screenshot(page, "learning-nan")

    box = page.get_by_label("Target position t", exact=True)
    box.fill("99")
    box.press("Enter")
    wait_for_app(page)
    assert eventually(lambda: main.get_by_text("target position 99 is out of range")
                      .is_visible())
    box.fill("30")
    box.press("Enter")
    wait_for_app(page)
    page.get_by_role("tab", name="Gradient check", exact=True).click()
    wait_for_app(page)
    check_no_exception(page, "gradient check")
    assert eventually(lambda: main.get_by_text("Autograd passes").is_visible(), 60)
    screenshot(page, "learning-gradient-check")


def slider_label(page, key: str) -> str:
    return page.locator(f".st-key-{key}").get_by_test_id("stSliderThumbValue").inner_text()


def test_settings_in_a_view_outlive_a_visit_to_another_view(page, app_url):
    """Streamlit drops the state of a widget that a run does not draw: η, ε and the replay's
    step came back at their defaults after a look at another view. They are bound to the
    URL, which keeps them (and a link carries them)."""
    page.set_viewport_size({"width": 1400, "height": 1400})
    visit(page, f"{app_url}/learning")
    drawn(page, "learning", charts=3)
    assert slider_label(page, "learn_eta") == "1e-04"
    eta = page.locator(".st-key-learn_eta").get_by_role("slider")
    eta.focus()
    eta.press("ArrowRight")
    wait_for_app(page)
    moved = slider_label(page, "learn_eta")
    assert moved != "1e-04"
    page.get_by_role("tab", name="Gradient check", exact=True).click()
    wait_for_app(page)
    eps = page.locator(".st-key-check_eps").get_by_role("slider")
    eps.focus()
    eps.press("ArrowLeft")
    wait_for_app(page)
    assert eventually(lambda: slider_label(page, "check_eps") == "1e-05")
    page.get_by_role("tab", name="One step under the microscope", exact=True).click()
    drawn(page, "learning, back", charts=3)
    assert slider_label(page, "learn_eta") == moved
    assert "learn_eta=" in page.url
    page.get_by_role("tab", name="Gradient check", exact=True).click()
    wait_for_app(page)
    assert eventually(lambda: slider_label(page, "check_eps") == "1e-05")
    check_no_exception(page, "learning, views revisited")


def test_a_stale_setting_in_a_link_falls_back_to_the_default(page, app_url):
    """A link may carry a setting another model allowed: a replay step this model never
    saved, a learning rate off the slider. The page opens at the defaults, no exception."""
    visit(page, f"{app_url}/learning?model=induction-2layer&view=Training+replay"
                "&replay_step=7&learn_eta=3")
    wait_for_app(page, timeout_ms=120_000)
    check_no_exception(page, "learning, a stale replay step")
    assert eventually(lambda: page.locator(".st-key-replay_step")
                      .get_by_test_id("stSliderThumbValue").count() == 1, 60)
    assert slider_label(page, "replay_step") != "7"


def test_the_open_view_is_kept_across_a_visit_to_another_page(page, app_url):
    """A review left Learning on "Gradient check", looked at Attention and came back to the
    first view: the page now reopens the view it was left on (a link's ?view= still wins)."""
    visit(page, f"{app_url}/learning")
    page.get_by_role("tab", name="Gradient check", exact=True).click()
    wait_for_app(page)
    nav = page.get_by_test_id("stSidebarNav")
    nav.get_by_role("link", name="Attention").click()
    wait_for_app(page)
    assert eventually(lambda: page.get_by_role("tab", selected=True).first.inner_text()
                      == "All heads")
    nav.get_by_role("link", name="Learning").click()
    wait_for_app(page)
    assert eventually(lambda: page.get_by_role("tab", selected=True).first.inner_text()
                      == "Gradient check")
    assert eventually(lambda: page.get_by_text("Autograd passes").first.is_visible(), 60)
    nav.get_by_role("link", name="Home").click()  # a page without view tabs between
    wait_for_app(page)
    nav.get_by_role("link", name="Learning").click()
    wait_for_app(page)
    assert eventually(lambda: page.get_by_role("tab", selected=True).first.inner_text()
                      == "Gradient check")
    check_no_exception(page, "learning, back from attention and home")


def test_sections_below_the_fold_are_drawn_when_scrolled_to(page, app_url):
    """In a 1,000 px window the microscope's sections 2–4 wait below the fold (``fold``):
    the page settles with section 1 and a marker; scrolling down draws the rest."""
    visit(page, f"{app_url}/learning")
    main = page.locator(MAIN)
    assert eventually(lambda: main.get_by_text("1. The loss of one prediction").is_visible())
    marker = main.locator(".gv-fold")  # sent after section 1: it may arrive a moment later
    assert eventually(lambda: marker.count() == 1)
    assert "one step of gradient descent" in marker.inner_text()
    assert main.get_by_text("2. The gradient at the logits").count() == 0
    page.mouse.move(800, 600)
    for _ in range(4):  # a reader's mouse wheel, on Streamlit's scrolling main area
        page.mouse.wheel(0, 200)
    assert eventually(lambda: main.locator(".gv-fold").count() == 0, 60)
    wait_for_app(page)
    assert main.get_by_text("A small step").count() == 1
    assert main.get_by_text("equals autograd's ∂L/∂z on all").count() == 1
    check_no_exception(page, "learning after scrolling to the fold")
    screenshot(page, "learning-below-the-fold")
