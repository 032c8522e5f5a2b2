"""Every view that shows queries, keys or scores, on a RoPE model.

A review found four views that took the queries and keys from before RoPE's rotation while
the model's scores are made of the rotated ones: the SDPA check failed falsely, the QK
circuit's identity did not hold (and printed "27.631 ≤ 2.5e-05"), the drawn Q Kᵀ/√d_k was
not the drawn scores, and "positions removed" left the rotation on. Each is checked here
against a direct computation with torch, on the library and on the pages.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from gptviz.analysis import attention as am
from gptviz.analysis import circuits as C
from gptviz.analysis import positions
from gptviz.app.attention import circuit_formulas as cm
from gptviz.app.lesson.formulas import residual_formula
from gptviz.app.positional.formulas import x_plus_pe_formula
from gptviz.app.shared.widgets import box_key
from gptviz.checkpoints.folder import checkpoint_to_zip
from gptviz.model.attention import rope_angles, rotate
from gptviz.model.names import act_name
from gptviz.tokenizers.char import CharTokenizer
from tests.helpers import (
    app_test,
    checkpoint_uploader,
    figures,
    metric,
    rerun,
    texts,
    tiny_gpt,
)

IDS = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8]
TEXT = "the cat sat on a mat"


def rope_model(bias: bool = True):
    """A RoPE GPT; its biases (initialised to 0) made random, so that their terms show."""
    model = tiny_gpt(20, context_length=16, d_model=32, n_layer=2, n_head=4,
                     positional="rope", bias=bias)
    if bias:
        with torch.no_grad():
            for block in model.blocks:
                block.attn.W_QKV.bias.normal_(0, 0.5)
    return model


@pytest.fixture(scope="module")
def run():
    model = rope_model()
    with torch.no_grad():
        _, cache = model.run_with_cache(IDS)
    return model, cache


def test_the_sdpa_check_uses_the_rotated_queries_and_keys(run):
    model, cache = run
    assert max(am.sdpa_max_delta(cache, range(2)).values()) < 1e-5
    q, k, v = (cache[act_name(n, 0)] for n in "qkv")  # unrotated: what the page used
    wrong = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert float((wrong - cache[act_name("z", 0)]).abs().max()) > 1e-3  # so the test can fail


def test_a_heads_drawn_q_and_k_give_its_drawn_scores(run):
    _, cache = run
    for layer in range(2):
        for head in range(4):
            s = am.head_tensors(cache, layer, head)
            np.testing.assert_allclose(s["Q"] @ s["K"].T / math.sqrt(8), s["scores"],
                                       atol=1e-5)
    cos, sin = rope_angles(0, len(IDS), 8)
    q = cache[act_name("q", 1)][0, 2].double()
    np.testing.assert_allclose(am.head_tensors(cache, 1, 2)["Q"], rotate(q, cos, sin).numpy(),
                               atol=1e-6)


@pytest.mark.parametrize("bias", [True, False])
def test_the_score_terms_add_up_to_the_models_scores(bias):
    model = rope_model(bias)
    with torch.no_grad():
        _, cache = model.run_with_cache(IDS)
    for layer in range(2):
        x = cache[act_name("normalized", layer, "ln1")][0]
        for head in range(4):
            w = C.head_weights(model, layer, head)
            terms = C.score_terms(x, w, rope=True)
            scores = cache[act_name("scores", layer)][0, head].double()
            assert float((terms["sum"] - scores).abs().max()) < 1e-5
            assert float((C.direct_scores(x, w, rope=True) - terms["sum"]).abs().max()) < 1e-12
            assert float((C.score_terms(x, w)["sum"] - scores).abs().max()) > 1e-3
            if bias:  # rotated, b_K's term is no longer the same along a row
                assert float(terms["xWb"].std(dim=1).max()) > 1e-6


def test_the_offset_is_all_that_matters_in_a_rope_term():
    """x̂_i W_Q R_{j−i} W_Kᵀ x̂_jᵀ: the same pair of rows at a shifted pair of positions
    gives the same term."""
    model = rope_model(bias=False)
    w = C.head_weights(model, 0, 1)
    x = torch.randn(10, 32, dtype=torch.float64)
    shifted = torch.cat([torch.zeros(3, 32, dtype=torch.float64), x])[:10]  # row p -> p + 3
    a, b = C.score_terms(x, w, rope=True)["xWx"], C.score_terms(shifted, w, rope=True)["xWx"]
    np.testing.assert_allclose(a[:7, :7].numpy(), b[3:, 3:].numpy(), atol=1e-10)


def test_positions_removed_means_no_rotation(run):
    model, _ = run
    check = positions.order_check(model, IDS, seed=1)
    assert check.unmasked < 1e-4  # unmasked attention is blind to order without positions
    assert check.trained > 1e-3


def test_formulas_say_what_a_rope_model_does():
    assert "p_i = p_i" not in x_plus_pe_formula("a", 3, [1.0], [0.0], "rope")
    assert "RoPE" in x_plus_pe_formula("a", 3, [1.0], [0.0], "rope")
    assert "R_{j-i}" in cm.score_identity(True, rope=True)
    assert r" \le " in cm.identity_check(1e-15, 1e-6, 1e-5)
    assert " > " in cm.identity_check(1e-15, 27.6, 1e-5) and r"\le" not in cm.identity_check(
        1e-15, 27.6, 1e-5)
    step10 = residual_formula()  # LN already inside MHA and FFN, never written twice
    assert r"\mathrm{LN}_1(x" not in step10 and r"\mathrm{LN}_2(y" not in step10


def _uploaded(page: str):
    tok = CharTokenizer()
    tok.train(TEXT + " .")
    model = tiny_gpt(tok.vocab_size, context_length=24, d_model=32, n_layer=2, n_head=4,
                     positional="rope")
    at = app_test()
    at.switch_page(page)
    rerun(at)
    checkpoint_uploader(at).set_value(
        ("spun.zip", checkpoint_to_zip(model, tok, {"corpus": "x"}), "application/zip"))
    rerun(at)
    return at, model, tok


def _prompt(at, text: str = TEXT):
    """Type ``text`` into the page's prompt box (whichever page's it is)."""
    box = next(t for t in at.text_area if t.key and t.key.startswith(box_key("prompt")[:-1]))
    box.input(text)
    return rerun(at)


def _view(at, view: str):
    at.session_state["view"] = view
    at.query_params["view"] = view
    return rerun(at)


def test_the_attention_page_on_a_rope_model():
    at, model, tok = _uploaded("app_pages/attention.py")
    _prompt(at)
    _view(at, "Circuits of a head")
    assert not at.exception and not texts(at, "error")
    tex = texts(at, "latex")
    assert "R_{j-i}" in tex and r" \le " in tex
    # the worked pair: its terms' sum is the model's own score
    ids = tok.encode(TEXT)
    with torch.no_grad():
        _, cache = model.run_with_cache(ids)
    pair = next(el.value for el in at.latex if "page's score" in el.value)
    ours, page = (float(re.match(r"\s*(-?[\d.]+)", v).group(1)) for v in
                  [pair.split(r"\Big] = ")[1], pair.rsplit("= ", 1)[1]])
    i, j = len(ids) - 1, 0
    assert page == pytest.approx(float(cache[act_name("scores", 0)][0, 0, i, j]), abs=1e-4)
    assert ours == pytest.approx(page, abs=2e-4)
    _view(at, "Masks and the SDPA check")
    assert not texts(at, "error")
    assert "larger than rounding" not in texts(at)
    assert "+ P$" not in texts(at, "markdown")  # X = E[ids]: a RoPE model adds no P
    _view(at, "Steps of one head")
    titles = [f["layout"]["title"]["text"] for f in figures(at)]
    assert any(t.startswith("Qᵢ = Rᵢ(LN₁(X) W_Q") for t in titles), titles  # what is drawn
    assert "This model uses RoPE" in texts(at, "caption")


def test_order_without_positions_on_a_rope_model():
    at, _, _ = _uploaded("app_pages/positional.py")
    _view(at, "Order without positions")
    _prompt(at)
    assert not at.exception
    assert float(metric(at, "Δ without the mask")) < 1e-4
    assert "R_i = I" in texts(at, "latex") and "float32 rounding" in texts(at, "caption")


def test_the_learning_page_names_no_p_for_a_rope_model():
    """The gradient's caption said "Rows of P after position t get no gradient" on a model
    with no P (RoPE rotates q and k; its chart rightly has no P bar)."""
    at, _, _ = _uploaded("app_pages/learning.py")
    assert not at.exception
    captions = texts(at, "caption")
    assert "‖g‖ =" in captions and "Rows of P" not in captions
