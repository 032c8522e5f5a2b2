"""AppTest of the Transformer block page's "Who wrote the prediction" views on every bundled
model: the waterfall's bars add up to the model's own logit (computed here from a fresh
forward pass), the chosen position and token change it, a typed token that is several
tokens or unknown gets a message, the commitment strip is a loop over the logit lens, and
models without biases, positions or a second layer (or with RoPE) adapt."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from gptviz.analysis import core as analysis
from gptviz.checkpoints.folder import Checkpoint, bundled_models, checkpoint_to_zip, load_checkpoint
from gptviz.tokenizers.char import CharTokenizer
from tests.helpers import (
    MODELS,
    app_test,
    array_of,
    checkpoint_uploader,
    choice_box,
    downloads,
    figure,
    metric,
    rerun,
    run_page,
    texts,
    tiny_gpt,
)

DLA, COMMIT = "Direct logit attribution", "Commitment layer"
FREEZING = "The final LayerNorm's σ is frozen at its value for this input"

pytestmark = pytest.mark.skipif(not MODELS, reason="no bundled models in assets/models")


def show(at, view: str):
    """Open ``view`` (the tab's state and its ``?view=``, which wins when both are set)."""
    at.session_state["view"] = view
    at.query_params["view"] = view
    return rerun(at)


def model_run(ckpt, at):
    """The ids the page shows, the model's logits (T, |V|) and every activation."""
    prompt = at.session_state["prompt"]  # the prompt box's text, on any page
    ids = ckpt.tokenizer.encode(prompt)[-ckpt.config.context_length:]
    with torch.no_grad():
        logits = ckpt.model(ids)[0]
    return ids, logits, ckpt.model.run_with_cache(ids)[1]


def waterfall(at) -> tuple[list[str], np.ndarray]:
    """The waterfall's bar labels and values, the Σ bar left out."""
    trace = figure(at, "who wrote the logit")["data"][0]
    assert trace["type"] == "waterfall" and trace["measure"][-1] == "total"
    return list(trace["x"][:-1]), array_of(trace["y"])[:-1]


def check_sum(at, logits, pos: int, token: int) -> list[str]:
    """The bars add up to the model's logit of ``token`` at ``pos``; returns the labels."""
    labels, values = waterfall(at)
    real = float(logits[pos, token])
    assert abs(values.sum() - real) <= 1e-4, (values.sum(), real)
    assert float(metric(at, "the model's logit")) == pytest.approx(real, abs=1e-4)
    assert float(metric(at, "Σ of the bars")) == pytest.approx(real, abs=2e-4)
    assert float(metric(at, "|Δ|")) <= 1e-4
    assert "The bars add up to the model's logit" in texts(at, "success")
    return labels


def loop_commitment(model, cache, n: int) -> list[int]:
    """The first logit-lens row whose top-1 is the last row's, as a block (−1: embeddings)."""
    out = []
    for pos in range(n):
        top1 = analysis.logit_lens(model, cache, 1, pos, include_input=True)[1][:, 0].tolist()
        out.append(top1.index(top1[-1]) - 1)
    return out


@pytest.mark.parametrize("model", MODELS)
def test_both_views_on_every_model(model):
    ckpt = load_checkpoint(bundled_models()[model])
    c = ckpt.config
    at = run_page("block", model=model, view=DLA)
    ids, logits, cache = model_run(ckpt, at)
    last = len(ids) - 1
    assert choice_box(at, "dla_position").value == last
    predicted = int(logits[last].argmax())
    assert at.selectbox(key="dla_token").value == predicted
    labels = check_sum(at, logits, last, predicted)
    assert labels[:2] == ["token E[t]", "position p"] and labels[-1] == "b_f (LN bias)"
    assert sum(lb.endswith("FFN") for lb in labels) == c.n_layer
    assert sum(" H" in lb for lb in labels) == c.n_layer * c.n_head
    assert FREEZING in texts(at, "markdown") and at.latex
    assert not texts(at, "error")
    assert len(downloads(at)) >= len(at.dataframe)

    show(at, COMMIT)
    strip = array_of(figure(at, "commitment")["data"][0]["z"])[0]
    assert strip.astype(int).tolist() == loop_commitment(ckpt.model, cache, len(ids))
    table = at.dataframe[0].value
    assert len(table) == len(ids) and len(downloads(at)) >= 1
    assert "commitment layer" in texts(at, "markdown")


@pytest.mark.parametrize("model", MODELS)
def test_the_commitment_count_counts_only_positions_that_keep_the_final_top1(model):
    """Issue 39: mathematics-bpe said "18 of 23 positions have their final top-1 before the
    last block", three of which change it again later: the count is of the positions whose
    top-1 is the final one from a block before the last to the end (a loop over the logit
    lens here), and the table says from which block."""
    ckpt = load_checkpoint(bundled_models()[model])
    at = run_page("block", model=model, view=COMMIT)
    ids, _, cache = model_run(ckpt, at)
    last = ckpt.config.n_layer - 1
    kept, lost, stages = 0, 0, []
    for pos in range(len(ids)):
        top1 = analysis.logit_lens(ckpt.model, cache, 1, pos, include_input=True)[1][:, 0]
        top1 = top1.tolist()  # embeddings, then after each block
        stays = [all(t == top1[-1] for t in top1[s:]) for s in range(len(top1))]
        kept += stays.index(True) - 1 < last
        lost += top1.index(top1[-1]) - 1 < last and not stays.index(True) - 1 < last
        stage = stays.index(True)
        stages.append("embeddings" if stage == 0 else f"after block {stage - 1}")
    caption = texts(at, "caption")
    assert (f"{kept} of {len(ids)} positions have their final top-1 before the last block "
            f"(block {last}) and keep it from there on") in caption
    if lost:
        assert f"{lost} of them had it earlier but lost it again" in caption
    if model == "mathematics-bpe":
        assert kept == 15 and lost == 3  # the page said 18 before
    assert list(at.dataframe[0].value["keeps it after"]) == stages


@pytest.mark.parametrize("model", MODELS)
def test_another_position_token_and_grouping(model):
    ckpt = load_checkpoint(bundled_models()[model])
    at = run_page("block", model=model, view=DLA)
    ids, logits, _ = model_run(ckpt, at)
    first = waterfall(at)[1]
    choice_box(at, "dla_position").set_value(2)
    rerun(at)
    top = torch.argsort(logits[2], descending=True)[:10].tolist()
    assert at.selectbox(key="dla_token").value == top[0]  # position 2's own prediction
    assert len(at.selectbox(key="dla_token").options) == min(10, ckpt.config.vocab_size)
    at.selectbox(key="dla_token").set_value(top[3])
    rerun(at)
    check_sum(at, logits, 2, top[3])
    assert not np.allclose(waterfall(at)[1], first)
    at.segmented_control(key="dla_heads").set_value("per layer")
    rerun(at)
    labels = check_sum(at, logits, 2, top[3])
    assert sum(lb.endswith("heads") for lb in labels) == ckpt.config.n_layer
    assert not any(" H" in lb for lb in labels)


@pytest.mark.parametrize("model", MODELS)
def test_a_typed_token_that_is_several_tokens_gets_a_message(model):
    ckpt = load_checkpoint(bundled_models()[model])
    at = run_page("block", model=model, view=DLA)
    _, logits, _ = model_run(ckpt, at)
    predicted = int(logits[-1].argmax())
    at.text_input(key="dla_typed").input("xyzzy quux")
    rerun(at)
    assert "tokens for this model's tokenizer" in texts(at, "error")
    check_sum(at, logits, len(logits) - 1, predicted)  # the list's token is kept
    single = ckpt.tokenizer.encode("q")
    assert len(single) == 1
    at.text_input(key="dla_typed").input("q")
    rerun(at)
    assert not texts(at, "error") and "Using the typed token" in texts(at, "caption")
    check_sum(at, logits, len(logits) - 1, single[0])


def upload(model, tokenizer, name: str = "bare"):
    """The Transformer block page on an uploaded checkpoint."""
    at = app_test()
    at.switch_page("app_pages/block.py")
    rerun(at)
    checkpoint_uploader(at).set_value(
        (f"{name}.zip", checkpoint_to_zip(model, tokenizer, {"corpus": "x"}),
         "application/zip"))
    rerun(at)
    assert at.pills(key="model").value == name
    return at


def char_tokenizer() -> CharTokenizer:
    tok = CharTokenizer()
    tok.train("the cat sat on a mat, then the rat ran.")
    return tok


def test_an_unknown_typed_token_gets_a_message():
    tok = char_tokenizer()
    at = upload(tiny_gpt(tok.vocab_size, context_length=16), tok)
    show(at, DLA)
    at.text_input(key="dla_typed").input("ж")
    rerun(at)
    assert "is not in this model's vocabulary" in texts(at, "error")
    assert waterfall(at)[0]  # the view still draws, with the list's token


@pytest.mark.parametrize("settings", [
    dict(bias=False, positional="none", n_layer=1),
    dict(positional="rope", n_layer=2),
], ids=["one layer, no biases, no positions", "rope"])
def test_models_without_biases_positions_or_a_second_layer_adapt(settings):
    tok = char_tokenizer()
    mine = tiny_gpt(tok.vocab_size, context_length=16, **settings)
    at = upload(mine, tok)
    show(at, DLA)
    assert not texts(at, "error")
    ids, logits, cache = model_run(Checkpoint(mine, tok), at)
    labels = check_sum(at, logits, len(ids) - 1, int(logits[-1].argmax()))
    assert "position p" not in labels and "no position bar" in texts(at, "caption")
    tex = texts(at, "latex")
    assert "p_{" not in tex
    if not settings.get("bias", True):
        assert not any("b_O" in lb or "b_f" in lb for lb in labels)
        assert "b_O" not in tex and "b_f" not in tex
    else:
        assert sum("b_O" in lb for lb in labels) == settings["n_layer"]
    show(at, COMMIT)
    strip = array_of(figure(at, "commitment")["data"][0]["z"])[0]
    assert strip.astype(int).tolist() == loop_commitment(mine, cache, len(ids))
    assert set(strip.tolist()) <= set(range(-1, settings["n_layer"]))



def test_a_one_token_prompt_works_in_both_views():
    model = MODELS[0]
    ckpt = load_checkpoint(bundled_models()[model])
    at = run_page("block", model=model, view=DLA, prompt="q")
    ids, logits, cache = model_run(ckpt, at)
    assert len(ids) == 1
    check_sum(at, logits, 0, int(logits[0].argmax()))
    show(at, COMMIT)
    strip = array_of(figure(at, "commitment")["data"][0]["z"])[0]
    assert strip.astype(int).tolist() == loop_commitment(ckpt.model, cache, 1)
