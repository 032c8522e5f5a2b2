"""A view's part below the fold (``fold.below``) is drawn once the reader reaches it, and from
then on at every run of the session; the pages put their folds where the tests expect."""

from __future__ import annotations

import json

from streamlit.testing.v1 import AppTest

from gptviz.app.speedups import fold
from tests.helpers import app_test, rerun


def _view() -> None:
    import streamlit as st

    from gptviz.app.speedups import fold

    st.markdown("above the fold")
    fold.below("demo", "Next: the rest.", lambda: st.markdown("below the fold"))


def md(at: AppTest) -> list[str]:
    return [m.value for m in at.markdown]


def markers(at: AppTest) -> list[dict]:
    return [json.loads(e.proto.json) for e in at._tree
            if e.type == "bidi_component" and e.proto.component_name == fold.NAME]


def test_the_rest_waits_for_the_reader_then_stays():
    at = AppTest.from_function(_view, default_timeout=30).run()
    assert md(at) == ["above the fold"]
    assert [m["what"] for m in markers(at)] == ["Next: the rest."]
    at.session_state["gv-fold-demo"] = {"reached": True}  # what the marker sends
    at.run()
    assert md(at) == ["above the fold", "below the fold"] and not markers(at)
    at.run()  # the marker is gone, and Streamlit forgets its state: the session remembers
    assert "below the fold" in md(at)
    assert at.session_state[fold.reached_key("demo")]


def _closed(page: str, **query: str) -> AppTest:
    """``page`` opened through the router, as a fresh browser session: no fold reached."""
    at = app_test(**query)
    for name in fold.FOLDS:
        at.session_state[fold.reached_key(name)] = False
    at.switch_page(f"app_pages/{page}.py")
    return rerun(at)


def test_learning_draws_section_1_then_the_rest_when_reached():
    at = _closed("learning")
    shown = md(at)
    assert "#### 1. The loss of one prediction" in shown
    assert not any("The gradient at the logits" in t for t in shown)
    assert len(markers(at)) == 1
    at.session_state["gv-fold-learning"] = {"reached": True}
    shown = md(rerun(at))
    assert any("#### 2. The gradient at the logits" in t for t in shown)
    assert "#### 4. One step of gradient descent (SGD)" in shown and not markers(at)


def test_attention_draws_the_grid_then_the_large_head_when_reached():
    at = _closed("attention", layer="1", head="2")
    assert any("All 16 heads" in c.value for c in at.caption)
    assert not any("z_{" in x.value for x in at.latex)  # the worked-out row is below
    assert [m["what"][:33] for m in markers(at)] == ["Next: layer 1, head 2 large, with"]
    at.session_state["gv-fold-attention"] = {"reached": True}
    rerun(at)
    assert not markers(at)
    assert any("Where" in c.value and "looks most" in c.value for c in at.caption)
    assert any("z_{" in x.value for x in at.latex)


def test_positional_draws_the_heatmaps_then_the_curves_and_the_identity_when_reached():
    at = _closed("positional")
    assert not at.multiselect and len(markers(at)) == 1
    assert "why the similarity depends only on i − j" in markers(at)[0]["what"]
    at.session_state["gv-fold-positional"] = {"reached": True}
    rerun(at)
    assert at.multiselect(key="dims-sinusoidal").value == [0, 1, 8, 64, 126]
    assert "#### The similarity depends only on i − j" in md(at) and not markers(at)


def test_training_draws_the_model_s_zip_and_samples_when_reached():
    at = _closed("training")
    assert not at.get("download_button") and len(markers(at)) == 1
    at.session_state["gv-fold-training"] = {"reached": True}
    rerun(at)
    assert at.download_button(key="tr_download").proto.label.startswith("Download ")
    assert not markers(at)


def test_embeddings_draws_the_heatmaps_then_the_rows_as_numbers_when_reached():
    at = _closed("embeddings")
    assert len(markers(at)) == 1 and not [e for e in at._tree if e.type == "bidi_component"
                                          and e.proto.component_name == "gptviz.download"]
    at.session_state["gv-fold-embeddings"] = {"reached": True}
    rerun(at)
    assert not markers(at)
    assert any("The first" in c.value and "the CSV has them all" in c.value for c in at.caption)


def test_in_stock_mode_everything_is_drawn_at_once(monkeypatch):
    monkeypatch.setenv("GPTVIZ_STOCK", "fold")
    at = AppTest.from_function(_view, default_timeout=30).run()
    assert md(at) == ["above the fold", "below the fold"] and not markers(at)
    at = _closed("learning")  # no fold reached, and yet the whole view
    assert any("#### 2. The gradient at the logits" in t for t in md(at)) and not markers(at)
