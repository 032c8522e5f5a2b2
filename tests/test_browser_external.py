"""A model the server names (``GPTVIZ_MODELS``) in a real browser: a tiny model of GPT-2's
format (a Hugging Face folder: 12 layers of 12 heads, d_model 24, GPT-2's 50,257 tokens,
random weights), picked in the sidebar; then every page, reached through the sidebar as a
student would, settles with no exception and no request to another host (the ``page``
fixture fails a test that makes one), and every view of the Embeddings, Attention and
Generation pages draws.

Screenshots land in the artifacts folder as external-*.png (see tests/helpers.py).
"""

from __future__ import annotations

import pytest

from tests.helpers import (
    MODEL_PAGE_VIEWS,
    check_no_exception,
    eventually,
    running_app,
    screenshot,
    wait_for_app,
)
from tests.test_app_external import NAME, save_tiny_gpt2

pytestmark = pytest.mark.browser

SETTLE_MS = 240_000  # a first draw over 50,257 tokens on a loaded CI machine
# sidebar link -> (url path, a text the page shows once it has drawn)
PAGES = {
    "Home": ("", "a GPT, step by step"),
    "Lesson": ("lesson", "Step 1 of 14"),
    "Tokenizers": ("tokenizers", "Tokenizers"),
    "Embeddings": ("embeddings", "One-hot × E"),
    "Positional encoding": ("positional", "Sinusoidal formula"),
    "Attention": ("attention", "All heads"),
    "Transformer block": ("block", "The block, step by step"),
    "Generation": ("generation", "Generation"),
    "Training": ("training", "The data and the loss"),
    "Learning": ("learning", "One step under the microscope"),
}
SHAPE = "12 layers · 12 heads · d=24"  # the model caption's words for this model
GENERATION_VIEWS = ["This step", "Three temperatures", "Sample N times", "Attention",
                    "History", "Branches", "Beam search"]


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    """``streamlit run app.py`` with GPTVIZ_MODELS naming a folder that holds the model."""
    root = tmp_path_factory.mktemp("models")
    save_tiny_gpt2(root)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GPTVIZ_MODELS", str(root))
        mp.setenv("GPTVIZ_HF_CACHE", "0")  # this machine's own cache stays out of it
        mp.delenv("GPTVIZ_MODEL_MEMORY_MB", raising=False)
        with running_app() as base:
            yield base


def settle(page, where: str) -> None:
    wait_for_app(page, SETTLE_MS)
    check_no_exception(page, where)
    assert "Traceback (most recent call last)" not in page.inner_text("body"), where


def main(page):
    return page.get_by_test_id("stMainBlockContainer")


def pick_model(page) -> None:
    page.locator('[data-testid="stSidebar"] .st-key-model').get_by_role(
        "radio", name=NAME, exact=True).click()
    settle(page, "after picking the model")


def test_pick_the_model_and_walk_every_page(page, url):
    page.set_viewport_size({"width": 1400, "height": 1600})
    page.goto(url)
    settle(page, "home")
    page.get_by_test_id("stSidebarNav").get_by_role("link", name="Embeddings").click()
    settle(page, "embeddings, before picking")
    pick_model(page)
    assert eventually(lambda: main(page).get_by_text(SHAPE).first.is_visible())
    for link, (path, marker) in PAGES.items():
        page.get_by_test_id("stSidebarNav").get_by_role("link", name=link).click()
        settle(page, link)
        # 60 s: a page of 12 layers on a machine busy with the other tests' servers
        assert eventually(lambda m=marker: main(page).get_by_text(m).first.is_visible(), 60), \
            link
        if path not in ("", "tokenizers"):  # the pages that draw a model draw this one
            shown = f"does not fine-tune {NAME}" if path == "training" else SHAPE
            assert eventually(lambda s=shown: main(page).get_by_text(s).first.is_visible(),
                              60), link
            assert f"model={NAME}" in page.url, (link, page.url)
        screenshot(page, f"external-{path or 'home'}")


DRAWN = ('[data-testid="stPlotlyChart"] .main-svg, .katex, [data-testid="stDataFrame"], '
         '.gv-chip, .gv-heat[data-drawn="1"], .gv-svgplot')  # what a view shows once drawn


def open_tab(page, label: str, where: str) -> None:
    """Open a view and wait until it shows something (a figure, a formula, a table)."""
    page.get_by_role("tab", name=label, exact=True).click()
    settle(page, where)
    assert page.get_by_role("tab", name=label, exact=True).get_attribute(
        "aria-selected") == "true", where
    page.locator('[role="tabpanel"]:visible').locator(DRAWN).first.wait_for(
        state="visible", timeout=60_000)
    settle(page, where)


@pytest.mark.parametrize("path", ["embeddings", "attention"])
def test_every_view_draws(page, url, path):
    page.set_viewport_size({"width": 1280, "height": 2000})
    page.goto(f"{url}/{path}?model={NAME}")
    settle(page, path)
    for n, label in enumerate(MODEL_PAGE_VIEWS[path]):
        open_tab(page, label, f"{path} / {label}")
        screenshot(page, f"external-{path}-{n}-{label.split()[0].lower()}")


def test_generation_steps_branches_and_beams(page, url):
    page.set_viewport_size({"width": 1280, "height": 2000})
    page.goto(f"{url}/generation?model={NAME}&temperature=0.8")
    settle(page, "generation")
    page.get_by_role("button", name="Next token").click()
    settle(page, "after Next token")
    box = page.get_by_label("n", exact=True)
    box.fill("5")
    box.press("Enter")
    settle(page, "after setting n")
    page.get_by_role("button", name="Generate n").click()
    settle(page, "after Generate n")
    assert eventually(lambda: main(page).get_by_text("6 generated").first.is_visible())
    for n, label in enumerate(GENERATION_VIEWS):
        open_tab(page, label, f"generation / {label}")
        if label == "Branches":
            page.get_by_role("button", name="Branch", exact=True).click()
            settle(page, "after Branch")
            assert eventually(lambda: main(page).get_by_text("Branched at step").first
                              .is_visible())
        screenshot(page, f"external-generation-{n}-{label.split()[0].lower()}")
    assert main(page).get_by_text("Beam search, best of k = 3").first.is_visible()
