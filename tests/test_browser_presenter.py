"""Presenter mode in Chromium, at projector sizes: every page's main figure (Tokenizers'
chips, Training's Start and run) starts in the first screen, the sidebar is gone, chart text
is at least 16 px, and the keyboard moves views and steps but never a chosen answer or a
text being typed.

Screenshots land in the artifacts folder as presenter-*.png (see tests/helpers.py).
"""

from __future__ import annotations

import pytest

from gptviz.app.shared.presenter import CHART_FONT_PX
from tests.helpers import (
    CHART,
    SCREENSHOTS,
    check_no_exception,
    eventually,
    screenshot,
    settle,
    visit,
)

pytestmark = pytest.mark.browser

FIGURE = CHART + ", .gv-svgbox"  # an SVG chart's box is the element the page lays out
# page -> what the room must see first
MAIN_FIGURE = {
    "tokenizers": ".gv-chips",
    "embeddings": FIGURE,
    "positional": FIGURE,
    "attention": FIGURE,
    "block": FIGURE,
    "generation": ".gv-topk",  # HTML bars (generation/bars.py)
    "training": ".st-key-tr_start",
    "learning": '[role="tabpanel"] .katex-display',  # the microscope opens on L = −ln P(y)
}


def _selected_tab(page) -> str:
    return page.locator('[data-testid="stMain"] [role="tab"][aria-selected="true"]'
                        ).first.inner_text()


@pytest.mark.parametrize("width, height", [(1280, 720), (1024, 768)])
@pytest.mark.parametrize("name", list(MAIN_FIGURE))
def test_the_main_figure_is_in_the_first_screen(page, app_url, name, width, height):
    page.set_viewport_size({"width": width, "height": height})
    visit(page, f"{app_url}/{name}?presenter=true")
    settle(page)
    assert not page.locator('[data-testid="stSidebar"]').is_visible()
    figure = page.locator('[data-testid="stMain"]').locator(MAIN_FIGURE[name]).first
    assert eventually(lambda: figure.bounding_box() is not None), f"{name}: no main figure"
    top = page.evaluate("e => e.getBoundingClientRect().top", figure.element_handle())
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)  # the window: what the room sees
    page.screenshot(path=str(SCREENSHOTS / f"presenter-{name}-{width}x{height}.png"))
    assert top < height - 60, f"{name} at {width}x{height}: the figure starts at {top:.0f} px"
    assert "presenter=true" in page.url


def test_chart_text_reads_from_the_back_of_the_room(page, app_url):
    """Lesson step 6's bar charts (plotly) at 1280 px: every tick label at least 16 px."""
    page.set_viewport_size({"width": 1280, "height": 720})
    visit(page, f"{app_url}/lesson?presenter=true&step=6")
    page.keyboard.press("r")
    settle(page)
    sizes = page.evaluate("""() => [...document.querySelectorAll(
        '.main-svg .xtick text, .main-svg .ytick text, .main-svg .legendtext')]
        .map(t => parseFloat(getComputedStyle(t).fontSize))""")
    assert sizes and min(sizes) >= CHART_FONT_PX, sizes


def test_arrows_move_views_not_a_text_being_typed(page, app_url):
    page.set_viewport_size({"width": 1280, "height": 720})
    visit(page, f"{app_url}/attention?presenter=true")
    first = _selected_tab(page)
    page.keyboard.press("ArrowRight")
    assert eventually(lambda: _selected_tab(page) != first), "→ did not open the next view"
    second = _selected_tab(page)
    settle(page)
    page.keyboard.press("ArrowLeft")
    assert eventually(lambda: _selected_tab(page) == first)
    settle(page)
    page.get_by_role("button", name="Prompt").click()
    box = page.get_by_role("textbox", name="Prompt")
    box.click()
    page.keyboard.press("ArrowRight")  # moves the caret, nothing else
    page.wait_for_timeout(500)
    assert _selected_tab(page) == first and second != first
    check_no_exception(page, "attention, keyboard")


def test_question_mark_lists_the_keys_and_n_takes_a_token(page, app_url):
    page.set_viewport_size({"width": 1280, "height": 720})
    visit(page, f"{app_url}/generation?presenter=true")
    page.keyboard.press("?")
    help_box = page.locator("#gv-keys-help")
    assert eventually(help_box.is_visible)
    assert "Next token" in help_box.inner_text()
    screenshot(page, "presenter-keys")
    page.keyboard.press("Escape")
    assert eventually(lambda: not help_box.count())
    page.keyboard.press("n")
    assert eventually(lambda: page.get_by_text("1 generated").count() > 0), "N took no token"
    check_no_exception(page, "generation, N")


def test_an_arrow_on_a_chosen_answer_moves_the_lesson_not_the_answer(page, app_url):
    """A review: answer "1" picked, then → moved the choice to "2" and stayed on the step."""
    page.set_viewport_size({"width": 1280, "height": 720})
    visit(page, f"{app_url}/lesson?presenter=true&step=1")
    radios = page.locator('[data-testid="stRadio"] input[type="radio"]')
    assert eventually(lambda: radios.count() >= 2)
    page.locator('[data-testid="stRadio"] [role="radiogroup"] label').first.click()
    assert eventually(lambda: radios.first.is_checked())
    page.keyboard.press("ArrowRight")  # the focus is on the radio button just picked
    assert eventually(lambda: page.get_by_text("Step 2 of 14").first.is_visible()), \
        "→ on an answer did not move the lesson"
    settle(page)
    page.keyboard.press("ArrowLeft")
    assert eventually(lambda: page.get_by_text("Step 1 of 14").first.is_visible())
    settle(page)
    checked = page.locator('[data-testid="stRadio"] input[type="radio"]:checked')
    assert checked.count() <= 1  # never a second answer picked by the arrows
    if checked.count():
        assert radios.first.is_checked()


def test_one_back_returns_to_the_previous_page(page, app_url):
    """A teacher's walk: Home → Attention → a new prompt → Generation → Next token twice →
    Back. Five Backs changed nothing (each keystroke and token was an entry of its own)."""
    page.set_viewport_size({"width": 1280, "height": 900})
    visit(page, app_url)
    page.get_by_role("link", name="Attention").first.click()
    settle(page)
    box = page.get_by_role("textbox", name="Prompt")
    box.fill("one two three four five")
    box.press("Control+Enter")
    settle(page)
    page.get_by_role("link", name="Generation").first.click()
    settle(page)
    for clicks in (1, 2):
        page.locator(".st-key-gen_next").locator("button").click()
        assert eventually(lambda c=clicks: page.get_by_text(f"{c} generated").count() > 0)
        settle(page)
    page.go_back()
    assert eventually(lambda: "/attention" in page.url), page.url
    settle(page)
    assert eventually(lambda: page.get_by_role("tab", name="All heads").count() > 0)
    check_no_exception(page, "attention after Back")


def test_trainings_choices_are_never_cut_in_a_narrow_window(page, app_url):
    """A teacher at 1024 px (sidebar open) read "ro" for "rope": every option of Training's
    segmented choices is drawn whole, inside the page."""
    page.set_viewport_size({"width": 1024, "height": 768})
    visit(page, f"{app_url}/training")
    for key in ("tr_tokenizer", "tr_positional", "tr_activation"):
        cut = page.evaluate("""(key) => {
            const box = document.querySelector('.st-key-' + key);
            const main = document.querySelector('[data-testid="stMainBlockContainer"]')
                .getBoundingClientRect();
            return [...box.querySelectorAll('button')].filter(b => {
                const r = b.getBoundingClientRect();
                let clip = false;
                for (let e = b.parentElement; e && e !== box.parentElement; e = e.parentElement) {
                    const c = e.getBoundingClientRect();
                    if (getComputedStyle(e).overflow !== 'visible' && r.right > c.right + 1)
                        clip = true;
                }
                return clip || r.right > main.right + 1 || b.scrollWidth > b.clientWidth + 1;
            }).map(b => b.textContent);
        }""", key)
        assert not cut, f"{key}: {cut} cut"
    screenshot(page, "training-1024")
