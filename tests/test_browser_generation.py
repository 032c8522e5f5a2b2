"""The Generation page in a real browser: stepping, streaming, Stop, fast clicks, every view,
and the messages of bad links. ``generated`` and ``generate_n`` serve
tests/test_browser_branching.py too.

Screenshots land in the artifacts folder as generation-*.png (see tests/helpers.py).
"""

from __future__ import annotations

import re

import pytest

from tests.helpers import (
    MAIN,
    check_no_exception,
    eventually,
    screenshot,
    settle,
    visit,
    wait_for_app,
)

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("from_home")]


def generated(page) -> int:
    """The page's own count of generated tokens ("12 generated · 80 tokens in all")."""
    text = page.get_by_text(re.compile(r"generated · .* tokens in all")).first.inner_text()
    return int(text.split()[0].replace(",", ""))


def new_chips(page) -> int:
    return page.locator(".gv-chip.gv-new").count()


def set_n(page, n: int) -> None:
    box = page.get_by_label("n", exact=True)
    box.fill(str(n))
    box.press("Enter")
    wait_for_app(page)


def generate_n(page, n: int) -> None:
    """Set n, press "Generate n" and wait until the page says it generated them."""
    set_n(page, n)
    page.get_by_role("button", name="Generate n").click()
    page.get_by_text(f"Generated {n} tokens").first.wait_for(timeout=60_000)
    wait_for_app(page)


def test_step_generate_and_every_view(page, app_url):
    visit(page, f"{app_url}/generation?temperature=0.8", name="generation-start")
    assert page.locator(".gv-chip").count() > 5 and new_chips(page) == 0
    page.get_by_role("button", name="Next token").click()
    wait_for_app(page)
    check_no_exception(page, "after Next token")
    assert eventually(lambda: new_chips(page) == generated(page) == 1), \
        (new_chips(page), generated(page))
    assert page.locator(".katex").filter(has_text="↦").count() > 0  # the seeds' display
    screenshot(page, "generation-one-step")
    generate_n(page, 40)
    check_no_exception(page, "after Generate n")
    assert eventually(lambda: new_chips(page) == generated(page) == 41), \
        (new_chips(page), generated(page))
    assert page.get_by_text("Generated 40 tokens").first.is_visible()
    screenshot(page, "generation-after-generate")
    for tab, shown in [("Three temperatures", "Temperatures"),
                       ("Sample N times", "N, the number of draws"), ("Attention", "Layer"),
                       ("History", "Download CSV")]:
        page.get_by_role("tab", name=tab).click()
        page.get_by_text(shown, exact=True).first.wait_for()
        wait_for_app(page)
        check_no_exception(page, tab)
        slug = tab.lower().replace(" ", "-")
        screenshot(page, f"generation-{slug}")
    page.get_by_role("button", name="Undo").click()
    wait_for_app(page)
    assert eventually(lambda: new_chips(page) == generated(page) == 40), \
        (new_chips(page), generated(page))


def test_stop_mid_generate_keeps_every_token(page, app_url):
    visit(page, f"{app_url}/generation")
    set_n(page, 500)
    stop = page.locator(MAIN).get_by_role("button", name="Stop").bounding_box()  # not the header's
    page.get_by_role("button", name="Generate n").click()
    page.get_by_text("Generating:").first.wait_for(timeout=30_000)  # tokens are arriving
    # Click where a user would: Playwright's own click waits for the page to settle.
    page.mouse.click(stop["x"] + stop["width"] / 2, stop["y"] + stop["height"] / 2)
    wait_for_app(page)
    check_no_exception(page, "after Stop")
    note = page.get_by_text(re.compile(r"Stopped after [\d,]+ of 500 tokens")).first
    assert note.is_visible()
    done = int(re.search(r"after ([\d,]+) of", note.inner_text()).group(1).replace(",", ""))
    assert 0 < done < 500
    assert generated(page) == done  # nothing lost, nothing extra
    assert new_chips(page) == min(done, 400)  # the chips show the last 400 tokens
    screenshot(page, "generation-stopped")


def test_fast_clicks_stay_consistent(page, app_url):
    visit(page, f"{app_url}/generation")
    box = page.get_by_role("button", name="Next token").bounding_box()
    for _ in range(6):  # as fast as a mouse can: no waiting for the page in between
        page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        page.wait_for_timeout(20)
    settle(page, quiet_ms=500)  # the merged reruns have all ended
    check_no_exception(page, "after fast clicks")
    n = generated(page)
    assert n == 6 and new_chips(page) == 6  # one click, one token, even when reruns merge
    page.get_by_role("tab", name="History").click()
    wait_for_app(page)
    assert page.get_by_text(f"{n} generated").first.is_visible()


@pytest.mark.parametrize("query, message", [
    ("temperature=0", "Greedy decoding"),
    ("temperature=abc", "is not a number"),
    ("prompt=", "The prompt is empty"),
    ("branches=000000_1.2.3", "grown from another prompt or another model"),
    ("branches=oops", "does not start with the six-digit tag"),
    ("min_p=7", "not a number from 0 to 1"),
    ("view=Beam+search&beam=99", "not a whole number from 1 to 8"),
])
def test_bad_links_are_explained(page, app_url, query, message):
    visit(page, f"{app_url}/generation?{query}")
    assert page.get_by_text(message).first.is_visible()
    page.get_by_role("button", name="Next token").click()
    wait_for_app(page)
    check_no_exception(page, query)
    assert eventually(lambda: generated(page) == 1, timeout_s=60)  # a loaded server redraws late


@pytest.mark.parametrize("name", ["induction-2layer", "mathematics-char"])
def test_other_bundled_models(page, app_url, name):
    visit(page, f"{app_url}/generation?model={name}&temperature=0&view=Attention&layer=1")
    generate_n(page, 30)
    check_no_exception(page, name)
    assert eventually(lambda: new_chips(page) == generated(page) == 30), \
        (new_chips(page), generated(page))
    screenshot(page, f"generation-{name}")
