"""Issue 12 on the Block, Positional, Generation, Embeddings and Tokenizers pages: every
formula and sentence says what the tensors drawn are, checked against a direct torch
computation (never against the helper that drew them).

- Block: one letter per quantity (A = LN₂(Y)W₁ + b₁ enters the activation, H leaves it),
  the attention output Z W_O + b_O, and no ``+ b`` in a model without biases.
- Positional: PE_i · PE_j = Σ_k cos(ω_k (i − j)) exactly; without positions, shuffling the
  prefix moves the last logits under the causal mask and not without it.
- Generation: top-k / top-p renormalise over the kept set S by its mass.
- The 0-based note, once on each page that shows positions or ids.
"""

from __future__ import annotations

import copy
import math
import re

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from gptviz.analysis import positions
from gptviz.app.block.formulas import block_equations
from gptviz.app.shared.inputs import example_prompt
from gptviz.app.shared.notes import INDEX_NOTE
from gptviz.checkpoints.folder import bundled_models, checkpoint_to_zip, load_checkpoint
from gptviz.model import attention
from gptviz.model.layers import gelu
from tests.helpers import (
    MODELS,
    app_test,
    checkpoint_uploader,
    downloads,
    figures,
    metric,
    rerun,
    run_page,
    tables,
    texts,
    tiny_gpt,
    z_of,
)

needs_models = pytest.mark.skipif(not MODELS, reason="no bundled models in assets/models")


def page_model(at):
    """The checkpoint the page shows, and the ids of its example prompt as the model reads
    them (cropped to the context window)."""
    ckpt = load_checkpoint(bundled_models()[at.pills(key="model").value])
    ids = ckpt.tokenizer.encode(example_prompt(ckpt))[-ckpt.config.context_length:]
    return ckpt, ids


def without_positions(model):
    """A copy of ``model`` whose positional table is zero (learned rows or sinusoids)."""
    m = copy.deepcopy(model).eval()
    with torch.no_grad():
        for name, t in [*m.pos.named_parameters(), *m.pos.named_buffers()]:
            if name != "anchor":
                t.zero_()
    return m


def unmasked(monkeypatch):
    """Lift the causal mask of the explicit attention path (run_with_cache takes it)."""
    monkeypatch.setattr(attention, "causal_mask", lambda tq, tk, device=None: torch.zeros(
        tq, tk, dtype=torch.bool, device=device))


# ---- the block ------------------------------------------------------------------------------

@pytest.mark.parametrize("bias, act", [(True, "gelu"), (False, "relu")])
def test_block_stages_are_what_their_names_say(bias, act):
    """A = LN₂(Y) W₁ (+ b₁), H = act(A), Z W_O (+ b_O), H W₂ (+ b₂), from the weights."""
    from gptviz.analysis.stages import block_stages

    model = tiny_gpt(12, n_layer=2, bias=bias, activation=act)
    _, cache = model.run_with_cache([3, 1, 4, 1, 5, 9])
    stages = {s.name: torch.from_numpy(np.asarray(s.values))
              for s in block_stages(cache, 1, 0, act, bias)}
    b = lambda s: s if bias else ""  # noqa: E731
    blk = model.blocks[1]
    y = cache["blocks.1.hook_resid_mid"][0]  # (T, d)
    ln2 = F.layer_norm(y, y.shape[-1:], blk.ln2.lam, blk.ln2.b, blk.ln2.eps)
    a = ln2 @ blk.mlp.W_1.weight.T + (blk.mlp.W_1.bias if bias else 0)  # (T, d_ff)
    h = gelu(a) if act == "gelu" else a.clamp_min(0)
    z = cache["blocks.1.attn.hook_z"][0].transpose(0, 1).reshape(y.shape)  # (T, d)
    out = z @ blk.attn.W_O.weight.T + (blk.attn.W_O.bias if bias else 0)
    ffn = h @ blk.mlp.W_2.weight.T + (blk.mlp.W_2.bias if bias else 0)
    act_name = {"gelu": "GELU", "relu": "ReLU"}[act]
    expected = {f"A = LN₂(Y) W₁{b(' + b₁')}": a, f"H = {act_name}(A)": h,
                f"attention out Z W_O{b(' + b_O')}": out, f"FFN(Y) = H W₂{b(' + b₂')}": ffn}
    for name, value in expected.items():
        torch.testing.assert_close(stages[name], value.detach(), atol=1e-5, rtol=1e-5)
    assert (f"Y = X + Z W_O{b(' + b_O')}" in stages) and sum("+ b" in n for n in stages) == (
        4 if bias else 0)


def test_block_equations_name_each_quantity_once():
    tex = block_equations(7, 16, 64, 2, "gelu")
    assert r"A &= \mathrm{LN}_2(Y)\, W_1 + b_1" in tex and r"H &= \mathrm{GELU}(A)" in tex
    assert r"Y &= X + Z W_O + b_O" in tex and r"X' &= Y + H W_2 + b_2" in tex
    plain = block_equations(7, 16, 64, 2, "relu", bias=False)
    assert "b_" not in plain and r"H &= \mathrm{ReLU}(A)" in plain and "Z W_O " in plain


@needs_models
def test_block_page_draws_a_and_h_as_named():
    at = run_page("block")
    tex = texts(at, "latex")
    assert r"Y &= X + Z W_O + b_O" in tex and r"H &= \mathrm{GELU}(A)" in tex
    flow = figures(at)[0]
    titles = [a["text"].replace("<br>", " ")  # a title wraps to its panel (labels.py)
              for a in flow["layout"]["annotations"] if "<b>" in a.get("text", "")]
    assert titles[4].startswith("<b>attention out Z W_O + b_O")
    assert titles[8].startswith("<b>A = LN₂(Y) W₁ + b₁") and titles[9].startswith("<b>H = GELU(A)")
    assert list(tables(at)[0].value["stage"])[8] == "A = LN₂(Y) W₁ + b₁"
    ckpt, ids = page_model(at)
    blk, model = ckpt.model.blocks[0], ckpt.model
    with torch.no_grad():  # block 0 by hand: X = E[ids] + P, Y = X + attn(LN₁(X))
        x = model.embed.weight[ids] + model.pos.table()[: len(ids)]
        y = x + blk.attn(blk.ln1(x[None]))[0]
        a = blk.ln2(y[None])[0] @ blk.mlp.W_1.weight.T + blk.mlp.W_1.bias  # (T, d_ff)
    np.testing.assert_allclose(z_of(flow["data"][8]).reshape(a.shape), a.numpy(), atol=1e-4)
    at.session_state["view"] = "GELU vs ReLU"
    rerun(at)
    share = float(metric(at, "share with A < 0").split()[0])
    assert share == pytest.approx(100 * float((a < 0).float().mean()), abs=0.051)
    assert r"A = \mathrm{LN}_2(Y)\,W_1 + b_1" in texts(at, "latex")


@needs_models
def test_a_model_without_biases_shows_no_plus_b():
    tok = load_checkpoint(bundled_models()[MODELS[0]]).tokenizer
    mine = tiny_gpt(tok.vocab_size, context_length=16, bias=False, activation="relu")
    at = app_test()
    at.switch_page("app_pages/block.py")
    rerun(at)
    checkpoint_uploader(at).set_value(
        ("plain.zip", checkpoint_to_zip(mine, tok, {"corpus": "x"}), "application/zip"))
    rerun(at)
    assert at.pills(key="model").value == "plain"
    tex = texts(at, "latex")
    assert r"H &= \mathrm{ReLU}(A)" in tex and "b_O" not in tex and "b_1" not in tex
    titles = [a.get("text", "") for a in figures(at)[0]["layout"]["annotations"]]
    assert not any("+ b" in t for t in titles) and any("H = ReLU(A)" in t for t in titles)
    at.session_state["view"] = "LayerNorm"
    rerun(at)
    assert r"\hat x + b" not in texts(at, "latex") and r"\hat x =" in texts(at, "latex")


# ---- positions: the sinusoidal similarity -----------------------------------------------

@pytest.mark.parametrize("n, d", [(64, 128), (128, 32)])
def test_sinusoidal_similarity_depends_only_on_the_offset(n, d):
    check = positions.sinusoidal_shift_check(n, d)
    assert check.max_deviation < 1e-12 and check.diagonal_spread < 1e-12
    from gptviz.model.layers import sinusoidal_table

    pe = sinusoidal_table(n, d).double()  # the float32 table the model adds
    for i, j in [(5, 41), (41, 5), (0, n - 1), (7, 7)]:
        by_hand = sum(math.cos((i - j) / 10000 ** (2 * k / d)) for k in range(d // 2))
        assert check.formula(i, j) == pytest.approx(by_hand, abs=1e-12)
        assert check.similarity(i, j) == pytest.approx(float(pe[i] @ pe[j]), abs=1e-4)
    assert check.by_offset.shape == (n,)  # one figure per offset: memory N, not N × N


def test_an_odd_width_breaks_the_identity_and_the_check_sees_it():
    """The lone sine column of an odd d adds sin(ω i) sin(ω j): not a function of i − j.
    The check's figures, taken one offset at a time, are those of the whole matrix."""
    from gptviz.model.layers import sinusoidal_table

    n, d = 64, 3
    check = positions.sinusoidal_shift_check(n, d)
    assert check.diagonal_spread > 1e-3
    pe = sinusoidal_table(n, d, torch.float64)
    s = (pe @ pe.T).numpy()  # (N, N)
    offsets = np.abs(np.subtract.outer(np.arange(n), np.arange(n)))
    assert check.max_deviation == pytest.approx(np.abs(s - check.by_offset[offsets]).max())
    spread = max(np.ptp(np.diagonal(s, k)) for k in range(1 - n, n))
    assert check.diagonal_spread == pytest.approx(spread)


@needs_models
def test_positional_page_shows_the_identity_with_numbers():
    at = run_page("positional")
    intro = " ".join(m.value for m in at.markdown)
    assert "treats its input as a set" not in intro and "permutation-equivariant" in intro
    assert "causal mask already carries some order" in intro
    at.number_input(key="pe_i").set_value(6)
    at.number_input(key="pe_j").set_value(19)
    rerun(at)
    d = load_checkpoint(bundled_models()[at.pills(key="model").value]).config.d_model
    i = torch.tensor([6.0, 19.0], dtype=torch.float64)[:, None]
    w = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    pe = torch.cat([torch.sin(i * w), torch.cos(i * w)], 1)  # columns reordered: same dot
    lhs = float(pe[0] @ pe[1])
    rhs = float(torch.cos(-13 * w).sum())
    tex = texts(at, "latex")
    assert rf"PE_{{6}} \cdot PE_{{19}} &= {lhs:.6f}" in tex and f"= {rhs:.6f}" in tex
    assert r"\cos\big(\omega_k \cdot (-13)\big)" in tex
    dev = re.search(r"\\Big\| &= ([0-9.]+) \\times 10\^\{(-\d+)\}", tex)
    assert dev and float(dev.group(1)) * 10 ** int(dev.group(2)) < 1e-12
    captions = " ".join(c.value for c in at.caption)
    assert "mostly" not in captions and "exactly" in captions


# ---- positions: order without positions -------------------------------------------------

@pytest.mark.parametrize("n_layer", [1, 2])
def test_order_check_against_a_direct_computation(monkeypatch, n_layer):
    model = tiny_gpt(12, n_layer=n_layer, seed=3)
    ids = [3, 1, 4, 1, 5, 9, 2, 6]
    check = positions.order_check(model, ids, seed=7)
    shuffled = [ids[k] for k in check.order]
    assert check.moved and shuffled[-1] == ids[-1] and sorted(shuffled) == sorted(ids)
    zeroed = without_positions(model)
    with torch.no_grad():
        causal = float((zeroed(shuffled)[0, -1] - zeroed(ids)[0, -1]).abs().max())
        trained = float((model(shuffled)[0, -1] - model(ids)[0, -1]).abs().max())
    assert check.causal == pytest.approx(causal, abs=1e-5)
    assert check.trained == pytest.approx(trained, abs=1e-5) and trained > 1e-4
    if n_layer == 1:  # the last token reads only embeddings, which know no order
        assert check.causal < 1e-6
    else:  # an untrained model (weights ~0.02) moves little, but far beyond rounding
        assert check.causal > 1e-4
    unmasked(monkeypatch)
    before, after = zeroed.run_with_cache(ids)[0][0], zeroed.run_with_cache(shuffled)[0][0]
    assert check.unmasked == pytest.approx(float((after[-1] - before[-1]).abs().max()),
                                           abs=1e-5)
    assert check.unmasked < 1e-4
    # equivariance: every output moves with its token
    np.testing.assert_allclose(after.numpy(), before[check.order].numpy(), atol=1e-4)


@needs_models
def test_order_view_numbers_are_the_models(monkeypatch):
    at = run_page("positional", view="Order without positions")
    ckpt, ids = page_model(at)
    seed = at.number_input(key="order_seed").value
    order = positions.prefix_order(len(ids), seed)
    shuffled = [ids[k] for k in order]
    zeroed = without_positions(ckpt.model)
    with torch.no_grad():
        causal = float((zeroed(shuffled)[0, -1] - zeroed(ids)[0, -1]).abs().max())
        trained = float((ckpt.model(shuffled)[0, -1] - ckpt.model(ids)[0, -1]).abs().max())
    assert float(metric(at, "Δ with the causal mask")) == pytest.approx(causal, abs=2e-3)
    assert float(metric(at, "Δ with positions and mask")) == pytest.approx(trained, abs=2e-3)
    assert causal > 0.1 and float(metric(at, "Δ without the mask")) < 1e-4
    before = texts(at, "latex")
    at.button(key="order_reshuffle").click()
    rerun(at)
    assert at.number_input(key="order_seed").value == seed + 1 and texts(at, "latex") != before
    assert downloads(at)


@needs_models
def test_order_view_needs_three_tokens():
    at = run_page("positional", view="Order without positions", prompt="ab")
    ckpt, _ = page_model(at)
    if len(ckpt.tokenizer.encode("ab")) >= 3:
        pytest.skip("this tokenizer makes 'ab' three tokens")
    assert "needs at least two tokens before the last" in texts(at, "info")
    assert not at.metric


# ---- generation: top-k / top-p renormalise over S ---------------------------------------

@needs_models
def test_top_k_formula_renormalises_by_the_mass_of_s():
    at = run_page("generation")
    at.number_input(key="top_k").set_value(5)
    rerun(at)
    ckpt = load_checkpoint(bundled_models()[at.pills(key="model").value])
    ids = at.session_state["gen_history"].ids[-ckpt.config.context_length:]
    with torch.no_grad():
        y = ckpt.model(ids)[0, -1].double()  # y_N, T = 1
    p = torch.softmax(y, 0)
    top = p.sort(descending=True).values[:5]
    tex = texts(at, "latex")
    assert r"P'(i) &= \begin{cases}" in tex and r"|S| = 5" in tex
    mass = float(re.search(r"\\sum_\{j\\in S\} P_\{1\.00\}\(j\) = ([0-9.]+)", tex).group(1))
    assert mass == pytest.approx(float(top.sum()), abs=2e-4)
    shown = [float(v) for v in re.findall(r"\d+\.\d{4}", tex)]
    for v in (float(top[0]), float(top[0] / top.sum())):  # P_T(best) and P'(best)
        assert any(abs(x - v) < 2e-4 for x in shown), (v, shown)
    assert r"\sum_{j\in V} e^{y_{N,j}/T}" in tex  # σ is over V, S only in P'
    assert "H(P')" in tex


# ---- the 0-based note ---------------------------------------------------------------------

@needs_models
@pytest.mark.parametrize("page", ["tokenizers", "embeddings", "positional", "block",
                                  "generation"])
def test_the_index_note_is_on_the_page_once(page):
    at = run_page(page)
    assert [c.value for c in at.caption].count(INDEX_NOTE) == 1
