"""The Generation page's branches and beam search in a real browser: branch at a step,
click a node of the tree to go back to it, open the page's link in a new tab and find the
same tree, and run beam search. The messages of bad links (branches, beam, min-p among
them) are checked in tests/test_browser_generation.py.

Screenshots land in the artifacts folder as branching-*.png (see tests/helpers.py).
"""

from __future__ import annotations

import re

import pytest

from tests.helpers import (
    MAIN,
    check_no_exception,
    eventually,
    screenshot,
    visit,
    wait_for_app,
)
from tests.test_browser_generation import generate_n, generated, set_n

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("from_home")]

TREE = ".st-key-gen_tree"  # the tree of branches (its chart's key)


def tree_nodes(page) -> list:
    """The tree's nodes as the figure holds them: [path, hover text with P] for each."""
    return page.evaluate("""sel => {
        const gd = document.querySelector(sel + ' .js-plotly-plot');
        return gd ? gd.data[gd.data.length - 1].customdata : null;
    }""", TREE)


def same_tree(a: list | None, b: list) -> bool:
    """The same nodes, and each edge's P the same to 1e-3 (recomputed from the ids)."""
    def p(hover: str) -> float:
        m = re.search(r"P = ([\d.]+)", hover)
        return float(m.group(1)) if m else 1.0

    return a is not None and [k for k, _ in a] == [k for k, _ in b] and all(
        abs(p(x) - p(y)) < 1e-3 for (_, x), (_, y) in zip(a, b, strict=True))


def click_tree_node(page, x: float, y: float) -> None:
    """Click the node drawn at data coordinates (x, y) of the tree of branches."""
    box = page.evaluate("""([sel, x, y]) => {
        const gd = document.querySelector(sel + ' .js-plotly-plot');
        const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;
        const r = gd.getBoundingClientRect();
        return {x: r.left + xa._offset + xa.l2p(x), y: r.top + ya._offset + ya.l2p(y)};
    }""", [TREE, x, y])
    page.mouse.click(box["x"], box["y"])


def test_branch_revisit_and_share(page, app_url, browser):
    visit(page, f"{app_url}/generation?temperature=0.8&view=Branches")
    generate_n(page, 6)
    assert generated(page) == 6
    page.get_by_text("Branch at step 6").first.wait_for()
    screenshot(page, "branching-before")
    page.locator(".st-key-gen_branch_token [data-testid='stSelectbox']").click()
    page.get_by_role("option").nth(2).click()
    wait_for_app(page)
    page.locator(".st-key-gen_branch button").click()
    wait_for_app(page)
    check_no_exception(page, "after Branch")
    page.get_by_text("Branched at step 6").first.wait_for()
    generate_n(page, 4)
    assert generated(page) == 10  # 5 shared + the branch token + 4 more
    page.locator(f"{TREE} .main-svg").first.wait_for()
    screenshot(page, "branching-tree")
    click_tree_node(page, 6, 0)  # the end of the first branch: 6 tokens, row 0
    wait_for_app(page)
    check_no_exception(page, "after a click on the tree")
    assert eventually(lambda: generated(page) == 6), generated(page)
    page.get_by_text("The text is now the branch ending at step 6").first.wait_for()
    screenshot(page, "branching-revisited")
    link = page.url
    assert "branches=" in link and "at=" in link
    nodes = tree_nodes(page)
    assert len(nodes) == 1 + 6 + 5  # the prompt, the first text, the branch
    other = browser.new_page(viewport={"width": 1400, "height": 2000})
    try:
        visit(other, link, name="branching-from-the-link")
        assert generated(other) == 6
        assert eventually(lambda: same_tree(tree_nodes(other), nodes)), tree_nodes(other)
    finally:
        other.close()


def test_branch_and_continue_keeps_its_note_and_the_view_while_it_streams(page, app_url):
    """Its tokens stream in a whole-page run (so Stop can interrupt it): meanwhile the page
    still says where it branched, and the Branches view stays drawn below the text."""
    visit(page, f"{app_url}/generation?temperature=0.8&view=Branches")
    generate_n(page, 6)
    set_n(page, 500)
    page.get_by_role("button", name="Branch and continue").click()
    page.get_by_text("Generating:").first.wait_for(timeout=30_000)  # tokens are arriving
    assert page.get_by_text(re.compile(r"Branched at step 6")).first.is_visible()
    assert page.get_by_role("button", name="Branch and continue").is_visible()  # the view
    screenshot(page, "branching-continue-streaming")
    stop = page.locator(MAIN).get_by_role("button", name="Stop").bounding_box()
    page.mouse.click(stop["x"] + stop["width"] / 2, stop["y"] + stop["height"] / 2)
    wait_for_app(page)
    check_no_exception(page, "after Stop")
    assert 6 < generated(page) < 6 + 500


def test_beam_search_beside_greedy_and_sampled(page, app_url):
    visit(page, f"{app_url}/generation?view=Beam+search&beam=4&beam_n=10&min_p=0.05")
    check_no_exception(page, "beam search")
    for name in ("Greedy (k = 1)", "Beam search, best of k = 4", "Sampled (T = 1"):
        page.get_by_text(name).first.wait_for()
    page.locator(".st-key-gen_beam_tree .main-svg").first.wait_for()
    assert page.locator(".katex").filter(has_text="score").count() > 0
    screenshot(page, "branching-beam-search")
    page.get_by_role("tab", name="This step", exact=True).click()
    page.locator(f"{MAIN} .gv-topk").first.wait_for()  # its top-k bars (HTML, no chart)
    wait_for_app(page)
    assert page.locator(".katex").filter(has_text="min").count() > 0  # S_min, min-p's set
    screenshot(page, "branching-min-p")


def test_branching_at_a_replayed_step_takes_the_token_chosen_there(page, app_url):
    """A review: after Replay a step, the first Branch failed ("invalid literal for int()":
    the box held its old choice's label) and the box then jumped to another token."""
    visit(page, f"{app_url}/generation?temperature=0.8&view=Branches")
    generate_n(page, 6)
    page.get_by_text("Branch at step 6").first.wait_for()  # the box left as it is
    box = page.locator(".st-key-gen_branch_token [data-testid='stSelectbox']")
    slider = page.get_by_role("slider", name="Replay a step")
    slider.focus()
    for _ in range(3):  # step 6 → step 3
        page.keyboard.press("ArrowLeft")
    wait_for_app(page)
    page.get_by_text("Branch at step 3").first.wait_for()
    chosen = box.evaluate('e => [...e.querySelectorAll("input")].map(i => i.value).join()')
    page.locator(".st-key-gen_branch button").click()  # with the token the box shows
    wait_for_app(page)
    check_no_exception(page, "after Branch at a replayed step")
    note = page.get_by_text(re.compile(r"Branched at step 3")).first
    note.wait_for()
    assert "Cannot branch" not in page.locator(MAIN).inner_text()
    token = chosen.split("·  P =")[0].strip()
    assert token and token in note.inner_text(), (chosen, note.inner_text())
