"""The model pages in a real browser: every view of Embeddings, Positional encoding,
Attention and Transformer block draws its figures and formulas without an exception,
the layer and head pills redraw the figures, and bad URLs get a message.

Direct links on a fresh server are checked in tests/test_browser.py; here each test opens
Home first (``from_home``). Screenshots land in the artifacts folder as model-*.png (see
tests/helpers.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import (
    CHART,
    MAIN,
    MODEL_PAGE_VIEWS,
    check_no_exception,
    drawn,
    eventually,
    open_tab,
    screenshot,
    settle,
    visit,
    wait_for_app,
)

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("from_home")]

MATH = ".katex"


def view_drawn(page, where: str) -> None:
    """Wait until the open view shows a drawn chart or, in a view without one ("Order
    without positions"), a formula, and the page has settled; an exception fails at once."""
    shown = page.locator(MAIN).get_by_role("tabpanel").first.locator(f"{CHART}, {MATH}")
    shown.first.or_(page.get_by_test_id("stException")).first.wait_for(timeout=120_000)
    settle(page)
    check_no_exception(page, where)


@pytest.mark.parametrize("path", list(MODEL_PAGE_VIEWS))
def test_every_view_draws(page, app_url, path):
    visit(page, f"{app_url}/{path}")
    for n, label in enumerate(MODEL_PAGE_VIEWS[path]):
        if n:
            page.get_by_role("tab", name=label, exact=True).click()
        view_drawn(page, f"{path} / {label}")
        assert page.get_by_role("tab", name=label, exact=True).get_attribute(
            "aria-selected") == "true"
        screenshot(page, f"model-{path}-{n}-{label.split()[0].lower()}")


def test_attention_pills_redraw_the_head(page, app_url):
    visit(page, f"{app_url}/attention?layer=1&head=2")
    main = page.locator(MAIN)
    assert main.get_by_text("layer 1, head 2: W_attn").first.is_visible()
    page.locator(".st-key-head button", has_text="0").click()
    drawn(page, "attention after choosing head 0", text="layer 1, head 0: W_attn")
    assert main.get_by_text("layer 1, head 0: W_attn").first.is_visible()
    assert "head=" not in page.url  # head 0 is the default: the URL stays clean
    open_tab(page, "Head ablation")
    assert main.get_by_text("L1 H0").first.is_visible()  # the current head, switched off
    screenshot(page, "model-attention-ablation-L1H0")


def test_the_large_head_waits_below_the_fold_and_its_button_draws_it(page, app_url):
    """In a 1,000 px window Attention settles with the grid and a marker below it
    (``fold``); the marker's button draws the chosen head large, and later runs of the
    session draw it at once."""
    page.set_viewport_size({"width": 1400, "height": 1000})
    visit(page, f"{app_url}/attention?layer=1&head=2")
    main = page.locator(MAIN)
    drawn(page, "attention, first screen")
    assert main.get_by_text("layer 1, head 2: W_attn").count() == 0
    marker = main.locator(".gv-fold")
    assert "layer 1, head 2 large" in marker.inner_text()
    marker.get_by_role("button", name="Draw it now").click()
    drawn(page, "attention after the fold's button", text="layer 1, head 2: W_attn")
    assert main.locator(".gv-fold").count() == 0
    page.locator(".st-key-head button", has_text="0").click()
    drawn(page, "attention, another head", text="layer 1, head 0: W_attn")
    assert main.locator(".gv-fold").count() == 0


def test_bad_url_and_long_prompt_get_messages(page, app_url):
    long = "The Steenrod problem asks which classes are images of manifolds. " * 30
    visit(page, f"{app_url}/attention?layer=99&head=abc&prompt={long}")
    main = page.locator(MAIN)
    assert main.get_by_text("The link asks for layer “99”").is_visible()
    assert main.get_by_text("The link asks for head “abc”").is_visible()
    assert main.get_by_text("cut here").first.is_visible()
    drawn(page, "attention with a bad URL")
    screenshot(page, "model-attention-bad-url-long-prompt")
    visit(page, f"{app_url}/block?prompt=")
    assert main.get_by_text("The prompt is empty").is_visible()


def test_the_prompt_follows_the_student_from_page_to_page(page, app_url):
    """A prompt from the link, then one typed on another page, reaches every page that has
    a prompt box, and the link of each page carries it."""
    visit(page, f"{app_url}/attention?prompt=carry+me+over")
    box = page.get_by_role("textbox", name="Prompt")
    assert box.input_value() == "carry me over"
    page.get_by_role("link", name="Generation").first.click()
    wait_for_app(page)
    assert eventually(lambda: box.input_value() == "carry me over")
    assert "prompt=carry+me+over" in page.url
    box.fill("typed on generation")
    box.press("Control+Enter")
    wait_for_app(page)
    page.get_by_role("link", name="Transformer block").first.click()
    wait_for_app(page)
    assert eventually(lambda: box.input_value() == "typed on generation")
    assert eventually(lambda: "prompt=typed+on+generation" in page.url)


def test_a_table_is_drawn_when_its_expander_opens(page, app_url):
    """Tables behind an expander cost a first visit nothing; opening one draws it."""
    visit(page, f"{app_url}/attention?layer=1&head=2")
    box = page.locator(".st-key-pattern_table")
    assert box.get_by_test_id("stDataFrame").count() == 0  # closed: nothing mounted
    box.get_by_text("This head's pattern as a table").click()
    box.get_by_test_id("stDataFrame").wait_for(timeout=60_000)
    settle(page)
    check_no_exception(page, "attention / pattern table")
    canvas = box.get_by_test_id("stDataFrame").locator("canvas").first  # the data grid
    assert eventually(lambda: (canvas.bounding_box() or {}).get("height", 0) > 100)
    with page.expect_download(timeout=30_000) as saved:  # the file the button carries
        box.get_by_role("button", name="Download CSV").click()
    assert saved.value.suggested_filename == "pattern-L1-H2.csv"
    rows = Path(saved.value.path()).read_text(encoding="utf-8").splitlines()
    assert rows[0].startswith("query \\ key,0: ") and len(rows) == 24  # header, 23 tokens
    screenshot(page, "model-attention-pattern-table")


def test_a_new_prompt_shows_the_token_the_page_uses(from_home, app_url):
    """The query box read "22: ." after the prompt became "x" (the page used position 0).
    The box is the browser's own select (``choice``): a pick reruns the page on it."""
    page = from_home
    visit(page, f"{app_url}/attention")
    box = page.get_by_role("combobox", name="Query token (a row of W_attn)")
    shown = "s => s.options[s.selectedIndex].text"
    assert box.evaluate(shown).startswith("22: ")
    box.select_option(index=5)
    wait_for_app(page)
    page.get_by_text("(position 5) looks most").wait_for(timeout=60_000)
    assert box.evaluate(shown).startswith("5: ")
    box.focus()
    for _ in range(3):  # arrow keys on the closed box: one pick, sent when the keys stop
        box.press("ArrowDown")
    page.get_by_text("(position 8) looks most").wait_for(timeout=60_000)
    wait_for_app(page)
    assert box.evaluate(shown).startswith("8: ")
    prompt = page.get_by_role("textbox", name="Prompt")
    prompt.fill("x")
    prompt.press("Control+Enter")
    wait_for_app(page)
    assert eventually(lambda: box.evaluate(shown) == "0: x"), box.evaluate(shown)
    assert box.evaluate("s => s.options.length") == 1
    check_no_exception(page, "attention with a one-token prompt")
    screenshot(page, "model-attention-query-box")


@pytest.mark.parametrize("path", ["/attention", "/block"])
def test_every_view_tab_shows_on_a_laptop(from_home, app_url, path):
    """At 1280 px the last tabs (Summed heads, Rollout, Commitment layer) hid behind the tab
    bar's scroll arrow: the tabs wrap onto a second row instead."""
    page = from_home
    page.set_viewport_size({"width": 1280, "height": 900})
    visit(page, app_url + path)
    bar = page.locator('[data-testid="stTabs"] [role="tablist"]').first
    assert bar.evaluate("e => e.scrollWidth <= e.clientWidth + 1")
    right = bar.evaluate("e => e.getBoundingClientRect().right")
    tabs = page.locator('[data-testid="stTabs"] [role="tab"]')
    assert tabs.count() >= 7
    assert all(box["x"] + box["width"] <= right + 1 for box in
               (tabs.nth(k).bounding_box() for k in range(tabs.count())))
