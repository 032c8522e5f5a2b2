"""The running app in a real browser: every page loads, reacts, and shows no exception.

Screenshots land in the artifacts folder (``tests.helpers.SCREENSHOTS``, a temporary
folder unless GPTVIZ_ARTIFACTS says otherwise) for a human to look at.
"""

from __future__ import annotations

import pytest

from tests.helpers import (
    check_no_exception,
    eventually,
    running_app,
    screenshot,
    settle,
    visit,
    wait_for_app,
)

pytestmark = pytest.mark.browser

# url path -> a text that must be on the page once it has drawn
PAGES = {
    "": "a GPT, step by step",
    "lesson": "Step 1 of 14",
    "tokenizers": "Tokenizers",
    "embeddings": "One-hot × E",
    "positional": "Sinusoidal formula",
    "attention": "All heads",
    "block": "The block, step by step",
    "generation": "Generation",
    "training": "The data and the loss",
    "learning": "One step under the microscope",
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
    page.set_viewport_size({"width": 1400, "height": 2200})  # the whole page in one shot
    visit(page, f"{app_url}/tokenizers?tokenizer=GPT-2")
    assert page.get_by_role("radio", name="GPT-2").is_checked() or \
        "GPT-2" in page.locator('[data-testid="stButtonGroup"] [aria-checked="true"]').inner_text()
    chips = page.locator(".gv-chip")
    before = chips.count()
    assert before > 10
    box = page.get_by_label("Text to tokenize")
    box.fill("Hello world<|endoftext|> 👨‍👩‍👧 \x00 שלום")
    box.press("Control+Enter")
    wait_for_app(page)
    check_no_exception(page, "tokenizers after typing")
    assert eventually(lambda: chips.count() != before)
    assert eventually(lambda: page.locator(".gv-chip.partial").count() > 0)  # emoji bytes
    screenshot(page, "tokenizers-gpt2-hard-text")
    page.get_by_role("tab", name="BPE merges").click()
    settle(page)
    screenshot(page, "tokenizers-bpe-merges")
    page.get_by_role("tab", name="Compare").click()
    settle(page)
    assert eventually(lambda: page.get_by_text("the same ids").first.is_visible())
    screenshot(page, "tokenizers-compare")


def _choose_upload(page) -> None:
    page.get_by_test_id("stSidebar").get_by_role("radio", name="Upload a .txt file…").click()
    wait_for_app(page)


@pytest.mark.parametrize("content, message", [
    (b"", "is empty"),
    ("Gödel".encode("latin-1") * 10, "not UTF-8"),
])
def test_bad_uploads_are_explained(page, app_url, tmp_path, content, message):
    visit(page, f"{app_url}/tokenizers")
    _choose_upload(page)
    bad = tmp_path / "corpus.txt"
    bad.write_bytes(content)
    page.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(str(bad))
    wait_for_app(page)
    check_no_exception(page, f"upload {message}")
    assert eventually(lambda: page.get_by_text(message).first.is_visible())
    assert page.locator(".gv-chip").count() > 0  # the page still works on the bundled corpus


def test_good_upload_trains_the_tokenizers(page, app_url, tmp_path):
    visit(page, f"{app_url}/tokenizers?tokenizer=Word")
    _choose_upload(page)
    good = tmp_path / "tiny.txt"
    good.write_text("The Steenrod problem for closed orientable manifolds. " * 40)
    page.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(str(good))
    wait_for_app(page)
    check_no_exception(page, "good upload")
    assert eventually(lambda: page.get_by_text("Corpus: tiny.txt").first.is_visible())
    # "was solved by Thom in 1954" is not in the uploaded text: unknown words appear
    assert page.locator(".gv-chip").filter(has_text="<|UNK|>").count() > 0
    screenshot(page, "tokenizers-uploaded-corpus")


def test_a_direct_link_on_a_fresh_server_gets_the_router(page):
    """A shared link opened before anyone has visited Home still runs app.py's router
    (a folder named pages/ would make Streamlit serve the bare script instead)."""
    with running_app() as url:
        page.goto(f"{url}/tokenizers?tokenizer=GPT-2")
        wait_for_app(page)
        check_no_exception(page, "direct link")
        nav = page.locator('[data-testid="stSidebarNav"]').inner_text()
        assert "Tokenizers" in nav and "Transformer block" in nav
        assert "app_pages" not in nav and "\napp\n" not in f"\n{nav}\n"
