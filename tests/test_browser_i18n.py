"""Every page in Spanish and in Chinese in Chromium at a projector's 1280×720 (issue 41): the
title and the navigation in the language, nothing wider than the window (CJK text wraps),
the charts keep their labels, Chinese drawn with a CJK font (not boxes), Spanish numbers
with the decimal comma, and a right-to-left page laid out right to left.

Screenshots land in the artifacts folder as lang-<lang>-<page>.png (tests/helpers.py).
"""

from __future__ import annotations

import re

import pytest

from gptviz import i18n
from tests.helpers import SCREENSHOTS, check_no_exception, settle, visit

pytestmark = pytest.mark.browser

PAGES = ("", "lesson", "tokenizers", "embeddings", "positional", "attention", "block",
         "generation", "training", "learning", "join")
CJK = re.compile(r"[\u4e00-\u9fff]")
WIDER = """() => {
    const main = document.querySelector('[data-testid="stMain"]');
    const out = [];
    for (const e of main.querySelectorAll('p, li, h1, h2, h3, button, label, [role="tab"]')) {
        const r = e.getBoundingClientRect();
        if (r.width && (r.right > window.innerWidth + 1 || e.scrollWidth > e.clientWidth + 2)
            && getComputedStyle(e).overflowX === 'visible' && !e.closest('.katex-display'))
            out.push(e.tagName + ': ' + e.innerText.slice(0, 60));
    }
    return out;
}"""
TEXT_FONT_OK = """() => {
    // a CJK glyph drawn in a font that has it is as wide as tall; a missing glyph's box
    // (tofu) or a fallback to nothing differs: measure one character in the page's font
    const p = document.querySelector('[data-testid="stMain"] p, [data-testid="stMain"] h1');
    const c = document.createElement('canvas').getContext('2d');
    c.font = getComputedStyle(p).font;
    return document.fonts.check('16px "Noto Sans CJK SC"') ||
           c.measureText('注').width > 0.8 * parseFloat(getComputedStyle(p).fontSize);
}"""


CHART_TEXT = ", ".join([".main-svg .xtick text", ".main-svg .ytick text",
                        ".main-svg .g-xtitle text", ".main-svg .g-ytitle text",
                        ".gv-svgbox text"])


def chart_labels(page) -> int:
    """How many labels the page's charts draw (plotly's and the SVG charts')."""
    return page.evaluate("(sel) => [...document.querySelectorAll(sel)]"
                         ".filter(t => t.textContent.trim()).length", CHART_TEXT)


@pytest.mark.parametrize("lang", ("es", "zh"))
@pytest.mark.parametrize("name", PAGES)
def test_a_page_in_the_language_at_1280x720(page, app_url, lang, name):
    page.set_viewport_size({"width": 1280, "height": 720})
    visit(page, f"{app_url}/{name}?lang={lang}")
    settle(page)
    check_no_exception(page, f"{name or 'home'} in {lang}")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"lang-{lang}-{name or 'home'}.png"))
    with i18n.use(lang):
        nav = [i18n._("Home"), i18n._("Lesson"), i18n._("Attention")]
    sidebar = page.locator('[data-testid="stSidebarNav"]').inner_text()
    assert all(word in sidebar for word in nav), sidebar[:200]
    main = page.locator('[data-testid="stMain"]').inner_text()
    if lang == "zh":
        assert len(CJK.findall(main)) > 20, main[:300]
        assert page.evaluate(TEXT_FONT_OK), "no CJK font draws the page's Chinese"
    wider = page.evaluate(WIDER)
    assert not wider, f"{name} in {lang}: wider than its box: {wider[:5]}"
    width = page.evaluate("() => document.documentElement.scrollWidth")
    assert width <= 1280, f"{name} in {lang}: the page is {width} px wide"


@pytest.mark.parametrize("lang", ("es", "zh"))
def test_charts_keep_their_labels(page, app_url, lang):
    """The SVG chart below Positional encoding's fold draws as many labels in the language
    as in English (plotly's and the canvas's draw theirs the same way in every language)."""
    page.set_viewport_size({"width": 1280, "height": 720})
    counts = []
    for query in ("", f"?lang={lang}"):
        visit(page, f"{app_url}/positional{query}")
        settle(page)
        page.locator(".gv-fold").first.scroll_into_view_if_needed()
        settle(page)
        counts.append(chart_labels(page))
    assert counts[0] > 5 and counts[1] == counts[0], counts


def test_spanish_numbers_have_the_decimal_comma(page, app_url):
    page.set_viewport_size({"width": 1280, "height": 720})
    visit(page, f"{app_url}/generation?lang=es")
    settle(page)
    main = page.locator('[data-testid="stMain"]').inner_text()
    assert re.search(r"\b0,\d{2}", main), main[:400]
    assert not re.search(r"\b0\.\d{3}\b", main), re.findall(r"\b0\.\d{3}\b", main)[:5]


RTL_PO = """msgid ""
msgstr ""
"Language: ar\\n"
"Content-Type: text/plain; charset=utf-8\\n"
"Plural-Forms: nplurals=6; plural=(n==0 ? 0 : n==1 ? 1 : n==2 ? 2 : "
"n%100>=3 && n%100<=10 ? 3 : n%100>=11 && n%100<=99 ? 4 : 5);\\n"

msgid "Home"
msgstr "الرئيسية"

msgid "Positional encoding"
msgstr "الترميز الموضعي"

msgid "Language"
msgstr "اللغة"
"""


def test_a_right_to_left_catalog_a_teacher_adds_lays_out(page, tmp_path):
    """A small Arabic catalog beside the shipped ones (GPTVIZ_LOCALE_DIR): the page's text
    runs right to left, formulas and token chips left to right, nothing wider than 1280."""
    import shutil

    from tests.helpers import running_app

    for lang in ("es", "zh"):
        shutil.copytree(i18n.LOCALE_DIR / lang, tmp_path / lang)
    (tmp_path / "ar" / "LC_MESSAGES").mkdir(parents=True)
    (tmp_path / "ar" / "LC_MESSAGES" / "gptviz.po").write_text(RTL_PO, encoding="utf-8")
    with running_app(env={"GPTVIZ_LOCALE_DIR": str(tmp_path)}) as url:
        page.set_viewport_size({"width": 1280, "height": 720})
        visit(page, f"{url}/positional?lang=ar")
        settle(page)
        check_no_exception(page, "positional in ar")
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / "lang-ar-positional.png"))
        assert "الترميز الموضعي" in page.locator('[data-testid="stSidebarNav"]').inner_text()
        directions = page.evaluate("""() => ({
            text: getComputedStyle(document.querySelector(
                '[data-testid="stMain"] [data-testid="stMarkdownContainer"]')).direction,
            formula: getComputedStyle(document.querySelector('.katex')).direction})""")
        assert directions == {"text": "rtl", "formula": "ltr"}, directions
        assert page.evaluate("() => document.documentElement.scrollWidth") <= 1280
