"""Notation a review of every formula found inconsistent or wrong, checked where it is built."""

from __future__ import annotations

import math

from gptviz.app.block.formulas import block_equations
from gptviz.app.generation.formulas import greedy_vs_beam
from gptviz.app.lesson.formulas import draw_formula
from gptviz.app.positional.formulas import rope_pair
from gptviz.model.config import GPTConfig, parameter_counts


def test_heads_count_from_0_on_the_block_page_too():
    tex = block_equations(23, 128, 512, 4, "gelu", True)
    assert r"\mathrm{head}_0" in tex and r"\mathrm{head}_{3}" in tex
    assert r"\mathrm{head}_1 \cdots" not in tex and r"\mathrm{head}_{4}" not in tex


def test_layernorm_parameters_are_named_as_the_formulas_name_them():
    labels = list(parameter_counts(GPTConfig(vocab_size=10, d_model=8, n_head=2)))
    assert any("(λ, b)" in k for k in labels) and not any("γ" in k or "β" in k for k in labels)
    labels = list(parameter_counts(GPTConfig(vocab_size=10, d_model=8, n_head=2, bias=False)))
    assert any(k.endswith("(λ)") for k in labels)


def test_the_beam_inequality_compares_texts_not_a_product_of_tokens():
    tex = greedy_vs_beam(-2.0, -1.0, 3)
    assert r"\prod_{t=1}^{n} \arg\max" not in tex  # a product of argmaxes multiplies tokens
    assert r"y^{\text{greedy}}_t = \arg\max_{v \in V} p(v \mid y^{\text{greedy}}_{<t}, x)" in tex


def test_greedy_draw_names_what_has_probability_100_percent():
    assert r"P_0(t_{N+1}) = 100.0\%" in draw_formula(0.0, "a", 3, 1.0, 0)


def test_a_negative_cosine_is_set_in_parentheses_like_the_other_factors():
    p = 2  # cos 2 < 0
    assert math.cos(p) < 0
    tex = rope_pair("a", p, [0.5, 0.25], [0.1, 0.2])
    assert r"\cdot (-0.416)" in tex and r"\cdot -0.416" not in tex


def test_a_cropped_prompt_keeps_the_texts_token_numbers_from_step_to_step():
    """Step 1 numbers every token of the text; a review found step 2 calling the first kept
    token t_1 again (id 61 where step 1's t_1 was id 49)."""
    from gptviz.app.lesson.formulas import ids_formula
    from gptviz.app.tokenizers.formulas import one_hot_formula
    from gptviz.tokenizers.base import TokenInfo

    assert ids_formula([7, 8, 9], 10, dropped=66).startswith(r"(t_{67},\dots,t_{69})")
    tokens = [TokenInfo(7, "a", b"a", (0, 1)), TokenInfo(8, "b", b"b", (1, 2))]
    tex = one_hot_formula(tokens, 10, dropped=66)
    assert r"\mathrm{OH}(t_{67}) = e_{7}" in tex and r"\mathrm{OH}(t_{1})" not in tex


def test_a_negative_attribution_is_subtracted_not_added():
    """"0.1328 + −0.0277" in the direct logit attribution (a review): "0.1328 − 0.0277"."""
    from gptviz.app.block.formulas import dla_formula

    tex = dla_formula(3, "a", [("token", 0.1328), ("position", -0.0277), ("h", 0.5)], 0.1,
                      0.6051, 0.6051, 1, True, True)
    line = tex.split(r"\\")[2]
    assert r"\underset{\text{position}}{0.0277}" in line or "{0.0277}" in line
    assert "{-0.0277}" not in line and "- \\underset" in line
