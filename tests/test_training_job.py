"""The Training page's library pieces, without Streamlit: planning and caps, the
background job (finish, stop, diverge, queue, time limit, session close), the
before/after comparison and the figure builders."""

from __future__ import annotations

import gc
import math
import threading
import time

import pytest
import torch

from gptviz.app.training.figures import loss_figure, prediction_pairs, thin, windows_html
from gptviz.app.training.formulas import cross_entropy_latex, perplexity_latex
from gptviz.checkpoints.folder import checkpoint_to_zip, initial_model, load_checkpoint_zip
from gptviz.data import train_val_split
from gptviz.model import GPTConfig
from gptviz.tokenizers import train_tokenizer
from gptviz.train.before_after import continuation, prompt_loss
from gptviz.train.jobs import SessionTrainer, TrainingJob
from gptviz.train.plan import (
    PRESETS,
    TrainingCaps,
    TrainingSpec,
    check_caps,
    check_corpus_length,
    default_prompt,
    estimate_seconds,
    flops_per_token,
    n_params,
    run_config,
)
from gptviz.train.slots import TrainerSlots
from gptviz.train.trainer import Trainer

TEXT = "the cat sat on the mat. the dog sat on the log. " * 30
TINY = TrainingSpec(corpus="test", d_model=16, n_layer=1, n_head=2, context_length=16,
                    steps=20, batch_size=4, learning_rate=3e-3)


@pytest.fixture(scope="module")
def tok():
    return train_tokenizer("char", TEXT)


def make_job(tok, slots=None, **changes) -> TrainingJob:
    spec = TrainingSpec(**{**TINY.__dict__, **changes})
    run = run_config(spec, tok.vocab_size, "float32")
    return TrainingJob(run, tok.encode(TEXT), tok, slots=slots or TrainerSlots(1),
                       prompt="the ", card={"name": "tiny"}, sample_tokens=10)


def wait_for(predicate, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


# ---- planning -------------------------------------------------------------------
@pytest.mark.parametrize("name", list(PRESETS))
def test_presets_fit_the_default_caps(name):
    run = run_config(PRESETS[name], 1024 if PRESETS[name].tokenizer == "bpe" else 111)
    assert check_caps(run, TrainingCaps(), estimate_seconds(run, 40e9)) == []


def test_caps_name_every_setting_over_them():
    run = run_config(TrainingSpec(d_model=512, n_layer=12, n_head=8, context_length=512,
                                  steps=9000, batch_size=128), 1000)
    messages = " ".join(check_caps(run, TrainingCaps(), estimate_s=10_000))
    for word in ("parameters", "steps", "context length", "batch size", "min"):
        assert word in messages


def test_caps_from_env():
    env = {"GPTVIZ_TRAIN_MAX_PARAMS": "5e6", "GPTVIZ_TRAIN_MAX_SECONDS": "60"}
    caps = TrainingCaps.from_env(env)
    assert (caps.max_params, caps.max_seconds, caps.max_steps) == (5_000_000, 60.0, 5000)


def test_flops_and_estimate_grow_with_the_model():
    small, big = GPTConfig(vocab_size=65, d_model=64), GPTConfig(vocab_size=65, d_model=128)
    assert flops_per_token(big) > 3 * flops_per_token(small)
    run = run_config(TINY, 40)
    assert estimate_seconds(run, 1e9) == pytest.approx(2 * estimate_seconds(run, 2e9))


@pytest.mark.parametrize("n_tokens", [10, 33, 100, 170, 171, 200, 5000])
def test_corpus_length_check_agrees_with_the_split(n_tokens):
    message = check_corpus_length(n_tokens, 16)
    try:
        train_val_split(list(range(n_tokens)), 0.1, 16)
        ok = True
    except ValueError:
        ok = False
    assert (message is None) == ok
    if message:
        assert "shorter than one window" in message


def test_default_prompt():
    assert default_prompt("abc|abc\nxyz|xyz\n") == "abc|abc\nxyz|"  # the answer is next
    assert default_prompt("12>12\n") == "12>"
    assert default_prompt("Representing homology classes by manifolds") == \
        "Representing homology classes"
    assert default_prompt("") == ""


# ---- the job ----------------------------------------------------------------------
def test_a_tiny_job_finishes_with_a_model_samples_and_a_card(tok):
    job = make_job(tok)
    job.start()
    assert job.join(60)
    s = job.snapshot()
    assert s.status == "done" and not s.active and s.step == 20
    assert [x for x, _ in s.losses] == list(range(1, 21))
    assert [e.step for e in s.evals] == [0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20]
    assert len(s.samples) == len(s.evals) and all(isinstance(x.text, str) for x in s.samples)
    assert "Finished after 20 steps" in s.message
    ckpt = job.checkpoint
    assert ckpt is not None and ckpt.card["steps"] == 20 and ckpt.card["name"] == "tiny"
    assert math.isfinite(ckpt.card["final_val_loss"])
    assert ckpt.card["evals"][0]["train_loss"] is None  # JSON has no NaN
    assert not ckpt.model.training
    # the run kept its snapshots (every evaluation after step 0), and a download keeps them
    assert ckpt.snapshots.steps == ckpt.card["snapshot_steps"] == list(range(2, 21, 2))
    back = load_checkpoint_zip(checkpoint_to_zip(ckpt.model, ckpt.tokenizer, ckpt.card,
                                                 ckpt.snapshots)).snapshots
    assert back.steps == ckpt.snapshots.steps
    assert all(torch.equal(a[k], b[k]) for a, b in zip(back.states, ckpt.snapshots.states,
                                                       strict=True) for k in a)


def test_stop_ends_within_a_second_and_keeps_the_model(tok):
    job = make_job(tok, steps=5000)
    job.start()
    wait_for(lambda: job.snapshot().step >= 3)
    t0 = time.monotonic()
    job.stop()
    assert job.join(10)
    assert time.monotonic() - t0 < 1.0
    s = job.snapshot()
    assert s.status == "stopped" and 3 <= s.step < 5000
    assert job.checkpoint is not None and job.checkpoint.card["stopped"] is True
    assert s.message.startswith("Stopped after")


@pytest.mark.parametrize("stop", [False, True])
def test_a_final_status_is_published_only_after_the_job_has_wound_down(tok, stop):
    """The page registers a model the moment it sees a final status (the race behind a
    flaky "Stopped after …" with the model missing from the picker): by then the checkpoint
    must be set and the slot released, and nothing of the job may change afterwards."""
    slots = TrainerSlots(1)
    job = make_job(tok, slots=slots, steps=5000 if stop else 20)
    job.start()
    if stop:
        wait_for(lambda: job.snapshot().step >= 2)
        job.stop()
    seen = job.snapshot()
    while seen.active:  # poll often, to catch the moment it ends
        time.sleep(0.002)
        seen = job.snapshot()
    assert job.checkpoint is not None and slots.running == 0
    assert job.join(5)
    assert job.snapshot().message == seen.message and job.snapshot().status == seen.status


def test_a_diverging_learning_rate_fails_with_a_message_and_no_model(tok):
    job = make_job(tok, learning_rate=1e4, steps=200)
    job.start()
    assert job.join(60)
    s = job.snapshot()
    assert s.status == "failed" and "diverged" in s.message and "learning rate" in s.message
    assert job.checkpoint is None


def test_the_time_limit_stops_a_run(tok):
    job = make_job(tok, steps=5000)
    job.max_seconds = 0.0
    job.start()
    assert job.join(30)
    s = job.snapshot()
    assert s.status == "stopped" and "time limit" in s.message and s.step == 1


def test_extra_jobs_wait_for_a_slot_and_can_be_cancelled(tok):
    slots = TrainerSlots(limit=1)
    first, second, third = (make_job(tok, slots, steps=5000) for _ in range(3))
    first.start()
    wait_for(lambda: first.snapshot().status == "running")
    second.start()
    third.start()
    wait_for(lambda: slots.waiting == 2)
    assert second.snapshot().status == "queued" and second.snapshot().others_running == 1
    third.stop()  # cancelled while queued
    assert third.join(5) and third.snapshot().status == "cancelled"
    assert third.checkpoint is None
    first.stop()
    wait_for(lambda: second.snapshot().status == "running")
    second.stop()
    assert first.join(10) and second.join(10)
    assert slots.running == 0 and slots.waiting == 0


def test_the_heap_is_frozen_only_while_training(tok):
    slots = TrainerSlots(1)
    assert slots.acquire(threading.Event())
    assert gc.get_freeze_count() > 0
    slots.release()
    assert gc.get_freeze_count() == 0


def test_a_stopped_slot_wait_returns_false():
    slots = TrainerSlots(1)
    assert slots.acquire(threading.Event())
    stop = threading.Event()
    stop.set()
    assert slots.acquire(stop) is False
    slots.release()
    with pytest.raises(ValueError):
        TrainerSlots(0)


def test_closing_the_session_stops_its_thread(tok):
    holder = SessionTrainer()
    job = make_job(tok, steps=5000)
    holder.submit(job)
    wait_for(lambda: job.snapshot().step > 0)
    with pytest.raises(RuntimeError, match="already training"):
        holder.submit(make_job(tok))
    holder.close()
    assert holder.job is None
    assert job.join(10) and job.snapshot().status == "stopped"


def test_initial_model_is_the_trainers_step_zero(tok):
    run = run_config(TINY, tok.vocab_size)
    trainer = Trainer(run, tok.encode(TEXT))
    fresh = initial_model(run.model, run.train.seed)
    for (name, a), b in zip(trainer.model.state_dict().items(), fresh.state_dict().values(),
                            strict=True):
        assert torch.equal(a, b), name


# ---- before / after -----------------------------------------------------------------
def test_an_untrained_model_is_about_as_surprised_as_ln_v(tok):
    model = initial_model(run_config(TINY, tok.vocab_size).model, 0)
    loss = prompt_loss(model, tok.encode("the cat sat on the mat"))
    assert abs(loss - math.log(tok.vocab_size)) < 1.0
    assert math.isnan(prompt_loss(model, tok.encode("t")))
    a, b = (continuation(model, tok, "the ", 12) for _ in range(2))
    assert a == b and a.n_prompt_tokens == 4 and a.cropped == 0


# ---- figures ---------------------------------------------------------------------------
def test_loss_figure_thins_long_runs_and_marks_ln_v():
    losses = [(i, 4.0 - i / 5000) for i in range(1, 5001)]
    fig = loss_figure(losses, [(0, math.nan, 4.6), (5000, 3.0, 3.1)], 100, 5000, max_points=300)
    assert len(fig.data[0].x) == 300 and fig.data[0].x[-1] == 5000
    guesses = [t for t in fig.data if t.mode == "lines+text"]
    assert guesses[0].y[0] == pytest.approx(math.log(100)) and guesses[1].y[0] == 100
    assert thin(0, 5).size == 0
    # the log axis labels 1, 2 and 5 of every decade, in full: not every digit ("100 9 8 7 …"
    # crowded), not "5 10 2 5 100" (plotly's dtick="D2" writes 20 and 50 as "2" and "5")
    axis = fig.layout.yaxis2
    assert axis.type == "log" and axis.tickmode == "array"
    shown = dict(zip(axis.tickvals, axis.ticktext, strict=True))
    assert shown[20] == "20" and shown[50] == "50" and shown[1000] == "1,000"
    assert 9 not in shown and 30 not in shown


def test_windows_show_x_over_y_shifted_by_one():
    labels = list("abcdefghij")
    out = windows_html(labels, context_length=4, stride=2, n_windows=2)
    assert out.count('class="gv-chip"') == 16  # 2 windows x (4 inputs + 4 targets)
    assert ">a<small>1</small>" in out and ">e<small>5</small>" in out
    table = prediction_pairs(labels, 4)
    assert table["the model sees x_1 … x_i"].tolist() == ["a", "ab", "abc", "abcd"]
    assert table["target"].tolist() == ["b", "c", "d", "e"]


def test_loss_formulas_show_the_live_numbers():
    tex = cross_entropy_latex(107, 2.5, 300)
    assert r"\ln 107 = 4.673" in tex and "2.500" in tex and "step 300" in tex
    assert "e^{2.500} = 12.18" in perplexity_latex(107, 2.5)
    assert "now" not in cross_entropy_latex(107) and "now" not in perplexity_latex(107, math.nan)


def test_n_params_matches_the_built_model():
    run = run_config(PRESETS["30-second demo"], 111)
    model = initial_model(run.model, 0)
    assert n_params(run.model) == sum(p.numel() for p in model.parameters())
