"""AppTest: every page runs with a model the server names through GPTVIZ_MODELS, a tiny
one of GPT-2's format and vocabulary (a Hugging Face folder: 12 layers of 12 heads, the
50,257 tokens of GPT-2's encoding, random weights); a model over the server's budget is
listed, refused with the figures, and the model in use stays."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from gptviz.checkpoints.folder import load_checkpoint
from gptviz.checkpoints.gpt2_weights import save_hf_gpt2
from gptviz.checkpoints.model_dirs import find_models, named_dirs
from gptviz.model import GPT, GPTConfig
from tests.helpers import ROOT, app_test, array_of, figure, figures, rerun, texts, z_of

NAME = "tiny-gpt2"
NO_MODEL = {"tokenizers", "join"}  # pages that show no model (no picker): nothing to check
PAGES = sorted(p.stem for p in (ROOT / "app_pages").glob("*.py") if p.stem not in NO_MODEL)


def save_tiny_gpt2(root):
    """A Hugging Face GPT-2 folder ``root/NAME``: GPT-2's 50,257 tokens and 12 × 12 heads,
    d = 24, random weights (seed 0)."""
    torch.manual_seed(0)
    save_hf_gpt2(root / NAME, GPT(GPTConfig(
        vocab_size=50257, context_length=64, d_model=24, n_layer=12, n_head=12,
        activation="gelu_tanh")))


@pytest.fixture(scope="module")
def models_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    save_tiny_gpt2(root)
    (root / "llama").mkdir()
    (root / "llama" / "config.json").write_text(json.dumps({"model_type": "llama"}))
    return root


@pytest.fixture
def named(models_dir, monkeypatch):
    monkeypatch.setenv("GPTVIZ_MODELS", str(models_dir))
    monkeypatch.setenv("GPTVIZ_HF_CACHE", "0")  # this machine's own cache stays out of it
    monkeypatch.delenv("GPTVIZ_MODEL_MEMORY_MB", raising=False)
    return models_dir


def _trace(at, name: str) -> dict:
    return next(t for f in figures(at) for t in f["data"] if t.get("name") == name)


def _page(page: str, **query: str):
    """The router (app.py) on ``page``: the pages link to each other through it."""
    at = app_test(**query)
    if page != "home":
        at.switch_page(f"app_pages/{page}.py")
    return rerun(at)


def test_every_page_runs_with_a_gpt2_format_model(named):
    for page in PAGES:
        at = _page(page, model=NAME)
        assert at.pills(key="model").value == NAME, page
        assert "LLaMA" in texts(at, "warning"), page  # the unusable one, with its reason
        checks = {"embeddings": _embeddings, "attention": _attention, "training": _training,
                  "block": _block}
        if page in checks:
            checks[page](at)


@pytest.mark.parametrize("page", ["attention", "block", "generation"])
def test_twelve_layers_and_heads_get_a_slider_bound_to_the_link(named, page):
    """Pills for 0 … 11 cut "11" off at 12 heads: past 8 choices the pick is a slider,
    still bound to ?layer= and ?head=, and a bad value still gets its message."""
    view = {"view": "Attention"} if page == "generation" else {}  # its view with the picks
    at = _page(page, model=NAME, layer="11", head="11", **view)
    assert at.select_slider(key="layer").value == 11
    assert at.select_slider(key="layer").label == "Layer (0 to 11)"
    if page != "block":
        assert at.select_slider(key="head").value == 11
    assert not at.get("segmented_control") or all(
        s.key not in ("layer", "head") for s in at.get("segmented_control"))
    at = _page(page, model=NAME, layer="99", **view)
    assert at.select_slider(key="layer").value == 0
    assert "numbered 0 to 11" in texts(at, "warning")


def _embeddings(at) -> None:
    at.session_state["view"] = "The vocabulary (PCA)"
    rerun(at)
    points = array_of(_trace(at, "vocabulary")["x"])
    assert points.shape == (5000,)
    assert "fixed random sample of 5,000 of the 50,257 rows" in texts(at, "caption")


def _attention(at) -> None:
    """144 heads: the chosen layer's twelve large, then every head as an overview numbered
    along its axes (no title per thumbnail)."""
    strip = next(f for f in figures(at) if "strip" in f["layout"].get("meta", {}))
    assert [a["text"] for a in strip["layout"]["annotations"]] == [f"L0 H{h}" for h in
                                                                   range(12)]
    grid = next(f for f in figures(at) if "grid" in f["layout"].get("meta", {}))
    tiling = grid["layout"]["meta"]["grid"]
    assert (tiling["layers"], tiling["heads"]) == (12, 12)  # 144 thumbnails in one trace
    assert not grid["layout"].get("annotations")
    assert grid["layout"]["yaxis"]["ticktext"][-1] == "L11"
    assert grid["layout"]["xaxis"]["ticktext"][-1] == "H11"
    assert "All 144 heads" in texts(at, "caption")


def _block(at) -> None:
    assert r"\mathrm{GELU}_{\tanh}" in texts(at, "latex")  # GPT-2's GELU, with its formula
    assert r"\tanh\big(\sqrt{2/\pi}" in texts(at, "latex")
    at.session_state["view"] = "Residual stream and logit lens"
    rerun(at)
    lens = figure(at, "logit lens")["data"][0]
    assert z_of(lens).shape[0] == 13  # the input, then after each of the 12 blocks


def _training(at) -> None:
    assert f"does not fine-tune {NAME}" in texts(at, "info")
    assert not at.get("download_button") or all(
        NAME not in str(b.proto.label) for b in at.get("download_button"))


def test_a_model_over_the_budget_is_refused_and_the_one_in_use_stays(named, monkeypatch):
    monkeypatch.setenv("GPTVIZ_MODEL_MEMORY_MB", "1")  # the tiny model takes 5 MB
    at = _page("embeddings")
    before = at.pills(key="model").value
    assert before != NAME and NAME in at.pills(key="model").options
    assert "too big for this server (1 MB)" in texts(at, "markdown")
    at.pills(key="model").set_value(NAME)
    rerun(at)
    assert at.pills(key="model").value == before
    message = texts(at, "error")
    assert f"Cannot use {NAME}: {NAME} has 1,294,440 parameters: 5 MB" in message
    assert "more than the 1 MB" in message
    assert f"Model **{before}**" in texts(at, "caption")
    at = _page("attention", model=NAME)  # a shared link to it: refused the same way
    assert at.pills(key="model").value != NAME and "Cannot use" in texts(at, "error")
    other = next(n for n in at.pills(key="model").options if n not in (before, NAME))
    at.pills(key="model").set_value(other)  # from another model than the first: back to it
    rerun(at)
    at.pills(key="model").set_value(NAME)
    rerun(at)
    assert at.pills(key="model").value == other and f"Model **{other}**" in texts(at, "caption")


def test_the_named_model_is_loaded_once_and_shared(named):
    from gptviz.app.shared.named import load_named, named_models

    found = named_models(())[NAME]
    first, second = load_named(found), load_named(found)
    assert first is second and not first.model.training
    assert not any(p.requires_grad for p in first.model.parameters())
    assert np.isfinite(first.model(first.tokenizer.encode("Paris")).numpy()).all()


def test_models_are_found_with_their_sizes_sources_and_problems(models_dir, tmp_path):
    snapshot = tmp_path / "hub" / "models--openai-community--gpt2" / "snapshots" / "abc"
    snapshot.mkdir(parents=True)
    for name in ("config.json", "model.safetensors"):
        (snapshot / name).write_bytes((models_dir / NAME / name).read_bytes())
    dirs = named_dirs(["app.py", "--models", str(models_dir / NAME)],
                      {"GPTVIZ_MODELS": str(models_dir)})  # the same folder twice: listed once
    found = {f.name: f for f in find_models(dirs, tmp_path / "hub", taken=[NAME])}
    assert sorted(found) == ["llama", "openai-community/gpt2", f"{NAME} (2)"]
    params = load_checkpoint(models_dir / NAME).model.num_params()
    assert (found[f"{NAME} (2)"].params, found[f"{NAME} (2)"].bytes) == (params, 4 * params)
    assert found[f"{NAME} (2)"].source == "--models" and not found[f"{NAME} (2)"].problem
    assert found["openai-community/gpt2"].source == "Hugging Face cache"
    assert "LLaMA" in found["llama"].problem and found["llama"].source == "GPTVIZ_MODELS"
