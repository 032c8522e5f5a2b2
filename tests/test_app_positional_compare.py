"""AppTest of the Positional page's comparison and of the page on RoPE and position-free
models: the figures and the table show the cards' numbers, retrained runs replace them for
the session, the retrain button starts and stops a job, and a RoPE model gets its angles,
its rotated q and k and the i − j property, each equal to a direct computation."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest
import torch

from gptviz.analysis.compare_positions import FOLDER, KINDS, SCHEMES, Recipe, load_data, train_kind
from gptviz.app.positional.retrain import RUNS
from gptviz.checkpoints.folder import bundled_models, checkpoint_to_zip, load_checkpoint
from gptviz.model.attention import rope_angles, rotate
from gptviz.model.names import act_name
from tests.helpers import (
    array_of,
    checkpoint_uploader,
    figure,
    rerun,
    run_page,
    texts,
    tiny_gpt,
    z_of,
)

VIEW = "Four encodings compared"
CARDS = {k: json.loads((FOLDER / k / "card.json").read_text()) for k in KINDS}


def compare_page():
    return run_page("positional", view=VIEW)


def curve_values(at) -> dict[str, np.ndarray]:
    fig = figure(at, "Validation loss while training")
    return {t["name"]: array_of(t["y"]) for t in fig["data"]}


def test_the_figures_and_the_table_show_the_cards():
    at = compare_page()
    curves = curve_values(at)
    for kind in KINDS:
        name = "RoPE" if kind == "rope" else kind
        assert curves[name].tolist() == [e["val_loss"] for e in CARDS[kind]["evals"]]
    long = {t["name"]: array_of(t["y"]) for t in figure(at, "Loss at each position")["data"]}
    assert len(long) == sum(len(SCHEMES[k]) for k in KINDS)
    assert long["RoPE: whole text, sliding window"].tolist() == \
        CARDS["rope"]["long"]["losses"]["whole"]
    assert long["learned: cropped to the last N"].tolist() == \
        CARDS["learned"]["long"]["losses"]["crop"]
    assert long["none: whole text"].tolist() == CARDS["none"]["long"]["losses"]["whole"]
    df = at.dataframe[0].value
    row = df[(df["encoding"] == "none") & (df["long texts read"] == "whole text")].iloc[0]
    v = np.asarray(CARDS["none"]["long"]["losses"]["whole"])
    assert row["positions 2N..4N-1"] == pytest.approx(v[64:128].mean(), abs=1e-12)
    assert row["positions 2N text"] == pytest.approx(v[:64].mean(), abs=1e-12)
    said = texts(at, "markdown")
    for kind in KINDS:  # the findings quote every final validation loss
        assert f"{CARDS[kind]['evals'][-1]['val_loss']:.3f}" in said
    assert "shipped runs" in texts(at, "caption")


def test_retrained_runs_replace_the_shipped_ones_for_this_session():
    tiny = Recipe(steps=4, eval_interval=2, eval_batches=2, long_texts=3)
    data = load_data(tiny)
    mine = {k: train_kind(k, tiny, data) for k in KINDS}
    at = compare_page()
    at.session_state[RUNS] = mine
    rerun(at)
    assert curve_values(at)["learned"].tolist() == [
        e["val_loss"] for e in mine["learned"].card["evals"]]
    assert "retrained in this session" in texts(at, "caption")
    at.button(key="pc_bundled").click()
    rerun(at)
    assert curve_values(at)["learned"].tolist() == [
        e["val_loss"] for e in CARDS["learned"]["evals"]]


def test_the_retrain_button_starts_a_job_and_stop_ends_it():
    at = compare_page()
    assert "times that" in texts(at, "markdown")  # how long it takes is said
    at.button(key="pc_retrain").click()
    rerun(at)
    assert at.button(key="pc_retrain").disabled
    assert at.get("progress") or "Waiting for the trainer" in texts(at, "info")
    at.button(key="pc_stop").click()
    deadline = time.time() + 120
    while "The figures above still show the shipped runs" not in texts(at, "warning"):
        assert time.time() < deadline, "the job did not stop"
        time.sleep(0.5)
        rerun(at)
    assert curve_values(at)["RoPE"].tolist() == [e["val_loss"] for e in CARDS["rope"]["evals"]]
    assert not at.button(key="pc_retrain").disabled


def upload(at, name: str, positional: str):
    tok = load_checkpoint(bundled_models()["mathematics-char"]).tokenizer
    model = tiny_gpt(tok.vocab_size, context_length=16, d_model=32, n_layer=2, n_head=4,
                     positional=positional)
    checkpoint_uploader(at).set_value(
        (f"{name}.zip", checkpoint_to_zip(model, tok, {"corpus": "x"}), "application/zip"))
    rerun(at)
    assert at.pills(key="model").value == name
    return model, tok


@pytest.mark.skipif("mathematics-char" not in bundled_models(), reason="no bundled char model")
def test_a_rope_model_shows_its_angles_rotations_and_the_offset_property():
    at = run_page("positional")
    model, tok = upload(at, "spun", "rope")
    at.session_state["view"] = "This model's positions"
    rerun(at)
    assert "rotary positions (RoPE)" in texts(at, "info")
    angles = z_of(figure(at, "RoPE angles")["data"][0])
    p, m = np.arange(16)[:, None], np.arange(0, 8, 2)[None, :]
    direct = np.mod(p * 10000.0 ** (-m / 8), 2 * np.pi)  # d_k = 8
    np.testing.assert_allclose(angles, direct, atol=1e-5)
    # q_5 · k_2 for the default tokens, from the model's own rotated q and k
    q_tok, k_tok = at.selectbox(key="rope_q").value, at.selectbox(key="rope_k").value
    ids = [0] * 16
    ids[2], ids[5] = k_tok, q_tok
    _, cache = model.run_with_cache(ids)
    dot = float(cache[act_name("q_rot", 0)][0, 0, 5] @ cache[act_name("k_rot", 0)][0, 0, 2])
    assert f"(R_{{5}} q)\\cdot(R_{{2}} k) &= {dot:.6f}" in texts(at, "latex")
    scores = z_of(figure(at, "q_i · k_j, layer 0")["data"][0])
    assert scores[5, 2] == pytest.approx(dot, abs=1e-5)

    at.session_state["view"] = "X + PE for the prompt"
    rerun(at)
    assert "adds nothing to the token embeddings" in texts(at, "info")
    # the example prompt is longer than the 16-token window: a RoPE model slides, not crops
    assert "generation slides its window" in texts(at, "warning")
    panels = figure(at, "q and k before and after the rotation")["data"]
    q, q_rot = z_of(panels[0]), z_of(panels[1])
    cos, sin = rope_angles(0, q.shape[0], 8)
    np.testing.assert_allclose(q_rot, rotate(torch.tensor(q), cos, sin).numpy(), atol=1e-5)
    norms = at.dataframe[0].value
    np.testing.assert_allclose(norms["‖q_p‖"], norms["‖R_p q_p‖"], rtol=1e-5)


@pytest.mark.skipif("mathematics-char" not in bundled_models(), reason="no bundled char model")
def test_a_model_without_positions_says_so_in_x_plus_pe():
    at = run_page("positional", view="X + PE for the prompt")
    upload(at, "plain", "none")
    assert "no positional encoding" in texts(at, "info")
    assert "as generation would cut them" in texts(at, "warning")
    pe = z_of(figure(at, "what the first block receives")["data"][1])
    assert np.abs(pe).max() == 0.0
