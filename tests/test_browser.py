"""The running app in a real browser: every page loads, reacts, and shows no exception.

Screenshots land in the artifacts folder (``tests.helpers.SCREENSHOTS``, a temporary
folder unless GPTVIZ_ARTIFACTS says otherwise) for a human to look at.
"""

from __future__ import annotations

import pytest

from gptviz.app.speedups import fonts
from tests.helpers import (
    check_no_exception,
    eventually,
    running_app,
    screenshot,
    settle,
    unfold,
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
    "join": "Join the class",
}


FONTS_USED = """() => {
    const file = url => url.split('/').pop().split('?')[0];
    const key = (family, style, weight) => [family.replace(/["']/g, ''), style, weight].join('|');
    const loaded = new Set([...document.fonts].filter(f => f.status === 'loaded')
        .map(f => key(f.family, f.style, f.weight)));
    const inUse = [];  // the files of the @font-face rules whose face has been loaded
    for (const sheet of document.styleSheets) {
        let rules; try { rules = sheet.cssRules; } catch (e) { continue; }
        for (const r of rules) {
            if (!(r instanceof CSSFontFaceRule)) continue;
            const m = r.style.getPropertyValue('src').match(/url\\(["']?([^"')]+)/);
            const s = r.style;
            if (m && loaded.has(key(s.getPropertyValue('font-family'),
                    s.getPropertyValue('font-style') || 'normal',
                    s.getPropertyValue('font-weight') || 'normal'))) inUse.push(file(m[1]));
        }
    }
    return {loaded: inUse, fetched: performance.getEntriesByType('resource')
        .filter(e => /\\.woff2$/.test(file(e.name))).map(e => [file(e.name), e.initiatorType])};
}"""  # fonts in use, and each font file fetched with what asked for it ("link": a preload)


@pytest.mark.parametrize("path", list(PAGES))
def test_every_page_loads(page, app_url, path):
    visit(page, f"{app_url}/{path}", name=f"page-{path or 'home'}")
    if not page.locator(f'link[rel="preload"][href*="{fonts.ICONS}"]').count():
        visit(page, f"{app_url}/{path}")  # the server's first page is sent before the router ran
    assert page.get_by_text(PAGES[path]).first.is_visible()
    unfold(page)  # the view whole: what a reader scrolling down will see next too
    # Every font the page drew with was asked for from its head, and each is in use.
    page.wait_for_function("document.fonts.status === 'loaded'")  # none still on its way
    used = page.evaluate(FONTS_USED)
    preloaded = {fonts.media_file(stem) for stem in fonts.FONTS[path]}
    assert None not in preloaded  # every stem names a font file of this Streamlit
    assert not {name for name, how in used["fetched"] if how == "css"}, used["fetched"]
    assert preloaded <= {name for name, how in used["fetched"] if how == "link"}
    assert not preloaded - set(used["loaded"]), "preloaded, never used"


def test_every_registered_page_is_covered(page, app_url):
    """The sidebar navigation lists exactly the pages this test file visits."""
    visit(page, app_url)
    links = page.locator('[data-testid="stSidebarNav"] a')
    hrefs = {links.nth(i).get_attribute("href").rstrip("/").rsplit("/", 1)[-1]
             for i in range(links.count())}
    expected = {p or app_url.rsplit("/", 1)[-1] for p in PAGES}
    assert hrefs == expected
    assert fonts.FONTS.keys() == PAGES.keys()  # each page names its fonts, and no other


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
