"""The model pages' formulas (``formulas.py`` of Attention, Transformer block, Embeddings and
Positional encoding) with their live numbers, and beside them the block flow, the cropped
prompt chips, and the activation names the pages ask for."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest

from gptviz.analysis.stages import block_stages
from gptviz.app.attention import formulas as mp
from gptviz.app.attention.view import grid_cell_px
from gptviz.app.block import formulas as mb
from gptviz.app.block.figures import block_flow, stage_table
from gptviz.app.embeddings import formulas as emb_tex
from gptviz.app.positional import formulas as pos_tex
from gptviz.app.positional.view import default_dims
from gptviz.app.shared import tex as tx
from gptviz.app.shared.chips import prompt_chips_html
from gptviz.model.names import act_name, attention_page_names, block_page_names
from gptviz.tokenizers import CharTokenizer
from tests.helpers import tiny_run

IDS = [3, 1, 4, 1, 5, 9, 2, 6]


@pytest.fixture(scope="module")
def run():
    model, _, cache = tiny_run(IDS)
    return model, cache


def _numbers(tex: str) -> list[float]:
    return [float(x) for x in re.findall(r"-?\d+\.\d+", tex)]


# ---- the block as a flow ------------------------------------------------------------------

@pytest.mark.parametrize("layer", [0, 1])
def test_block_stages_are_the_forward_pass(run, layer):
    _, cache = run
    stages = {s.name: s.values for s in block_stages(cache, layer, head=2)}
    assert len(stages) == 12  # two halves of six
    np.testing.assert_allclose(stages["Y = X + Z W_O + b_O"],
                               stages["X"] + cache[act_name("attn_out", layer)][0].numpy(),
                               atol=1e-5)
    np.testing.assert_allclose(stages["X' = Y + FFN(Y)"],
                               stages["Y"] + stages["FFN(Y) = H W₂ + b₂"], atol=1e-5)
    pattern = stages["W_attn (head 2)"]  # (T, T)
    np.testing.assert_allclose(pattern.sum(axis=1), 1.0, atol=1e-6)
    assert np.triu(pattern, 1).max() == 0.0
    z = stages["Z, heads side by side"]  # (T, d): head h in columns h*d_k .. (h+1)*d_k
    np.testing.assert_array_equal(z[:, 16:24], cache[act_name("z", layer)][0, 2].numpy())
    if layer == 0:
        x = cache[act_name("embed")][0] + cache[act_name("pos_embed")]
        np.testing.assert_allclose(stages["X"], x.numpy(), atol=1e-6)


def test_block_flow_draws_every_stage_with_its_shape(run):
    _, cache = run
    stages = block_stages(cache, 1)
    fig = block_flow(stages, [str(i) for i in IDS])
    assert len(fig.data) == 12
    for trace, stage in zip(fig.data, stages, strict=True):
        np.testing.assert_array_equal(trace.z, stage.values)
    titles = [a.text for a in fig.layout.annotations if "<b>" in (a.text or "")]
    assert "8×128" in titles[8]  # A = LN₂(Y) W₁ + b₁ is N × d_ff
    assert [a.text for a in fig.layout.annotations].count("⊕") == 2
    json.loads(fig.to_json())  # strict JSON, no NaN or Infinity
    row = stage_table(stages)[2]
    assert row["min"] >= 0.0 and row["max"] <= 1.0  # the pattern stage


# ---- math panels ----------------------------------------------------------------------------

def test_attention_row_shows_the_softmax_of_the_masked_scores(run):
    _, cache = run
    scores = cache[act_name("scores", 0)][0, 1].numpy()  # (T, T)
    pattern = cache[act_name("pattern", 0)][0, 1].numpy()
    i = 3
    tex = mp.attention_row("x", i, [str(t) for t in IDS], scores[i], pattern[i], 8)
    lines = tex.split(r"\\")
    expected = np.exp(scores[i, : i + 1]) / np.exp(scores[i, : i + 1]).sum()
    shown = _numbers(lines[4].split("&=")[1].split(r"\quad")[0])
    np.testing.assert_allclose(shown[: i + 1], expected, atol=6e-4)
    assert r"-\infty" in lines[2] and r"-\infty" not in lines[1]  # M only after adding it
    assert "= 1.0000" in lines[4]


def test_long_rows_are_elided_but_keep_the_query_and_one_masked_key():
    s, w = np.zeros(40), np.full(40, 1 / 21)
    tex = mp.attention_row("q", 20, [f"t{j}" for j in range(40)], s, w, 8, shown=5)
    first = tex.split(r"\\")[1]
    assert first.count(r"\dots") == 2 and "t20" in first and "t21" in first and "t22" not in first


def test_elided_rows_keep_the_largest_weight():
    w = np.zeros(40)
    w[[0, 13, 20]] = [0.1, 0.8, 0.1]
    first = mp.attention_row("q", 20, [f"t{j}" for j in range(40)], np.zeros(40), w, 8,
                             shown=4).split(r"\\")[1]
    assert "{t13}" in first and "{t12}" not in first


def test_z_row_names_the_largest_weights():
    tex = mp.z_row(2, ["a", "b", "c"], [0.2, 0.7, 0.1], top=2)
    assert tex.index("0.700") < tex.index("0.200") and "v_{1}" in tex and "0.100" not in tex


@pytest.mark.parametrize("i, dim, d", [(3, 4, 64), (7, 5, 64), (0, 1, 16), (40, 126, 128)])
def test_sinusoid_point_evaluates_the_formula(i, dim, d):
    angle = i / 10000 ** ((dim - dim % 2) / d)
    value = math.sin(angle) if dim % 2 == 0 else math.cos(angle)
    tex = pos_tex.sinusoid_point(i, dim, d, value)
    assert f"({angle:.4f})" in tex and tex.endswith(f"{value:.4f}")
    assert (r"\sin" in tex) == (dim % 2 == 0)


def test_layernorm_row_variance_is_sigma2_over_sigma2_plus_eps():
    x = np.array([0.01, -0.01, 0.02, -0.02])  # tiny σ²: ε shows
    var = x.var()
    tex = mb.layernorm_row("a", x, x, 1e-5)
    assert f"{var / (var + 1e-5):.6f}" in tex and r"\varepsilon = 10^{-5}" in tex


def test_embedding_lookup_and_x_plus_pe_carry_the_row():
    row = np.array([0.5, -0.25, 0.125, 1.0, 2.0, -3.0])
    tex = emb_tex.embedding_lookup("the", 7, 100, row)
    assert r"(0.500,\ -0.250,\ 0.125,\ 1.000,\ \dots,\ -3.000)" in tex
    assert r"\mathbb{R}^{6}" in tex
    tex = pos_tex.x_plus_pe_formula("a", 2, [1.0, 2.0], [0.5, -0.5], "learned")
    assert r"(1.500,\ 1.500)" in tex


def test_numbers_for_latex():
    assert tx.num(float("-inf")) == r"-\infty" and tx.num(3e-9) == r"3.0 \times 10^{-9}"
    assert tx.num(3e-9, sci=False) == "0.000"
    assert tx.vector(range(3), shown=4, digits=0) == r"(0,\ 1,\ 2)"


# ---- prompt chips and names -----------------------------------------------------------------

def test_cropped_prompt_chips_fade_the_cut_tokens():
    tok = CharTokenizer()
    tok.train("abcdefgh")
    tokens = tok.tokens("abcdefgh")
    html = prompt_chips_html(tokens, "abcdefgh", dropped=3)
    faded, kept = html.split("✂")
    assert faded.count('class="gv-chip"') == 3 and kept.count('class="gv-chip"') == 5
    assert "position 0 · id" in kept and "positions 0 to 4" in kept
    assert prompt_chips_html(tokens, "abcdefgh").count("✂") == 0


def test_pages_ask_only_for_activations_that_exist(run):
    model, _ = run
    names = set(model.hook_names())
    assert set(attention_page_names(2)) <= names and set(block_page_names(2)) <= names


def test_small_layout_helpers():
    assert default_dims(2) == [0, 1] and default_dims(64) == [0, 1, 8, 32, 62]
    assert grid_cell_px(1) == 220 and grid_cell_px(50) == 80
