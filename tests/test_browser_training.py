"""The Training page in a real browser: train, stop, download, then explore the model
on the Attention page; and two sessions at once stay isolated, queue for the one
trainer slot, and closing a tab mid-training frees the slot.

Screenshots land in the artifacts folder as training-*.png (see tests/helpers.py).
"""

from __future__ import annotations

import contextlib
import time

import pytest

from gptviz.checkpoints.folder import load_checkpoint_zip
from tests.helpers import (
    CHART,
    MAIN,
    check_no_exception,
    screenshot,
    settle,
    visit,
    wait_for_app,
)

pytestmark = pytest.mark.browser
TALL = {"width": 1400, "height": 3600}  # Streamlit scrolls inside the page: a tall viewport


def open_training(page, app_url: str) -> None:
    """Home first, so that the router is in charge, then the Training page."""
    visit(page, app_url)
    page.get_by_text("a GPT, step by step").first.wait_for()
    page.goto(f"{app_url}/training")
    wait_for_app(page)
    page.get_by_role("button", name="Start training").wait_for()
    check_no_exception(page, "training page")


def start(page) -> None:
    page.get_by_role("button", name="Start training").click()
    page.get_by_text("step ", exact=False).first.wait_for(timeout=60_000)


def wait_for_steps(page, timeout_s: float = 60) -> None:
    """Until the progress bar reports at least one optimizer step."""
    page.wait_for_function(
        """() => [...document.querySelectorAll('[data-testid="stProgress"]')]
                 .some(e => /step [1-9]/.test(e.innerText))""", timeout=timeout_s * 1000)


def stop(page) -> float:
    """Press Stop; returns the seconds until the page says it stopped."""
    t0 = time.monotonic()
    main = page.locator(MAIN)  # not the toolbar's own "Stop"
    main.get_by_role("button", name="Stop").click()
    page.get_by_text("Stopped after").first.wait_for(timeout=15_000)
    elapsed = time.monotonic() - t0
    main.get_by_role("button", name="Stop").wait_for(state="detached")  # the full redraw
    wait_for_app(page)
    return elapsed


def picker_options(page) -> list[str]:
    """The sidebar model list: the picker's pills."""
    options = page.locator('[data-testid="stSidebar"] .st-key-model').get_by_role("radio")
    options.first.wait_for()
    return [options.nth(i).inner_text() for i in range(options.count())]


def test_train_stop_download_then_explore_on_the_attention_page(page, app_url, tmp_path):
    page.set_viewport_size(TALL)
    open_training(page, app_url)
    screenshot(page, "training-setup")
    start(page)
    wait_for_steps(page)
    page.get_by_text("Sample at step").first.wait_for()
    page.locator(MAIN).locator(CHART).first.wait_for()  # the curves, for the screenshot
    screenshot(page, "training-running")
    # the thread stops within ~1 s (tests/test_training_job.py); add a 0.5 s redraw, the
    # network, and a loaded 2-core CI machine that also runs Chromium
    assert stop(page) < 10
    check_no_exception(page, "after stop")
    assert page.get_by_text("trained-mathematics-char").first.is_visible()
    screenshot(page, "training-stopped")
    # the sidebar's pill shows the whole name: it wraps, it is not cut to "(this se…"
    pill = page.locator(".st-key-model button").filter(has_text="trained-mathematics-char")
    assert pill.locator("p").evaluate("p => p.scrollWidth <= p.clientWidth + 1")
    assert "(this session)" in pill.inner_text()

    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    settle(page)  # a rerun still arriving would replace the button's file
    button = page.get_by_role("button", name="Download trained-mathematics-char")
    try:
        with page.expect_download(timeout=20_000) as info:
            button.click()
    except PlaywrightTimeout:  # the file of a button a late rerun replaced ("Deferred file
        settle(page)           # … not found" in the server's log): the new one is there
        with page.expect_download(timeout=30_000) as info:
            button.click()
    zipped = tmp_path / "model.zip"
    info.value.save_as(zipped)
    ckpt = load_checkpoint_zip(zipped.read_bytes())
    assert 0 < ckpt.card["steps"] < 800 and ckpt.card["stopped"] is True

    page.locator('[data-testid="stSidebarNav"] a[href$="/attention"]').click()
    wait_for_app(page)
    page.get_by_role("heading", name="Attention").first.wait_for()
    check_no_exception(page, "attention page with the trained model")
    screenshot(page, "training-model-on-attention")
    caption = page.get_by_text("Model trained-mathematics-char").first  # what the page shows
    assert caption.is_visible() and "2 layers" in caption.inner_text()


def test_two_sessions_stay_isolated_queue_and_free_the_slot_on_close(browser, app_url):
    a_ctx, b_ctx = (browser.new_context(viewport=TALL) for _ in range(2))
    a, b = a_ctx.new_page(), b_ctx.new_page()
    try:
        open_training(a, app_url)
        a.get_by_role("button", name="induction heads").click()
        wait_for_app(a)
        start(a)
        wait_for_steps(a)
        stop(a)
        assert any("trained-synthetic-induction-char" in o for o in picker_options(a))

        open_training(b, app_url)  # B sees none of A's run or model
        assert b.get_by_text("No run yet in this session").first.is_visible()
        assert not any(o.startswith("trained-") for o in picker_options(b))

        start(a)  # A trains again (800 steps) ...
        wait_for_steps(a)
        b.get_by_role("button", name="Start training").click()  # ... so B must wait
        b.get_by_text("Waiting for a free trainer").first.wait_for(timeout=20_000)
        screenshot(b, "training-second-session-queued")
        a_ctx.close()  # A closes the tab mid-training: its thread stops, the slot frees
        wait_for_steps(b, timeout_s=60)
        stop(b)
        check_no_exception(b, "second session")
        options = picker_options(b)
        assert any("trained-mathematics-char" in o for o in options)  # B's own
        assert not any("induction" in o and "trained" in o for o in options)  # not A's
        screenshot(b, "training-second-session-done")
    finally:
        for ctx in (a_ctx, b_ctx):
            with contextlib.suppress(Exception):  # A was closed above
                ctx.close()
