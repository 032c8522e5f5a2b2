"""AppTest: a model from disk with GPT-2's 1,024-token context (a tiny Hugging Face folder:
12 layers of 12 heads, d = 24, GPT-2's 50,257 tokens, random weights). The pages read at
most PAGE_TOKENS of a prompt and say so with the numbers; the Learning page cuts shorter
windows, says so, and its numbers are torch's on the full context; the gradient check
leaves out groups too big to copy; the Positional page writes its big table only when
asked; the replay says there is nothing to replay."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from gptviz.app.learning import controls, view
from gptviz.app.shared.chips import token_label
from gptviz.app.shared.inputs import PAGE_TOKENS, page_tokens
from gptviz.app.shared.tex import percent
from gptviz.checkpoints.folder import bundled_models, load_checkpoint
from gptviz.checkpoints.gpt2_weights import save_hf_gpt2
from gptviz.data import read_corpus
from gptviz.model import GPT, GPTConfig
from tests.helpers import app_test, choice_box, downloads, figures, metric, rerun, texts

NAME = "long-gpt2"
N_CTX = 1024
TEXT = read_corpus("mathematics")[:6000]  # ~1,400 tokens of GPT-2's encoding


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    torch.manual_seed(0)
    save_hf_gpt2(root / NAME, GPT(GPTConfig(
        vocab_size=50257, context_length=N_CTX, d_model=24, n_layer=12, n_head=12,
        activation="gelu_tanh")))
    return root


@pytest.fixture
def ckpt(folder, monkeypatch):
    monkeypatch.setenv("GPTVIZ_MODELS", str(folder))
    monkeypatch.setenv("GPTVIZ_HF_CACHE", "0")
    monkeypatch.delenv("GPTVIZ_MODEL_MEMORY_MB", raising=False)
    return load_checkpoint(folder / NAME)


def _page(page: str, **query: str):
    at = app_test(model=NAME, **query)
    at.switch_page(f"app_pages/{page}.py")
    return rerun(at)


def test_the_pages_read_the_last_page_tokens_of_a_long_prompt_and_say_so(ckpt):
    tokens = ckpt.tokenizer.tokens(TEXT)
    cut = len(tokens) - PAGE_TOKENS
    assert len(tokens) > N_CTX and page_tokens(ckpt.config) == PAGE_TOKENS < N_CTX
    at = _page("embeddings", prompt=TEXT)
    note = texts(at, "warning")
    assert (f"The prompt has {len(tokens):,} tokens; the pages read its last {PAGE_TOKENS}: "
            f"the first {cut:,} are cut") in note
    assert f"could read {N_CTX:,} (its context window)" in note
    assert f"{(N_CTX / PAGE_TOKENS) ** 2:.0f} times the memory" in note
    positions = choice_box(at, "position")
    assert len(positions.options) == PAGE_TOKENS  # what the page reads: the last 128 tokens
    assert positions.options[0] == f"0: {token_label(tokens[cut])}"


def test_bundled_models_never_meet_the_prompt_cap():
    for folder in bundled_models().values():
        config = load_checkpoint(folder).config
        assert page_tokens(config) == config.context_length <= PAGE_TOKENS


def test_the_learning_window_is_cut_and_its_numbers_are_the_full_context_s(ckpt):
    at = _page("learning", t="999")  # out of range: the page stops before the microscope
    assert "target position 999 is out of range" in texts(at, "error")
    at.text_area(key="learn_text").input(TEXT)
    at.number_input(key="t").set_value(20)
    rerun(at)
    n = controls.WINDOW_TOKENS
    assert (f"Windows here are N = {n} tokens, not this model's full context of {N_CTX:,}"
            in texts(at, "info"))
    ids = ckpt.tokenizer.encode(TEXT)
    assert f"(tokens 0 to {n} of {len(ids):,})" in texts(at, "caption")
    with torch.no_grad():  # the same position in the full 1,024-token window
        z = ckpt.model(torch.tensor([ids[:N_CTX]]))[0, 20]
    p = float(torch.softmax(z.double(), -1)[ids[21]])
    assert metric(at, "P(y)") == percent(p, 3)
    assert float(metric(at, "L = −ln P(y)")) == pytest.approx(-np.log(p), abs=1e-4)
    assert "equals autograd's ∂L/∂z on all |V| = 50,257 entries" in texts(at, "success")


def test_a_big_model_gets_short_windows_and_a_short_gradient_check(ckpt, monkeypatch):
    """Over BIG_MODEL parameters (lowered here to below the tiny model's 1.3M) windows are
    BIG_WINDOW long and the check starts on a few groups; groups over CHECK_ENTRIES (here
    E) are not offered, and the page names them with their size."""
    monkeypatch.setattr(controls, "BIG_MODEL", 1_000_000)
    monkeypatch.setattr(view, "BIG_MODEL", 1_000_000)
    monkeypatch.setattr(view, "CHECK_ENTRIES", 1_000_000)
    at = _page("learning", t="5", view="Gradient check")
    assert (f"N = {controls.BIG_WINDOW} tokens, not this model's full context of {N_CTX:,}"
            in texts(at, "info"))
    e_size = ckpt.model.embed.weight.numel()
    assert at.multiselect(key="check_groups").value == ["L0 W_Q", "L11 W₂", "LN_f"]
    assert "E" not in at.multiselect(key="check_groups").options
    assert f"Not offered: E ({e_size:,} entries)" in texts(at, "caption")
    assert "Autograd passes" in texts(at, "success")


def test_the_positional_table_is_written_only_when_asked(ckpt):
    at = _page("positional", view="This model's positions")
    assert not at.get("download_button") and not downloads(at)  # expander closed: none drawn
    at.session_state["table-model"] = True
    button = rerun(at).download_button(key="csv-positions-model.csv")
    assert button.proto.deferred_file_id and not button.proto.url


def test_a_model_from_disk_has_nothing_to_replay(ckpt):
    at = _page("learning", view="Training replay")
    assert "Nothing to replay" in texts(at, "info")
    assert not at.get("select_slider") and not figures(at)
