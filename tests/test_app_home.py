"""The Home page opens on a bundled model, and a broken bundled model is named
while the app still starts with the intact ones; each of its links names the page it opens."""

from __future__ import annotations

import re
import shutil

import pytest

import gptviz.checkpoints.folder
from gptviz.checkpoints.folder import DEFAULT_MODEL, MODELS_DIR, bundled_models
from tests.helpers import ROOT, app_test, rerun, run_page, texts


def test_home_opens_on_the_default_model():
    from gptviz.app.serving.memory import trim_thread_heaps

    trim_thread_heaps.cache_clear()
    at = run_page(timeout=60)  # app.py: Home is its default page
    assert at.pills(key="model").value == DEFAULT_MODEL
    assert any(f"Model loaded: `{DEFAULT_MODEL}`" in m.value for m in at.markdown)
    assert trim_thread_heaps.cache_info().currsize == 1  # the router set the heaps' trimming


def test_broken_bundled_model_is_named_and_skipped(tmp_path, monkeypatch):
    for name, folder in bundled_models().items():
        shutil.copytree(folder, tmp_path / name)
    broken = next(n for n in bundled_models() if n != DEFAULT_MODEL)
    (tmp_path / broken / "model.safetensors").write_bytes(b"not a safetensors file")
    monkeypatch.setattr(gptviz.checkpoints.folder, "MODELS_DIR", tmp_path)
    at = run_page(timeout=60)
    warnings = texts(at, "warning")
    assert broken in warnings and "model.safetensors" in warnings
    assert broken not in at.pills(key="model").options
    assert at.pills(key="model").value == DEFAULT_MODEL


def test_no_loadable_model_gets_a_message(tmp_path, monkeypatch):
    monkeypatch.setattr(gptviz.checkpoints.folder, "MODELS_DIR", tmp_path)
    at = run_page(timeout=60)
    assert "No model could be loaded" in texts(at, "error")


def test_models_dir_is_inside_the_repository():
    assert MODELS_DIR.parts[-2:] == ("assets", "models")


def test_the_pipeline_names_the_final_layernorm_before_the_unembedding():
    """The model computes y = LN_f(h_N) W_U (gptviz/model/gpt.py): the formula says so."""
    tex = run_page(timeout=60).latex[0].value
    assert tex.index(r"\mathrm{LN}_f") < tex.index("W_U") < tex.index("softmax")


@pytest.mark.parametrize("how", ["page switch", "empty link"])
def test_the_pills_never_come_back_empty(how):
    """After a page switch (here without the link's ?model=, which a browser carries over,
    tests/test_browser_external.py) and with an empty ``?model=``, one model is chosen, the
    page draws that one, and no "None" model is named."""
    if how == "page switch":
        at = app_test(model=next(n for n in bundled_models() if n != DEFAULT_MODEL))
        rerun(at)
        at.switch_page("app_pages/attention.py")
        rerun(at)
    else:
        at = run_page("embeddings", model="")
    assert "Cannot use" not in texts(at, "error")
    assert any(f"Model **{name}**" in texts(at, "caption") for name in bundled_models())


def test_each_link_names_the_page_it_opens():
    """By the title the sidebar gives it (the links once said "the Tokens page", "the
    Sampling page")."""
    titles = dict(re.findall(r'st\.Page\("app_pages/(\w+)\.py", title=_\("([^"]+)"\)',
                             (ROOT / "app.py").read_text()))
    links = [(p.proto.label, p.proto.page) for p in run_page(timeout=60).get("page_link")]
    opens = [(label, page) for label, page in links if label.startswith("Open the ")]
    assert len(opens) >= 6
    assert all(label == f"Open the {titles[page]} page" for label, page in opens), opens
    assert {"tokenizers", "embeddings", "positional", "attention", "block",
            "generation"} <= {page for _, page in opens}
