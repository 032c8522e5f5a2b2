"""The Home page opens on a bundled model, and a broken bundled model is named
while the app still starts with the intact ones."""

from __future__ import annotations

import shutil
from pathlib import Path

from streamlit.testing.v1 import AppTest

import gptviz.checkpoints
from gptviz.checkpoints import DEFAULT_MODEL, MODELS_DIR, bundled_models

APP = str(Path(__file__).resolve().parents[1] / "app.py")  # Home is its default page


def test_home_opens_on_the_default_model():
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    assert not at.exception
    assert at.selectbox(key="model").value == DEFAULT_MODEL
    assert any(f"Model loaded: `{DEFAULT_MODEL}`" in m.value for m in at.markdown)


def test_broken_bundled_model_is_named_and_skipped(tmp_path, monkeypatch):
    for name, folder in bundled_models().items():
        shutil.copytree(folder, tmp_path / name)
    broken = next(n for n in bundled_models() if n != DEFAULT_MODEL)
    (tmp_path / broken / "model.safetensors").write_bytes(b"not a safetensors file")
    monkeypatch.setattr(gptviz.checkpoints, "MODELS_DIR", tmp_path)
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    assert not at.exception
    warnings = " ".join(w.value for w in at.warning)
    assert broken in warnings and "model.safetensors" in warnings
    assert broken not in at.selectbox(key="model").options
    assert at.selectbox(key="model").value == DEFAULT_MODEL


def test_no_loadable_model_gets_a_message(tmp_path, monkeypatch):
    monkeypatch.setattr(gptviz.checkpoints, "MODELS_DIR", tmp_path)
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    assert not at.exception
    assert "No model could be loaded" in " ".join(e.value for e in at.error)


def test_models_dir_is_inside_the_repository():
    assert MODELS_DIR.parts[-2:] == ("assets", "models")
