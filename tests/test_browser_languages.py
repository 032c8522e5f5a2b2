"""The Tokenizers page's "Across languages" view in a real browser: the chart draws with
cl100k beside GPT-2, a passage shows its partial UTF-8 tokens as bytes (never "�"), and
the measure pills redraw the chart.

Screenshots land in the artifacts folder as tokenizers-languages-*.png. Headless
Chromium may lack CJK and emoji fonts: there those characters are drawn as boxes in
the screenshots only (the page itself is right, which the assertions check).
"""

from __future__ import annotations

import pytest

from tests.helpers import drawn, eventually, open_tab, screenshot, visit

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("from_home")]


def open_languages(page, app_url):
    visit(page, f"{app_url}/tokenizers")
    open_tab(page, "Across languages")
    return page.get_by_role("tabpanel")  # the open tab only: hidden panels are not listed


def test_the_language_chart_draws_with_cl100k(page, app_url):
    panel = open_languages(page, app_url)
    legend = panel.locator(".legendtext")
    assert eventually(lambda: {legend.nth(i).text_content() for i in range(legend.count())}
                      >= {"Character", "Word", "BPE", "GPT-2", "cl100k"})
    assert panel.get_by_text("Why the bars differ").first.is_visible()
    assert panel.get_by_text("English = 1").first.is_visible()
    screenshot(page, "tokenizers-languages-cost")


def test_a_passage_shows_partial_tokens_as_bytes(page, app_url):
    panel = open_languages(page, app_url)
    panel.locator(".st-key-lang [data-testid='stSelectbox']").click()
    page.get_by_role("option", name="Hindi", exact=True).click()
    drawn(page, "Hindi passage", text="आर्लेन नाम का")
    assert panel.get_by_text("आर्लेन नाम का").first.is_visible()
    partial = panel.locator(".gv-chip.partial")
    assert eventually(lambda: partial.count() > 0)
    assert partial.first.inner_text().startswith("‹")
    assert "\ufffd" not in panel.inner_html()
    partial.first.scroll_into_view_if_needed()
    screenshot(page, "tokenizers-languages-hindi")


def test_the_measure_pills_redraw_the_chart(page, app_url):
    panel = open_languages(page, app_url)
    panel.locator(".st-key-lang_measure button", has_text="tokens per word").click()
    assert eventually(lambda: panel.locator(".gtitle").first.text_content().endswith(
        "tokens per word"))
    drawn(page, "tokens per word")
    assert panel.locator(".ytitle").first.text_content() == "tokens ÷ words"
    screenshot(page, "tokenizers-languages-per-word")
