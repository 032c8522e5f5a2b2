"""Trainer: schedule, determinism, learning, callbacks, stop, NaN; and the CLI."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import torch

from gptviz.checkpoints.folder import load_checkpoint
from gptviz.data import induction_corpus
from gptviz.model import GPTConfig, RunConfig, TrainConfig
from gptviz.tokenizers.char import CharTokenizer
from gptviz.train.__main__ import main
from gptviz.train.trainer import DivergenceError, Trainer, lr_at

TEXT = induction_corpus(n_lines=300, length=6, alphabet="abcdefgh", seed=0)


def setup(steps: int = 30, **train_kw) -> tuple[RunConfig, list[int]]:
    tok = CharTokenizer()
    tok.train(TEXT)
    model = GPTConfig(vocab_size=tok.vocab_size, context_length=16, d_model=32, n_layer=2, n_head=2)
    train = TrainConfig(steps=steps, batch_size=8, learning_rate=3e-3, warmup_steps=5,
                        eval_interval=10, eval_batches=2, **train_kw)
    return RunConfig(model, train), tok.encode(TEXT)


def test_lr_warms_up_then_decays_to_min_lr():
    cfg = TrainConfig(steps=1000, learning_rate=1e-3, min_lr=1e-4, warmup_steps=100)
    lrs = [lr_at(s, cfg) for s in range(1000)]
    assert lrs[0] == pytest.approx(1e-3 / 101) and lrs[99] == pytest.approx(1e-3 * 100 / 101)
    assert lrs[100] == pytest.approx(1e-3)
    assert all(a >= b for a, b in zip(lrs[100:], lrs[101:], strict=False))  # cosine: never goes up
    assert lr_at(1000, cfg) == pytest.approx(1e-4)


def test_same_seed_same_run():
    runs = []
    for _ in range(2):
        config, ids = setup(steps=8)
        trainer = Trainer(config, ids)
        result = trainer.train()
        runs.append(([s.loss for s in result.steps], trainer.model.state_dict()))
    assert runs[0][0] == runs[1][0]
    assert all(torch.equal(runs[0][1][k], runs[1][1][k]) for k in runs[0][1])


def test_training_lowers_the_loss_and_reports():
    config, ids = setup(steps=40)
    steps, evals = [], []
    result = Trainer(config, ids, on_step=steps.append, on_eval=evals.append).train()
    assert [s.step for s in steps] == list(range(1, 41)) and not result.stopped
    assert [e.step for e in evals] == [0, 10, 20, 30, 40]
    assert math.isnan(evals[0].train_loss)
    assert evals[0].val_loss == pytest.approx(math.log(config.model.vocab_size), abs=0.3)
    assert evals[-1].val_loss < evals[0].val_loss - 0.25
    assert evals[-1].val_perplexity == pytest.approx(math.exp(evals[-1].val_loss))
    assert all(s.tokens_per_s > 0 and s.grad_norm > 0 for s in steps)


def test_stop_event_ends_training_early():
    config, ids = setup(steps=50)
    stop = threading.Event()

    def on_step(info):
        if info.step == 3:
            stop.set()

    result = Trainer(config, ids, on_step=on_step, stop=stop).train()
    assert result.stopped and result.steps_done == 3
    assert result.evals[-1].step == 3  # a last evaluation of what was trained


def test_nan_loss_stops_with_a_clear_error():
    config, ids = setup(steps=10)
    trainer = Trainer(config, ids)

    def poison(info):  # after the first evaluation, break the weights
        with torch.no_grad():
            trainer.model.embed.weight.fill_(float("nan"))

    trainer.on_eval = poison
    with pytest.raises(DivergenceError, match="loss became nan at step 1.*Lower the learning rate"):
        trainer.train()


def test_bad_data_is_a_clear_value_error():
    config, ids = setup()
    with pytest.raises(ValueError, match="too short to hold one window"):
        Trainer(config, ids[:20])
    with pytest.raises(ValueError, match="outside the model's vocabulary"):
        Trainer(config, [i % 100 for i in range(500)])


def test_invalid_train_config():
    with pytest.raises(ValueError, match="min_lr"):
        TrainConfig(learning_rate=1e-4, min_lr=1e-3)
    with pytest.raises(ValueError, match="steps must be at least 1"):
        TrainConfig(steps=0)


def test_bf16_autocast_trains_on_cpu():
    config, ids = setup(steps=3, dtype="bfloat16")
    result = Trainer(config, ids).train()
    assert all(math.isfinite(s.loss) for s in result.steps)


def test_cli_writes_a_checkpoint(tmp_path, capsys):
    corpus = tmp_path / "tiny.txt"
    corpus.write_text(TEXT, encoding="utf-8")
    out = tmp_path / "ckpt"
    code = main(["--corpus", str(corpus), "--tokenizer", "char", "--layers", "1", "--heads", "2",
                 "--d-model", "16", "--context-length", "16", "--steps", "6",
                 "--eval-interval", "3", "--eval-batches", "2", "--out", str(out)])
    assert code == 0
    assert sorted(p.name for p in out.iterdir()) == [
        "card.json", "config.json", "model.safetensors", "tokenizer.json"]
    card = json.loads((out / "card.json").read_text())
    assert card["steps"] == 6 and [e["step"] for e in card["evals"]] == [0, 3, 6]
    assert card["evals"][0]["train_loss"] is None  # JSON has no NaN
    err = capsys.readouterr().err
    assert "6/6" in err  # the progress bar


def test_cli_reports_bad_input(tmp_path, capsys):
    corpus = tmp_path / "short.txt"
    corpus.write_text("too short", encoding="utf-8")
    assert main(["--corpus", str(corpus), "--out", str(tmp_path / "o"), "--quiet"]) == 2
    assert "too short to hold one window" in capsys.readouterr().err


def test_the_engine_imports_no_ui_code():
    code = ("import sys, gptviz.train, gptviz.generation.sampling, gptviz.checkpoints.folder; "
            "ui = [m for m in sys.modules if m.split('.')[0] in ('streamlit', 'plotly')]; "
            "assert not ui, ui")
    proc = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[1],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]


def _train_cli(tmp_path, *extra: str) -> dict:
    corpus = tmp_path / "tiny.txt"
    corpus.write_text(TEXT, encoding="utf-8")
    out = tmp_path / f"ckpt{len(extra)}"
    code = main(["--corpus", str(corpus), "--tokenizer", "char",
                 "--layers", "1", "--heads", "2", "--d-model", "16", "--context-length", "16",
                 "--steps", "40", "--lr", "3e-2", "--eval-interval", "5", "--eval-batches", "2",
                 "--quiet", "--out", str(out), *extra])
    assert code == 0
    return json.loads((out / "card.json").read_text()), out


def test_cli_keeps_the_best_evaluation_by_default(tmp_path):
    card, out = _train_cli(tmp_path)
    best = min(card["evals"], key=lambda e: e["val_loss"])
    assert card["kept"] == "best" and card["kept_step"] == best["step"]
    # the saved weights are the best ones: their held-out loss is the best evaluation's
    # (the evaluation uses fixed windows, the held-out loss every token: close, not equal)
    ckpt = load_checkpoint(out)
    assert card["kept_val_loss"] == best["val_loss"]
    held = card["held_out"]
    assert held["nats_per_char"] == pytest.approx(held["nats_per_token"] * held["tokens"]
                                                  / held["chars"])
    assert card["val_chars"] == held["chars"] == len(TEXT) - round(len(TEXT) * 0.9)
    assert ckpt.config.vocab_size == ckpt.tokenizer.vocab_size


def test_cli_keep_last_keeps_the_last_step(tmp_path):
    card, _ = _train_cli(tmp_path, "--keep", "last")
    assert card["kept"] == "last" and card["kept_step"] == 40
    assert card["kept_val_loss"] == card["evals"][-1]["val_loss"]


def test_the_tokenizer_never_sees_the_held_out_text(tmp_path):
    # a word that occurs only in the last 10 %: BPE must not have merged it into one token
    text = TEXT * 3 + " zyxwvutsrq" * 60
    corpus = tmp_path / "c.txt"
    corpus.write_text(text, encoding="utf-8")
    out = tmp_path / "c"
    assert main(["--corpus", str(corpus), "--tokenizer", "bpe", "--vocab-size", "400",
                 "--layers", "1", "--heads", "2", "--d-model", "16", "--context-length", "16",
                 "--steps", "2", "--eval-batches", "1", "--quiet", "--out", str(out)]) == 0
    tok = load_checkpoint(out).tokenizer
    assert len(tok.encode(" zyxwvutsrq")) > 3
    assert not any(b"zyx" in tok.id_to_bytes(i) for i in range(tok.vocab_size))


def test_trainer_keep_best_restores_the_best_weights():
    config, ids = setup(steps=40)  # evaluations at 0, 10, 20, 30, 40
    trainer = Trainer(config, ids)
    result = trainer.train()
    trainer.keep_best()
    assert trainer.evaluate() == pytest.approx(result.best.val_loss, abs=1e-6)
    assert result.best.val_loss == min(e.val_loss for e in result.evals)
    assert len(result.evals) == 5
