"""The maths of the Learning page (gptviz/analysis/learning.py,
gptviz/analysis/gradient_check.py) against direct torch computations: ∂L/∂z = P − e_y,
gradient norms per group, one SGD step, the
finite-difference check on every bundled model, and a model that never changes."""

from __future__ import annotations

import copy
import math
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from gptviz.analysis import gradient_check as gc
from gptviz.analysis.gradient_check import CheckRow, default_check_groups, gradient_check
from gptviz.analysis.learning import (
    LearningError,
    check_position,
    microscope,
    parameter_groups,
    take_window,
    window_losses,
)
from gptviz.analysis.twin import private_twin, swapped
from gptviz.app.learning.controls import median_position
from gptviz.checkpoints.folder import bundled_models, freeze, load_checkpoint
from gptviz.model.hooks import hooks
from tests.helpers import MODELS, tiny_gpt

ETAS = (1e-5, 1e-4, 1e20)
IDS = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3, 2, 3, 8, 4]


def direct(model, x, y, position):
    """Loss, logits and parameter gradients by plain torch on a fresh copy (fused path)."""
    twin = copy.deepcopy(model)
    for p in twin.parameters():
        p.requires_grad_(True)
    logits = twin(torch.tensor([x]))[0]  # (T, |V|)
    logits.retain_grad()
    loss = F.cross_entropy(logits[position:position + 1], torch.tensor([y[position]]))
    loss.backward()
    return loss.item(), logits, dict(twin.named_parameters())


@pytest.fixture(scope="module")
def bundled():
    """Each bundled model (frozen, as the app keeps it) with a window of its corpus."""
    from gptviz.data import read_corpus

    out = {}
    for name in MODELS:
        ckpt = load_checkpoint(bundled_models()[name])
        freeze(ckpt.model)
        text = read_corpus("induction" if "induction" in name else "mathematics")[:4000]
        ids = ckpt.tokenizer.encode(text)
        out[name] = (ckpt.model, take_window(ids, 7, ckpt.config.context_length))
    return out


@pytest.mark.parametrize("config", [{}, {"bias": False, "tie_embeddings": False},
                                    {"positional": "sinusoidal", "activation": "relu"}])
def test_logit_gradient_is_p_minus_e_y_and_equals_autograd(config):
    model = tiny_gpt(10, n_layer=2, **config)
    window = take_window(IDS, 0, 8)
    m = microscope(model, window, 5, ETAS)
    loss, logits, _ = direct(model, window.x, window.y, 5)
    probs = torch.softmax(logits[5].double(), -1).detach()
    e_y = F.one_hot(torch.tensor(window.y[5]), 10).double()
    torch.testing.assert_close(torch.from_numpy(m.probs), probs, atol=1e-6, rtol=0)
    torch.testing.assert_close(torch.from_numpy(m.formula), probs - e_y, atol=1e-6, rtol=0)
    torch.testing.assert_close(torch.from_numpy(m.dz), logits.grad[5].double(), atol=1e-6,
                               rtol=0)  # autograd through the fused path agrees too
    assert m.max_dz_error < 1e-6
    assert m.loss == pytest.approx(loss, abs=1e-5)
    assert m.p_target == pytest.approx(math.exp(-loss), rel=1e-5)
    assert m.formula[m.target] < 0 and (m.formula[m.formula != m.formula[m.target]] > 0).all()


@pytest.mark.parametrize("config", [{}, {"bias": False, "tie_embeddings": False},
                                    {"positional": "none"}])
def test_groups_cover_every_parameter_once_and_norms_match_torch(config):
    model = tiny_gpt(10, n_layer=2, **config)
    window = take_window(IDS, 2, 8)
    m = microscope(model, window, 7, ETAS)
    _, _, named = direct(model, window.x, window.y, 7)
    counted: dict[str, int] = {}
    for g in parameter_groups(model):
        for name, rows in g.parts:
            counted[name] = counted.get(name, 0) + named[name][rows or slice(None)].numel()
    assert counted == {n: p.numel() for n, p in named.items()}
    total = sum(float(p.grad.double().pow(2).sum()) for p in named.values())
    assert m.grad_sq == pytest.approx(total, rel=1e-4)
    assert (m.norms**2).sum() == pytest.approx(total, rel=1e-4)
    d = model.config.d_model
    by_label = dict(zip([g.label for g in m.groups], m.norms, strict=True))
    w_k = named["blocks.1.attn.W_QKV.weight"].grad[d:2 * d]
    assert by_label["L1 W_K"] == pytest.approx(float(w_k.norm()), rel=1e-4)
    assert by_label["E"] == pytest.approx(float(named["embed.weight"].grad.norm()), rel=1e-4)


def test_curvature_is_the_second_derivative_along_g():
    """gᵀHg against a central second difference of L(θ − η g) in η, in float64."""
    model = tiny_gpt(10, n_layer=2).double()
    window = take_window(IDS, 0, 8)
    m = microscope(model, window, 6, ())
    _, _, named = direct(model, window.x, window.y, 6)
    grads = {n: p.grad for n, p in named.items()}

    def loss_at(eta: float) -> float:
        twin = copy.deepcopy(model)
        with torch.no_grad():
            for n, p in twin.named_parameters():
                p -= eta * grads[n]
            return F.cross_entropy(twin(torch.tensor([window.x]))[0, 6:7],
                                   torch.tensor([window.y[6]])).item()

    h = 1e-4 / math.sqrt(m.grad_sq)
    second = (loss_at(h) - 2 * loss_at(0.0) + loss_at(-h)) / h**2
    assert m.curvature == pytest.approx(second, rel=1e-3)


@pytest.mark.parametrize("name", MODELS)
def test_a_small_step_raises_p_y_as_first_order_predicts(bundled, name):
    model, window = bundled[name]
    t = len(window.x) - 1
    m = microscope(model, window, t, ETAS)
    small = m.step(1e-5)
    predicted = -1e-5 * m.grad_sq
    assert small.p_target > m.p_target and small.loss < m.loss
    assert (small.loss - m.loss) == pytest.approx(predicted, rel=0.05)
    # the same step by hand, from torch's own gradient
    _, _, named = direct(model, window.x, window.y, t)
    twin = copy.deepcopy(model)
    with torch.no_grad():
        for n, p in twin.named_parameters():
            p -= 1e-4 * named[n].grad
        after = F.cross_entropy(twin(torch.tensor([window.x]))[0, t:t + 1],
                                torch.tensor([window.y[t]])).item()
    assert m.step(1e-4).loss == pytest.approx(after, abs=1e-4)
    assert math.isnan(m.step(1e20).loss)  # an absurd η overflows float32


def test_a_small_real_change_is_computed_in_float64():
    """Issue 39: a ΔL under PRECISE × max(L, 1) is L(θ − ηg) − L(θ) with θ − ηg formed and
    run in float64 (float32's rounding of L would read as the first-order prediction's
    error); a larger one is the float32 difference of the losses the page shows."""
    from gptviz.analysis.learning import PRECISE

    model = tiny_gpt(20, context_length=16, n_layer=2)
    window = take_window(IDS, 0, 16)
    t = 9
    loss, _, named = direct(model, window.x, window.y, t)
    etas = (1e-7, 1e-5, 1.0)
    m = microscope(model, window, t, etas)
    m64 = copy.deepcopy(model).double()
    before = F.cross_entropy(m64(torch.tensor([window.x]))[0, t:t + 1], torch.tensor(
        [window.y[t]])).item()
    for eta in etas:
        s = m.step(eta)
        assert s.precise == (abs(s.loss - m.loss) < PRECISE * max(m.loss, 1.0))
        if not s.precise:
            assert s.change == s.loss - m.loss
            continue
        stepped = copy.deepcopy(m64)
        with torch.no_grad():
            for n, p in stepped.named_parameters():
                p -= eta * named[n].grad.double()
        after = F.cross_entropy(stepped(torch.tensor([window.x]))[0, t:t + 1], torch.tensor(
            [window.y[t]])).item()
        assert s.change == pytest.approx(after - before, rel=1e-6)
        predicted = -eta * m.grad_sq
        assert abs(s.change - predicted) <= 1e-3 * abs(predicted)  # first order, this close
    assert [m.step(e).precise for e in etas] == [True, True, False]


@pytest.mark.parametrize("name", MODELS)
def test_finite_differences_agree_with_autograd_on_every_bundled_model(bundled, name):
    model, window = bundled[name]
    t = len(window.x) - 1
    labels = default_check_groups(parameter_groups(model))
    assert {"E", "L0 W_Q", "LN_f"} <= set(labels)
    rows = gradient_check(model, window, t, labels, eps=1e-6)
    assert [r.group for r in rows] == labels
    assert max(r.rel_error for r in rows) < 1e-5, rows
    assert all(abs(r.autograd) > 1e-6 for r in rows)  # the largest entries: not trivial zeros
    # one row again by hand, in float64, on the full window
    row = next(r for r in rows if r.group == "L0 W_Q")
    twin = copy.deepcopy(model).double()
    p = dict(twin.named_parameters())[row.parameter]
    losses = []
    for sign in (1, -1):
        with torch.no_grad():
            p[row.index] += sign * 1e-6
            losses.append(F.cross_entropy(twin(torch.tensor([window.x]))[0, t:t + 1],
                                          torch.tensor([window.y[t]])).item())
            p[row.index] -= sign * 1e-6
    assert row.numeric == pytest.approx((losses[0] - losses[1]) / 2e-6, rel=1e-4)


def test_a_wrong_gradient_would_be_caught():
    row = CheckRow("E", "embed.weight", (0, 0), autograd=0.5, numeric=0.25)
    assert row.rel_error == pytest.approx(0.5)
    assert CheckRow("E", "embed.weight", (0, 0), 0.0, 0.0).rel_error == 0.0


def test_random_entries_and_every_group_pass_on_a_tiny_model():
    model = tiny_gpt(10, n_layer=2, bias=False, tie_embeddings=False)
    window = take_window(IDS, 0, 8)
    labels = [g.label for g in parameter_groups(model)]
    rows = gradient_check(model, window, 4, labels, eps=1e-6, pick="random", seed=3)
    assert max(r.rel_error for r in rows) < 1e-5
    assert {r.parameter for r in rows} >= {"unembed.weight", "blocks.1.attn.W_QKV.weight"}


@pytest.mark.parametrize("config", [{}, {"tie_embeddings": False, "bias": False}])
def test_the_check_without_e_runs_e_and_w_u_in_blocks_and_matches_float64_autograd(
        config, monkeypatch):
    """E and W_U unchecked are looked up and applied a few rows at a time in float64 (never
    copied whole): autograd's values equal a float64 copy of the model's, to rounding."""
    from gptviz.analysis import gradient_check as check_module

    monkeypatch.setattr(check_module, "ROWS", 3)  # 10 tokens: blocks of 3, 3, 3, 1
    model = tiny_gpt(10, n_layer=2, **config)
    window, t = take_window(IDS, 0, 8), 5
    labels = ["L0 W_Q", "L1 W₂", "LN_f"]
    rows = gradient_check(model, window, t, labels, eps=1e-6)
    wide = copy.deepcopy(model).double()
    with hooks(wide, []):
        z = wide(torch.tensor([window.x[:t + 1]]))[0, -1]
    named = dict(wide.named_parameters())
    grads = torch.autograd.grad(F.cross_entropy(z, torch.tensor(window.y[t])),
                                [named[r.parameter] for r in rows])
    for r, g in zip(rows, grads, strict=True):
        assert r.autograd == pytest.approx(float(g[r.index]), rel=1e-10, abs=1e-14)
        assert r.rel_error < 1e-5


def test_the_model_never_changes(bundled):
    model, window = bundled[MODELS[0]]
    before = {k: v.clone() for k, v in model.state_dict().items()}
    microscope(model, window, 3, (1e-3, 1e20))
    gradient_check(model, window, 3, ["E", "L0 W_Q"])
    after = model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)
    assert not model.training and not any(p.requires_grad for p in model.parameters())
    assert all(p.grad is None for p in model.parameters())


def test_bad_windows_and_positions_say_what_to_do():
    with pytest.raises(LearningError, match=r"needs N \+ 1 = 9 .*at least 9 tokens \(4 more\)"):
        take_window([1, 2, 3, 4, 5], 0, 8)
    with pytest.raises(LearningError, match="window start 13 is out of range.* 0 to 11"):
        take_window(IDS, 13, 8)
    window = take_window(IDS, 0, 8)
    for bad in (8, -1):
        with pytest.raises(LearningError, match=f"position {bad} is out of range.*0 to 7"):
            check_position(bad, window)
    with pytest.raises(LearningError, match="no parameter group named 'W_Z'"):
        gradient_check(tiny_gpt(10), window, 3, ["W_Z"])
    with pytest.raises(LearningError, match="ε must be > 0"):
        gradient_check(tiny_gpt(10), window, 3, ["E"], eps=0.0)


def test_window_losses_and_the_typical_position():
    model = tiny_gpt(10, n_layer=2)
    window = take_window(IDS, 1, 8)
    with torch.no_grad():
        losses = F.cross_entropy(model(torch.tensor([window.x]))[0].double(),
                                 torch.tensor(window.y), reduction="none")
    torch.testing.assert_close(torch.from_numpy(window_losses(model, window)), losses,
                               atol=1e-5, rtol=0)
    t = median_position(losses.numpy())
    assert int((losses < losses[t]).sum()) == 3  # the lower median of 8: 3 below it


def test_the_twin_shares_the_model_s_storage_and_swaps_tensors_in_only_while_it_runs():
    model = tiny_gpt(10, n_layer=2)
    twin = private_twin(model)
    assert [p.data_ptr() for p in twin.parameters()] == [p.data_ptr() for p in
                                                         model.parameters()]  # no copy
    assert twin.unembed.weight is twin.embed.weight and twin is not model
    ids = torch.tensor([IDS[:8]])
    with torch.no_grad(), swapped(twin, lambda ps: [torch.zeros_like(p) for p in ps]):
        inside = twin(ids)  # every parameter 0: LN_f's λ = 0 makes every logit 0
    assert not inside.any()
    with torch.no_grad():
        torch.testing.assert_close(twin(ids), model(ids), atol=0, rtol=0)
    assert all(isinstance(p, torch.nn.Parameter) for p in twin.parameters())


def test_the_check_takes_a_few_groups_and_refuses_one_too_big_to_copy(monkeypatch):
    model = tiny_gpt(10, n_layer=2)
    groups = parameter_groups(model)
    assert default_check_groups(groups, few=True) == ["E", "L0 W_Q", "L1 W₂", "LN_f"]
    monkeypatch.setattr(gc, "CHECK_ENTRIES", 100)
    assert gc.copied_entries(model, groups[0]) == 160  # E: 10 × 16
    window = take_window(IDS, 0, 8)
    with pytest.raises(LearningError, match="E has 160 entries to copy to float64, more than "
                                            "the 100 a check may take"):
        gradient_check(model, window, 3, ["LN_f", "E"])
    assert max(r.rel_error for r in gradient_check(model, window, 3, ["LN_f"])) < 1e-5


@pytest.mark.parametrize("config", [{}, {"tie_embeddings": False, "bias": False},
                                    {"positional": "rope"},
                                    {"positional": "none", "tie_embeddings": False},
                                    {"positional": "sinusoidal"}])
def test_g_h_g_equals_the_hessian_vector_product_and_never_imports_dynamo(config):
    """gᵀHg found along η with the kept gradients (no weight matrix formed) equals
    gᵀ(H g), H g back-propagated twice through the model with the dense gradient, in
    float64; in a fresh process it never imports torch._dynamo (a nested ``jvp`` did,
    ~70 MB for the server's lifetime)."""
    model = tiny_gpt(10, n_layer=2, **config).double()
    window, t = take_window(IDS, 0, 8), 6
    got = microscope(model, window, t, ()).curvature
    _, _, named = direct(model, window.x, window.y, t)
    g = [p.grad for p in named.values()]
    twin = private_twin(model)
    ps = list(twin.parameters())
    with hooks(twin, []):  # the explicit path: the fused attention has no second derivative
        z = twin(torch.tensor([window.x[:t + 1]]))[0, -1]
    first = torch.autograd.grad(F.cross_entropy(z, torch.tensor(window.y[t])), ps,
                                create_graph=True)
    hg = torch.autograd.grad(sum((d * gi).sum() for d, gi in zip(first, g, strict=True)), ps)
    want = sum(float((h * gi).sum()) for h, gi in zip(hg, g, strict=True))
    assert got == pytest.approx(want, rel=1e-9)
    if config:
        return
    code = ("import sys; from gptviz.checkpoints.folder import DEFAULT_MODEL, bundled_models, "
            "load_checkpoint; from gptviz.analysis.learning import microscope, take_window; "
            "c = load_checkpoint(bundled_models()[DEFAULT_MODEL]); "
            "microscope(c.model, take_window(list(range(100)), 0, 16), 5, (1e-3,)); "
            "print('torch._dynamo' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=Path(__file__).resolve().parents[1])
    assert out.stdout.strip() == "False"


def test_a_one_token_text_is_counted_in_the_singular():
    """A review read "the text has 1 tokens"."""
    with pytest.raises(LearningError, match=r"the text has 1 token, but"):
        take_window([7], 0, 4)
