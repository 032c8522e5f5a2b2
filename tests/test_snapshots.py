"""Snapshots of the weights during training (gptviz.checkpoints.snapshots): bounds, thinning, the
round trip through a checkpoint folder and a zip, and messages for bad files."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import save as save_safetensors

from gptviz.checkpoints.folder import (
    CheckpointError,
    checkpoint_files,
    checkpoint_from_files,
    checkpoint_to_zip,
    load_checkpoint,
    load_checkpoint_zip,
    save_checkpoint,
)
from gptviz.checkpoints.snapshots import SNAPSHOTS, Snapshots, fitting_count, snapshot_bytes
from gptviz.model import TrainConfig
from gptviz.tokenizers import CharTokenizer
from gptviz.train.__main__ import main, snapshot_steps
from tests.helpers import tiny_gpt


@pytest.fixture
def tok():
    t = CharTokenizer()
    t.train("abcdefghij")
    return t


def _nudged(model, by: float):
    with torch.no_grad():
        for p in model.parameters():
            p.add_(by)
    return model


def test_snapshots_round_trip_bit_exact_through_a_zip_and_a_folder(tok, tmp_path):
    model = tiny_gpt(tok.vocab_size)
    snaps = Snapshots()
    for step in (10, 20, 30):
        snaps.add(step, _nudged(model, 0.01))
    back = load_checkpoint_zip(checkpoint_to_zip(model, tok, {}, snaps)).snapshots
    again = load_checkpoint(save_checkpoint(tmp_path / "c", model, tok, {}, snaps)).snapshots
    for other in (back, again):
        assert other.steps == [10, 20, 30]
        for a, b in zip(snaps.states, other.states, strict=True):
            assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    # a snapshot is the model as it was then (in float16)
    restored = snaps.model_at(2, model)
    for name, p in restored.named_parameters():
        assert torch.allclose(p, dict(model.named_parameters())[name], atol=1e-2)
    assert restored.unembed.weight is restored.embed.weight  # tied, as the model


def test_a_checkpoint_without_snapshots_has_none(tok):
    model = tiny_gpt(tok.vocab_size)
    assert SNAPSHOTS not in checkpoint_files(model, tok)
    assert load_checkpoint_zip(checkpoint_to_zip(model, tok)).snapshots is None


def test_bounds_thin_every_second_snapshot_keeping_first_and_newest(tok):
    model = tiny_gpt(tok.vocab_size)
    snaps = Snapshots(max_count=4)
    for step in range(1, 10):
        snaps.add(step, model)
        assert len(snaps) <= 4
    assert snaps.steps[0] == 1 and snaps.steps[-1] == 9
    assert snaps.thinned == 9 - len(snaps)
    size = snapshot_bytes(model)
    by_bytes = Snapshots(max_bytes=2 * size)
    for step in range(1, 6):
        by_bytes.add(step, model)
    assert len(by_bytes) <= 2 and by_bytes.steps[-1] == 5
    none_fit = Snapshots(max_bytes=size - 1)
    none_fit.add(1, model)
    assert len(none_fit) == 0 and none_fit.thinned == 1
    with pytest.raises(ValueError, match="must increase"):
        snaps.add(3, model)
    assert fitting_count(model, 3 * size) == 3 and fitting_count(model, size - 1) == 0


def test_snapshot_steps_spread_over_the_run():
    tc = TrainConfig(steps=1000, eval_interval=100)
    assert sorted(snapshot_steps(tc, 3)) == [200, 500, 800]
    assert snapshot_steps(tc, 0) == set()
    assert snapshot_steps(tc, 50) == set(range(100, 1000, 100))  # every evaluation but the end


@pytest.mark.parametrize("damage, message", [
    (lambda d, m: b"not safetensors", "not a valid snapshots file"),
    (lambda d, m: save_safetensors({"0/embed.weight": m.embed.weight.detach().half()},
                                   metadata={"format": "other"}), "does not say which steps"),
    (lambda d, m: save_safetensors({"0/embed.weight": torch.zeros(2, 2)},
                                   metadata={"format": "gptviz-snapshots-1", "steps": "[5]"}),
     "has shape"),
    (lambda d, m: save_safetensors({"0/embed.weight": m.embed.weight.detach().half()},
                                   metadata={"format": "gptviz-snapshots-1", "steps": "[5]"}),
     "lacks"),
    (lambda d, m: save_safetensors({"7/embed.weight": m.embed.weight.detach().half()},
                                   metadata={"format": "gptviz-snapshots-1", "steps": "[5]"}),
     "no place for"),
])
def test_a_bad_snapshots_file_gets_a_message(tok, damage, message):
    model = tiny_gpt(tok.vocab_size)
    snaps = Snapshots()
    snaps.add(5, model)
    files = checkpoint_files(model, tok, {}, snaps)
    files[SNAPSHOTS] = damage(files[SNAPSHOTS], model)
    with pytest.raises(CheckpointError, match=message):
        checkpoint_from_files(files)


def test_the_cli_keeps_snapshots_within_its_budget(tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("abcdefghij klmnop\n" * 200, encoding="utf-8")
    out = tmp_path / "ck"
    assert main(["--corpus", str(corpus), "--layers", "1", "--heads", "2", "--d-model", "16",
                 "--context-length", "24", "--steps", "30", "--eval-interval", "5",
                 "--eval-batches", "1", "--snapshots-mb", "0.06", "--quiet",
                 "--out", str(out)]) == 0
    ckpt = load_checkpoint(out)
    card = json.loads((out / "card.json").read_text())
    count = fitting_count(ckpt.model, int(0.06 * 2**20))
    assert len(ckpt.snapshots) == min(count, 5)  # 5 evaluations between the first and last
    assert count >= 1 and ckpt.snapshots.steps == card["snapshot_steps"]
    assert (out / SNAPSHOTS).stat().st_size <= 0.06 * 2**20 + 10_000  # + its header
    # the induction score is tracked at every evaluation (the context holds 2 x 10 tokens)
    assert all("induction_score" in e for e in card["evals"])
