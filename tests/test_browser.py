"""The running app in a real browser: every page loads, reacts, and shows no exception.

Screenshots land in tests/artifacts/screenshots/ for a human to look at.
"""

from __future__ import annotations

import pytest

from tests.conftest import check_no_exception, screenshot, visit, wait_for_app

pytestmark = pytest.mark.browser

# url path -> a text that must be on the page once it has drawn
PAGES = {
    "": "a GPT, step by step",
    "tokenizers": "Tokenizers",
}


@pytest.mark.parametrize("path", list(PAGES))
def test_every_page_loads(page, app_url, path):
    visit(page, f"{app_url}/{path}", name=f"page-{path or 'home'}")
    assert page.get_by_text(PAGES[path]).first.is_visible()


def test_every_registered_page_is_covered(page, app_url):
    """The sidebar navigation lists exactly the pages this test file visits."""
    visit(page, app_url)
    links = page.locator('[data-testid="stSidebarNav"] a')
    hrefs = {links.nth(i).get_attribute("href").rstrip("/").rsplit("/", 1)[-1]
             for i in range(links.count())}
    expected = {p or app_url.rsplit("/", 1)[-1] for p in PAGES}
    assert hrefs == expected


def test_tokenizers_page_reacts(page, app_url):
    visit(page, f"{app_url}/tokenizers?tokenizer=GPT-2")
    chips = page.locator(".gv-chip")
    before = chips.count()
    assert before > 10
    box = page.get_by_label("Text to tokenize")
    box.fill("Hello world<|endoftext|> 👨‍👩‍👧 \x00 שלום")
    box.press("Control+Enter")
    wait_for_app(page)
    check_no_exception(page, "tokenizers after typing")
    assert chips.count() != before
    assert page.locator(".gv-chip.partial").count() > 0  # the emoji's partial bytes
    screenshot(page, "tokenizers-gpt2-hard-text")
    page.get_by_role("tab", name="BPE merges").click()
    page.wait_for_timeout(300)
    screenshot(page, "tokenizers-bpe-merges")
    page.get_by_role("tab", name="Compare").click()
    page.wait_for_timeout(300)
    assert page.get_by_text("the same ids").first.is_visible()
    screenshot(page, "tokenizers-compare")
