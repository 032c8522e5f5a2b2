"""Data-parallel training: 2 CPU processes under torchrun (gloo) keep identical replicas."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.distributed as dist

from gptviz.data import induction_corpus
from gptviz.model import GPT, GPTConfig
from gptviz.train.ddp import init_from_env, params_digest

ROOT = Path(__file__).resolve().parents[1]


def test_digest_tells_models_apart():
    torch.manual_seed(0)
    a = GPT(GPTConfig(vocab_size=5, context_length=4, d_model=8, n_layer=1, n_head=2))
    torch.manual_seed(0)
    b = GPT(GPTConfig(vocab_size=5, context_length=4, d_model=8, n_layer=1, n_head=2))
    assert params_digest(a) == params_digest(b)
    with torch.no_grad():
        b.ln_final.lam[0] += 1e-7
    assert params_digest(a) != params_digest(b)


def test_not_under_torchrun_means_no_process_group(monkeypatch):
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    assert init_from_env("cpu") is None


@pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(),
                    reason="torch.distributed with gloo is not available in this build")
def test_two_processes_keep_identical_replicas(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(induction_corpus(n_lines=300, length=6, alphabet="abcdefgh"), "utf-8")
    out = tmp_path / "ckpt"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
           "-m", "gptviz.train", "--corpus", str(corpus), "--tokenizer", "char", "--layers", "1",
           "--heads", "2", "--d-model", "16", "--context-length", "16", "--steps", "5",
           "--eval-interval", "5", "--eval-batches", "2", "--device", "cpu", "--quiet",
           "--out", str(out)]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    card = json.loads((out / "card.json").read_text())
    assert card["world_size"] == 2 and card["replicas_identical"] is True
    assert card["steps"] == 5 and card["evals"][-1]["val_loss"] < card["evals"][0]["val_loss"]
