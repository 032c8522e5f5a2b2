"""gptviz's AdamW: parity with torch.optim.AdamW, its properties, and no torch._dynamo."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from gptviz.model import TrainConfig
from gptviz.train.adamw import AdamW
from gptviz.train.trainer import lr_at, make_optimizer
from tests.helpers import tiny_gpt

ROOT = Path(__file__).resolve().parents[1]


def torch_twin(ours: AdamW, model: torch.nn.Module, twin: torch.nn.Module,
               **kw) -> torch.optim.AdamW:
    """torch's AdamW over ``twin`` with the groups and settings of ``ours`` over ``model``."""
    index = {id(p): i for i, p in enumerate(model.parameters())}
    twin_params = list(twin.parameters())
    groups = [{"params": [twin_params[index[id(p)]] for p in g["params"]],
               "weight_decay": g["weight_decay"], "eps": g["eps"]} for g in ours.param_groups]
    return torch.optim.AdamW(groups, lr=ours.param_groups[0]["lr"],
                             betas=ours.param_groups[0]["betas"], **kw)


@pytest.mark.parametrize("eps", [1e-8, 1e-3])  # 1e-3: where ε goes changes the numbers
@pytest.mark.parametrize(("kw", "fused"), [({"foreach": False}, False), ({"foreach": True}, False),
                                           ({"fused": True}, None)],
                         ids=["for-loop", "foreach", "fused"])
def test_matches_torch_adamw_step_by_step(kw, fused, eps):
    # No biases: the key bias has only rounding noise for a gradient (softmax ignores a shift
    # of all scores), which Adam scales up to steps of size lr, so 1 ulp of difference between
    # fused and unfused kernels would grow to lr. The vectors left are the LayerNorms' λ and b.
    ours_model = tiny_gpt(11, n_layer=2, bias=False).train()
    torch_model = copy.deepcopy(ours_model)
    start = [p.detach().clone() for p in ours_model.parameters()]
    cfg = TrainConfig(steps=25, learning_rate=1e-2, min_lr=1e-3, warmup_steps=5,
                      weight_decay=0.1, beta1=0.9, beta2=0.99)
    ours = make_optimizer(ours_model, cfg)
    ours.fused = fused  # None, the trainer's choice, is the fused kernel on CPU
    for group in ours.param_groups:
        group["eps"] = eps
    assert [g["weight_decay"] for g in ours.param_groups] == [0.1, 0.0]
    assert all(p.dim() >= 2 for p in ours.param_groups[0]["params"])
    assert ours.param_groups[1]["params"] and all(p.dim() == 1
                                                  for p in ours.param_groups[1]["params"])
    theirs = torch_twin(ours, ours_model, torch_model, **kw)
    gen = torch.Generator().manual_seed(0)
    for step in range(cfg.steps):
        ids = torch.randint(0, 11, (4, 9), generator=gen)
        for model, opt in ((ours_model, ours), (torch_model, theirs)):
            for group in opt.param_groups:
                group["lr"] = lr_at(step, cfg)  # as the trainer does: a new lr every step
            logits = model(ids[:, :-1])  # (B, N, |V|)
            F.cross_entropy(logits.flatten(0, 1), ids[:, 1:].flatten()).backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
    for (name, a), b, s in zip(ours_model.named_parameters(), torch_model.parameters(), start,
                               strict=True):
        assert (a - b).abs().max().item() <= 1e-6, name
        assert (a - s).abs().max().item() > 1e-3, name  # it trained: the parity is not vacuous


KERNELS = pytest.mark.parametrize("fused", [None, False], ids=["fused", "foreach"])


@KERNELS
def test_lr_zero_moves_nothing(fused):
    torch.manual_seed(0)
    p = torch.nn.Parameter(torch.randn(3, 4))
    before = p.detach().clone()
    opt = AdamW([p], lr=0.0, weight_decay=0.5, fused=fused)
    for _ in range(3):
        p.grad = torch.randn(3, 4)
        opt.step()
    assert torch.equal(p.detach(), before)
    assert opt.state[p]["step"] == 3 and opt.state[p]["exp_avg"].abs().sum() > 0


@KERNELS
def test_weight_decay_alone_shrinks_by_one_minus_lr_lambda(fused):
    """Zero gradients: Adam's part is 0 / (0 + ε) = 0, so only θ ← (1 − ηλ) θ remains."""
    matrix, vector = torch.nn.Parameter(torch.full((2, 3), 2.0)), torch.nn.Parameter(torch.ones(3))
    groups = [{"params": [matrix], "weight_decay": 0.5}, {"params": [vector], "weight_decay": 0}]
    opt = AdamW(groups, lr=0.1, fused=fused)
    for _ in range(2):
        matrix.grad, vector.grad = torch.zeros(2, 3), torch.zeros(3)
        opt.step()
    assert torch.allclose(matrix.detach(), torch.full((2, 3), 2.0 * 0.95**2), rtol=0, atol=1e-7)
    assert torch.equal(vector.detach(), torch.ones(3))


def test_parameters_without_gradient_are_left_alone_and_zero_grad_clears():
    a, b = torch.nn.Parameter(torch.ones(2)), torch.nn.Parameter(torch.ones(2))
    opt = AdamW([a, b], lr=0.1)
    a.grad = torch.ones(2)
    opt.step()
    assert torch.equal(b.detach(), torch.ones(2)) and b not in opt.state
    assert opt.state[a]["step"] == 1 and (a < 1).all()
    opt.zero_grad(set_to_none=False)
    assert torch.equal(a.grad, torch.zeros(2))
    opt.zero_grad()
    assert a.grad is None


@pytest.mark.parametrize(("kw", "match"), [({"lr": -1.0}, "lr, eps and weight_decay"),
                                           ({"betas": (0.9, 1.0)}, "betas must lie in")])
def test_bad_settings_are_a_clear_value_error(kw, match):
    with pytest.raises(ValueError, match=match):
        AdamW([torch.nn.Parameter(torch.ones(1))], **kw)


def test_fused_where_there_is_no_fused_kernel_is_a_clear_value_error():
    p = torch.nn.Parameter(torch.ones(2, device="meta"))
    p.grad = torch.ones(2, device="meta")
    with pytest.raises(ValueError, match="no fused kernel for torch.float32 on meta"):
        AdamW([p], fused=True).step()


def test_training_never_imports_torch_dynamo():
    """torch.optim's optimizers import torch._dynamo (~70 MB) on first use; ours must not."""
    code = """
import sys
import torch
from gptviz.data import induction_corpus
from gptviz.model import GPTConfig, RunConfig, TrainConfig
from gptviz.tokenizers.char import CharTokenizer
from gptviz.train.adamw import AdamW
from gptviz.train.trainer import Trainer

torch.set_num_threads(1)
tok = CharTokenizer()
text = induction_corpus(n_lines=100, length=6, alphabet="abcd", seed=0)
tok.train(text)
model = GPTConfig(vocab_size=tok.vocab_size, context_length=8, d_model=16, n_layer=1, n_head=2)
for dtype in ("float32", "bfloat16"):
    run = RunConfig(model, TrainConfig(steps=3, batch_size=4, eval_batches=1, dtype=dtype))
    assert Trainer(run, tok.encode(text)).train().steps_done == 3
p = torch.nn.Parameter(torch.ones(3))
p.grad = torch.ones(3)
AdamW([p], fused=False).step()  # the foreach kernel, used where there is no fused one
print("dynamo imported:", "torch._dynamo" in sys.modules)
"""
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "dynamo imported: False"
