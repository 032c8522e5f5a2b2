"""The Positional page's comparison and its RoPE views in a real browser: the two figures
and the findings draw, "Retrain them here" shows its progress and Stop ends it, and an
uploaded RoPE model gets its angle heatmap and its rotated q and k.

Screenshots land in the artifacts folder as positional-*.png (see tests/helpers.py).
"""

from __future__ import annotations

import pytest

from gptviz.checkpoints.folder import bundled_models, checkpoint_to_zip, load_checkpoint
from tests.helpers import (
    CHART,
    MAIN,
    check_no_exception,
    eventually,
    open_tab,
    screenshot,
    show_checkpoint_uploader,
    tiny_gpt,
    visit,
    wait_for_app,
)

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("from_home")]

VIEW = "Four encodings compared"


def charts(page) -> int:
    return page.locator(MAIN).locator(CHART).count()


def test_the_comparison_draws_and_retraining_starts_and_stops(page, app_url):
    visit(page, f"{app_url}/positional")
    open_tab(page, VIEW, charts=2)
    main = page.locator(MAIN)
    assert main.get_by_text("What the figures show").is_visible()
    assert main.get_by_text("RoPE's lead over the learned table").is_visible()
    screenshot(page, "positional-compare")
    main.get_by_role("button", name="Retrain them here").click()
    assert eventually(lambda: main.get_by_text("Training the").first.is_visible()
                      or main.get_by_text("Waiting for the trainer").is_visible(), 60)
    check_no_exception(page, "retraining")
    screenshot(page, "positional-compare-retraining")
    main.get_by_role("button", name="Stop").click()
    assert eventually(lambda: main.get_by_text(
        "The figures above still show the shipped runs").is_visible(), 120)
    wait_for_app(page)
    check_no_exception(page, "stopped")
    assert charts(page) >= 2
    assert main.get_by_role("button", name="Retrain them here").is_enabled()
    screenshot(page, "positional-compare-stopped")


@pytest.mark.skipif("mathematics-char" not in bundled_models(), reason="no bundled char model")
def test_an_uploaded_rope_model_shows_its_angles_and_rotations(page, app_url, tmp_path):
    tok = load_checkpoint(bundled_models()["mathematics-char"]).tokenizer
    model = tiny_gpt(tok.vocab_size, context_length=32, d_model=64, n_layer=2, n_head=4,
                     positional="rope")
    zip_path = tmp_path / "spinning.zip"
    zip_path.write_bytes(checkpoint_to_zip(model, tok, {"corpus": "x"}))
    visit(page, f"{app_url}/positional")
    show_checkpoint_uploader(page)
    page.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(str(zip_path))
    wait_for_app(page)
    assert eventually(lambda: page.get_by_text("Loaded 'spinning'").first.is_visible())
    open_tab(page, "This model's positions", charts=2)  # the angles and q_i · k_j
    main = page.locator(MAIN)
    assert main.get_by_text("rotary positions (RoPE)").first.is_visible()
    assert main.get_by_text("The score depends only on i − j").first.is_visible()
    screenshot(page, "positional-rope-positions")
    open_tab(page, "X + PE for the prompt")
    assert main.get_by_text("adds nothing to the token embeddings").first.is_visible()
    screenshot(page, "positional-rope-x-plus-pe")
