"""The four positional encodings compared (gptviz.analysis.compare_positions) and the RoPE facts of
the Positional page (gptviz.analysis.positions): the shipped runs load and reproduce their cards,
the long-text losses equal a direct evaluation, and the RoPE numbers equal the model's own
rotated queries and keys."""

from __future__ import annotations

import json
import math
import threading

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from gptviz.analysis import positions
from gptviz.analysis.compare_positions import (
    FOLDER,
    KINDS,
    SCHEMES,
    CompareJob,
    Recipe,
    load_data,
    load_runs,
    long_texts,
    position_losses,
    save_run,
    stretched,
    train_kind,
    val_loss,
)
from gptviz.model.attention import rope_angles
from gptviz.model.names import act_name
from gptviz.train.slots import TrainerSlots
from tests.helpers import tiny_gpt

TINY = Recipe(steps=4, eval_interval=2, eval_batches=2, long_texts=3)


@pytest.fixture(scope="module")
def runs():
    return load_runs()


@pytest.fixture(scope="module")
def data():
    return load_data(Recipe())


def card_of(kind: str) -> dict:
    """The card as the file says, not as the loader passes it on."""
    return json.loads((FOLDER / kind / "card.json").read_text())


@pytest.mark.parametrize("kind", KINDS)
def test_each_shipped_run_loads_and_reproduces_its_curve(runs, data, kind):
    ckpt, card, recipe = runs[kind], card_of(kind), Recipe()
    assert ckpt.config.positional == kind and card["kind"] == kind
    assert card["recipe"] == {k: getattr(recipe, k) for k in card["recipe"]}
    steps = [e["step"] for e in card["evals"]]
    assert steps == list(range(0, recipe.steps + 1, recipe.eval_interval))
    assert all(math.isfinite(e["val_loss"]) for e in card["evals"])
    # The weights on disk give the card's validation loss on the Trainer's fixed batches.
    again = val_loss(ckpt.model, data.val_ids, recipe)
    assert again == pytest.approx(card["val_loss_as_saved"], abs=2e-5)
    assert again == pytest.approx(card["evals"][-1]["val_loss"], abs=5e-3)  # float16 storage
    size = sum(f.stat().st_size for f in (FOLDER / kind).iterdir())
    assert size <= 300_000, f"{kind}: {size:,} bytes"
    assert set(card["long"]["losses"]) == set(SCHEMES[kind])
    for v in card["long"]["losses"].values():
        assert len(v) == recipe.long_length


def test_the_runs_differ_only_in_their_positions(runs):
    configs = {k: {**runs[k].config.to_dict(), "positional": None} for k in KINDS}
    assert len({json.dumps(c, sort_keys=True) for c in configs.values()}) == 1
    assert runs["learned"].model.num_params() - runs["rope"].model.num_params() == \
        runs["rope"].config.context_length * runs["rope"].config.d_model


def direct_crop(model, texts: torch.Tensor, t: int) -> float:
    """−log P(x_{t+1}) with the model reading only the last N characters up to t."""
    n = model.config.context_length
    with torch.no_grad():
        logits = model(texts[:, max(0, t - n + 1):t + 1])[:, -1]  # (B, |V|)
    return F.cross_entropy(logits.double(), texts[:, t + 1]).item()


def test_learned_cropped_losses_equal_a_direct_evaluation(runs, data):
    recipe, card = Recipe(), card_of("learned")
    texts = long_texts(data.val_ids, recipe.long_length, recipe.long_texts)
    shipped = card["long"]["losses"]["crop"]
    for t in (0, 17, 31, 32, 63, 64, 100, 127):
        assert direct_crop(runs["learned"].model, texts, t) == pytest.approx(shipped[t], abs=2e-5)


def test_rope_whole_text_losses_equal_its_rolling_cache(runs, data):
    """The cached generator's path, one character at a time, gives the card's numbers."""
    recipe, model = Recipe(), runs["rope"].model
    texts = long_texts(data.val_ids, recipe.long_length, recipe.long_texts)  # (B, L+1)
    cache = model.new_cache(batch=texts.shape[0])
    losses = []
    with torch.no_grad():
        for t in range(recipe.long_length):
            logits = model(texts[:, t:t + 1], cache=cache)[:, -1]  # (B, |V|)
            losses.append(F.cross_entropy(logits.double(), texts[:, t + 1]).item())
    assert cache.length == recipe.context_length  # the window rolled
    np.testing.assert_allclose(losses, card_of("rope")["long"]["losses"]["whole"], atol=2e-5)


def test_crop_and_whole_agree_inside_the_window_and_not_past_it(runs, data):
    card = card_of("none")["long"]["losses"]
    n = Recipe().context_length
    np.testing.assert_allclose(card["crop"][:n], card["whole"][:n], atol=2e-5)
    assert np.abs(np.subtract(card["crop"][n:], card["whole"][n:])).max() > 1e-3


def test_a_learned_table_cannot_be_stretched(runs, data):
    with pytest.raises(ValueError, match="no row past position 31"):
        stretched(runs["learned"].model, 64)
    texts = long_texts(data.val_ids, 64, 2)
    with pytest.raises(ValueError, match="crop the text"):
        position_losses(runs["learned"].model, texts, "whole")


def test_a_stretched_sinusoidal_model_reads_the_formula_past_n(runs):
    model = runs["sinusoidal"].model
    twin = stretched(model, 128)
    assert torch.equal(twin.pos.PE[:32], model.pos.PE)
    ids = torch.arange(20)[None]
    with torch.no_grad():
        assert torch.allclose(twin(ids), model(ids), atol=1e-6)


def test_a_tiny_recipe_trains_saves_and_loads_all_four(tmp_path):
    data = load_data(TINY)
    for kind in KINDS:
        save_run(train_kind(kind, TINY, data), tmp_path)
    back = load_runs(tmp_path)
    assert [back[k].card["steps"] for k in KINDS] == [4] * 4
    (tmp_path / "rope" / "card.json").write_text(json.dumps({"kind": "rope"}))
    with pytest.raises(ValueError, match="rerun scripts/make_positional.py"):
        load_runs(tmp_path)
    with pytest.raises(ValueError, match="not a checkpoint folder"):
        load_runs(tmp_path / "nowhere")


def test_a_stopped_job_keeps_no_runs():
    job = CompareJob(Recipe(steps=10_000), TrainerSlots(1))
    job.start()
    job.stop()
    assert job.join(timeout=120)
    p = job.progress()
    assert p.status == "stopped" and not p.runs


def test_a_job_waits_for_the_trainer_slot():
    slots = TrainerSlots(1)
    assert slots.acquire(threading.Event())  # someone else is training
    job = CompareJob(TINY, slots)
    job.start()
    assert not job.join(timeout=0.5) and job.progress().status == "queued"
    slots.release()
    assert job.join(timeout=120) and job.progress().status == "done"


# ---- RoPE on the page ------------------------------------------------------------------------

def test_the_angle_table_is_the_models_rotation():
    table = positions.rope_angle_table(40, 16)  # (N, d_k/2)
    cos, sin = rope_angles(0, 40, 16)
    np.testing.assert_allclose(np.cos(table), cos.numpy(), atol=1e-12)
    np.testing.assert_allclose(np.sin(table), sin.numpy(), atol=1e-12)


def test_the_relative_scores_equal_the_models_rotated_q_and_k():
    """Put the key token at j and the query token at i of a real text: the model's own
    rotated q_i · k_j (hook_q_rot, hook_k_rot) is the page's number."""
    model = tiny_gpt(12, context_length=16, d_model=32, n_layer=2, n_head=4, positional="rope")
    q, k = positions.layer0_qk(model, query_token=7, key_token=3, head=2)
    check = positions.rope_relative_check(q, k, 16)
    assert check.max_deviation < 1e-12 and check.diagonal_spread < 1e-12
    for i, j in [(5, 2), (15, 0), (9, 8), (12, 4)]:
        ids = [0] * 16
        ids[j], ids[i] = 3, 7
        _, cache = model.run_with_cache(ids)
        qi = cache[act_name("q_rot", 0)][0, 2, i].double()
        kj = cache[act_name("k_rot", 0)][0, 2, j].double()
        assert check.scores[i, j] == pytest.approx(float(qi @ kj), abs=1e-5)
        assert check.by_offset[i, j] == pytest.approx(float(qi @ kj), abs=1e-5)
    assert abs(check.scores[5, 2] - check.scores[5, 0]) > 1e-4  # the offset does matter
