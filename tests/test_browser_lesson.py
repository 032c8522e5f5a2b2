"""The Lesson page in Chromium: a teacher walks it by keyboard in presenter mode on a
1280 × 720 projector (→ next, R reveal, ← back) with no horizontal scrolling, a step's
link opens its explore page in the same state, and the downloaded handout draws every
figure with the network switched off.

Screenshots land in the artifacts folder as lesson-*.png (see tests/helpers.py).
"""

from __future__ import annotations

import pytest

from tests.helpers import check_no_exception, eventually, screenshot, settle, visit, wait_for_app

pytestmark = pytest.mark.browser

N = 14
REVEAL = ".st-key-lesson_reveal button"
# The page, and Streamlit's own scrolling main area, must not be wider than the window.
NO_OVERFLOW = """() => {
    const doc = document.documentElement, main = document.querySelector('[data-testid="stMain"]');
    return doc.scrollWidth <= doc.clientWidth && (!main || main.scrollWidth <= main.clientWidth);
}"""


# Nor taller: a step, its revealed answer included, fits the projector's screen.
NO_SCROLL = """() => {
    const main = document.querySelector('[data-testid="stMain"]');
    return main.scrollHeight <= main.clientHeight + 2;
}"""


def heading(page, step: int):
    return page.get_by_text(f"Step {step} of {N}", exact=False).first


def press(page, key: str) -> None:
    """A key press aimed at the page, not at whatever widget has the focus."""
    page.evaluate("document.activeElement && document.activeElement.blur()")
    page.keyboard.press(key)
    wait_for_app(page)


def test_presenter_mode_by_keyboard_at_1280x720(page, app_url):
    page.set_viewport_size({"width": 1280, "height": 720})
    visit(page, f"{app_url}/lesson?presenter=true")
    assert not page.locator('[data-testid="stSidebar"]').is_visible()
    assert not page.get_by_role("textbox", name="Prompt").is_visible()
    for step in range(1, N + 1):
        assert eventually(lambda s=step: heading(page, s).is_visible()), f"step {step}"
        if page.locator(REVEAL).count():
            if step % 2:  # a student's answer first, the focus left on it
                page.locator('[data-testid="stRadio"] [role="radiogroup"] label').first.click()
            screenshot(page, f"lesson-{step:02d}a-question")
            page.keyboard.press("r")
            wait_for_app(page)
            assert eventually(lambda: page.locator(REVEAL).count() == 0), f"R at step {step}"
        settle(page)  # every chart drawn, nothing stale
        check_no_exception(page, f"lesson step {step}")
        assert page.evaluate(NO_OVERFLOW), f"step {step} scrolls sideways"
        assert page.evaluate(NO_SCROLL), f"step {step} does not fit 1280 x 720"
        screenshot(page, f"lesson-{step:02d}")  # the window: what the room sees
        if step < N:
            press(page, "ArrowRight")
    assert f"step={N}" in page.url and "presenter=true" in page.url
    page.get_by_role("button", name="Score").click()  # presenter mode: in the title row
    assert eventually(lambda: page.get_by_text("Your score").first.is_visible())
    page.keyboard.press("Escape")
    press(page, "ArrowLeft")
    assert eventually(lambda: heading(page, N - 1).is_visible())


@pytest.mark.parametrize("step", [6, 13])
def test_the_longest_spanish_steps_fit_1280x720(page, app_url, step):
    """Spanish runs longer than English: step 6's answer and step 13's narrative ran 9 and
    28 px past the projector's screen in Spanish while English and Chinese fit."""
    from gptviz import i18n
    from gptviz.app.lesson.steps import title

    page.set_viewport_size({"width": 1280, "height": 720})
    visit(page, f"{app_url}/lesson?presenter=true&lang=es&step={step}")
    with i18n.use("es"):
        label = i18n._("Step {step} of {n} · {title}").format(step=step, n=N, title=title(step))
    assert eventually(lambda: page.get_by_text(label, exact=False).first.is_visible()), label
    if page.locator(REVEAL).count():
        press(page, "r")
        assert eventually(lambda: page.locator(REVEAL).count() == 0), f"R at step {step}"
    settle(page)
    check_no_exception(page, f"lesson step {step} in es")
    screenshot(page, f"lesson-es-{step:02d}")
    assert page.evaluate(NO_OVERFLOW), f"step {step} in es scrolls sideways"
    assert page.evaluate(NO_SCROLL), f"step {step} in es does not fit 1280 x 720"


def test_the_handout_works_offline_and_a_step_opens_its_explore_page(page, app_url, browser,
                                                                      tmp_path):
    page.set_viewport_size({"width": 1400, "height": 1400})
    visit(page, f"{app_url}/lesson?step=7&layer=1&head=2&prompt=one+two+three+four")
    with page.expect_download(timeout=120_000) as download:
        page.get_by_role("button", name="Download this lesson").click()
    path = tmp_path / "lesson.html"
    download.value.save_as(path)
    _check_handout(browser, path)

    page.locator(REVEAL).first.click()
    wait_for_app(page)
    page.get_by_role("link", name="Explore this step on the Attention page").click()
    wait_for_app(page)
    check_no_exception(page, "attention from the lesson")
    assert "/attention" in page.url and "layer=1" in page.url and "head=2" in page.url
    assert eventually(lambda: page.get_by_role("tab", name="Steps of one head", exact=True)
                      .get_attribute("aria-selected") == "true")
    assert page.get_by_role("textbox", name="Prompt").input_value() == "one two three four"
    screenshot(page, "lesson-explore-attention")


def _check_handout(browser, path) -> None:
    """Open the file with the network off: every section, figure and formula is drawn."""
    context = browser.new_context(offline=True, viewport={"width": 1200, "height": 900})
    asked: list[str] = []
    context.route("**/*", lambda route: route.continue_() if route.request.url.startswith(
        "file:") else (asked.append(route.request.url), route.abort()))
    offline = context.new_page()
    offline.goto(path.as_uri())
    figures = offline.locator(".plotly-graph-div")
    assert figures.count() >= 10
    offline.wait_for_function(
        "n => document.querySelectorAll('.plotly-graph-div .main-svg').length >= n",
        arg=figures.count(), timeout=60_000)
    assert offline.locator("section").count() == N
    assert offline.locator("math").count() >= N
    # an aligned block's "=" signs stand in one column (Chromium centres a cell unless told)
    xs = offline.evaluate("""() => [...document.querySelectorAll("mtable")].map(t =>
        [...t.querySelectorAll(":scope > mtr > mtd[columnalign=left]")]
          .map(c => [...c.children].filter(k => k.textContent)[0])  // after the empty <mi/>
          .filter(o => o && o.tagName === "mo" && o.textContent === "=")
          .map(o => o.getBoundingClientRect().left)).filter(a => a.length >= 2)""")
    assert xs and all(max(a) - min(a) < 1 for a in xs), xs
    screenshot(offline, "lesson-handout")
    context.close()
    assert not asked, f"the handout asked the network for {asked[:3]}"


@pytest.mark.parametrize("width, side_by_side", [(1400, True), (1280, False), (1024, False)])
def test_step_7s_two_heatmaps_stack_when_the_column_is_narrow(page, app_url, width,
                                                               side_by_side):
    """A review found step 7's two heatmaps 50 px wide each at a projector's 1024 px, their
    axis titles cut: side by side where both keep their width, one under the other if not."""
    from gptviz.app.lesson.view import FIGURE_PX

    page.set_viewport_size({"width": width, "height": 900})
    visit(page, f"{app_url}/lesson?step=7")
    reveal = page.get_by_role("button", name="Reveal the answer")
    if reveal.count():
        reveal.first.click()
    charts = page.locator(".gv-heat")
    assert eventually(lambda: charts.count() == 2), "step 7's two heatmaps"
    settle(page)
    boxes = [charts.nth(k).bounding_box() for k in range(2)]
    assert all(b["width"] >= FIGURE_PX - 2 for b in boxes)  # neither squeezed
    beside = abs(boxes[0]["y"] - boxes[1]["y"]) < 2
    assert beside == side_by_side, boxes
    row = charts.first.evaluate(
        "e => e.closest('[data-testid=\"stHorizontalBlock\"]').getBoundingClientRect().width")
    if not beside:  # one under the other, each the column's width (was 255 px of ~470)
        assert all(b["width"] >= 0.95 * row for b in boxes), (boxes, row)
    screenshot(page, f"lesson-step-7-{width}")


def test_a_presenter_link_typed_by_hand_survives_a_reload(page, app_url):
    """?presenter=1 opened presenter mode, but the toggle's URL binding, which reads only
    true / false, dropped it from the address: a reload or a shared link came back without."""
    toggle = page.locator(".st-key-presenter input")
    visit(page, f"{app_url}/lesson?presenter=1")
    assert eventually(lambda: "presenter=true" in page.url)
    assert toggle.is_checked()
    page.reload()
    wait_for_app(page)
    assert toggle.is_checked() and "presenter=true" in page.url
    page.locator(".st-key-presenter label").click()
    wait_for_app(page)
    assert eventually(lambda: not toggle.is_checked())
    assert eventually(lambda: "presenter" not in page.url)
    check_no_exception(page, "lesson, presenter mode off")
