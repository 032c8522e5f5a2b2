"""Stock mode (``GPTVIZ_STOCK=1``): every page and every view runs through the router with
Streamlit's and plotly's own elements and no speed-up, and shows what it shows otherwise.

What a Streamlit upgrade that breaks a piece of ``gptviz/app/speedups/`` leaves: the same
pages, only slower. A view that fails here fails on a Streamlit where every speed-up had to
be switched off. The stock path must be the one taken: charts are ``st.plotly_chart``, token
boxes ``st.selectbox``, CSV buttons ``st.download_button``, and no part waits below a fold.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest

from gptviz.app.attention import view as attention
from gptviz.app.block import view as block
from gptviz.app.embeddings import view as embeddings
from gptviz.app.generation import view as generation
from gptviz.app.learning import view as learning
from gptviz.app.positional import view as positional
from gptviz.app.speedups import (
    choice,
    click_button,
    download,
    fold,
    formula_fit,
    heatcanvas,
    prefetch,
    stock,
    svgbox,
)
from gptviz.app.tokenizers import view as tokenizers
from gptviz.checkpoints.folder import bundled_models
from tests.helpers import app_test, lesson_steps, rerun

pytestmark = pytest.mark.skipif(not bundled_models(), reason="no bundled models")

VIEWS = {"tokenizers": tokenizers.VIEWS, "embeddings": embeddings.VIEWS,
         "positional": positional.VIEWS, "attention": attention.VIEWS, "block": block.VIEWS,
         "generation": generation.VIEWS, "learning": learning.VIEWS}
SPEED_UPS = {choice.NAME, download.NAME, fold.NAME, heatcanvas.NAME, prefetch.NAME,
             svgbox.NAME}  # none of these may be drawn in stock mode
# these stay: features, not speed (the keyboard of presenter mode, one history entry a view)
FEATURES = {click_button.NAME, formula_fit.NAME, "gptviz.keys", "gptviz.history",
            "gptviz.class_cookies"}  # the class session's identity kept in the browser


@pytest.fixture(autouse=True)
def _stock(monkeypatch):
    monkeypatch.setenv(stock.VARIABLE, "1")


def router(page: str):
    """The router on ``page``, a fresh session: no fold reached (stock mode has none)."""
    at = app_test()
    for name in fold.FOLDS:
        at.session_state[fold.reached_key(name)] = False
    at.switch_page(f"app_pages/{page}.py")
    return rerun(at)


def seen(at, where: str, kinds: Counter) -> None:
    """Check what is drawn is stock, and count the kinds of element drawn."""
    components = {e.proto.component_name for e in at._tree if e.type == "bidi_component"}
    assert not components & SPEED_UPS, f"{where}: {components & SPEED_UPS} drawn in stock mode"
    assert components <= FEATURES, where
    for e in at._tree:
        kinds[e.type] += 1
        if e.type == "plotly_chart":
            kinds["plotly " + json.loads(e.proto.spec)["data"][0]["type"]] += 1


def test_every_page_and_view_in_stock_mode():
    kinds: Counter = Counter()
    for page, views in VIEWS.items():
        at = router(page)
        for view in views:
            at.session_state["view"] = view
            rerun(at)
            assert at.get("tabs") or at.tabs, f"{page}: no view tabs"
            seen(at, f"{page} / {view}", kinds)
    at = router("home")
    assert "a GPT, step by step" in at.title[0].value
    seen(at, "home", kinds)
    at = router("training")
    seen(at, "training", kinds)
    assert at.download_button(key="tr_download")  # below the fold otherwise
    at = router("lesson")
    for step in lesson_steps(at):
        seen(at, f"lesson step {step}", kinds)
    # the stock elements of each speed-up were drawn: plotly for the canvas heatmaps and the
    # SVG charts (Learning's bars and lines), select boxes, Streamlit's CSV buttons
    assert kinds["plotly heatmap"] >= 20 and kinds["plotly bar"] and kinds["plotly scatter"]
    assert kinds["selectbox"] >= 6 and kinds["download_button"] >= 10, kinds


def test_a_token_box_in_stock_mode_drives_the_view():
    at = router("attention")  # its first view: the query box beside the head drawn large
    box = at.selectbox(key="query")
    last = len(box.options) - 1
    assert box.value == last and box.options[0].startswith("0: ")  # the last token first
    assert any(f"(position {last})" in c.value for c in at.caption)
    box.set_value(0)
    rerun(at)
    assert at.selectbox(key="query").value == 0
    assert any("(position 0) looks most" in c.value for c in at.caption)
