r"""LaTeX for the Transformer block page's math panels, filled in with the live numbers:
the block's equations with their shapes, LayerNorm on one row, GELU and ReLU at one x,
and the logit lens. Number formatting is shared with ``math_panels``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from gptviz.app.shared.tex import num, tex_escape, tex_text, vector
from gptviz.i18n import _, ngettext
from gptviz.model.config import ACTIVATION_FORMULA, ACTIVATION_TEX


def block_equations(n: int, d: int, d_ff: int, n_head: int, activation: str,
                    bias: bool = True) -> str:
    r"""The pre-LN block with the live shapes, one letter per quantity: Z the heads' outputs
    side by side, A what enters the activation, H what leaves it. Without ``bias`` (the
    model's) the ``+ b`` terms go.

    >>> tex = block_equations(64, 128, 512, 4, "gelu")
    >>> "64 \\times 128" in tex and "H &= \\mathrm{GELU}(A)" in tex and "+ b_O" in tex
    True
    >>> "b_" in block_equations(64, 128, 512, 4, "relu", bias=False)
    False
    """
    act = ACTIVATION_TEX[activation]
    b_o, b_1, b_2 = (r" + b_O", r" + b_1", r" + b_2") if bias else ("", "", "")
    sh = rf"\in \mathbb{{R}}^{{{n} \times {d}}}"
    sf = rf"\in \mathbb{{R}}^{{{n} \times {d_ff}}}"
    return (
        r"\begin{aligned}"
        rf"X &{sh} && \text{{"
        + tex_escape(ngettext("the residual stream: {n} token", "the residual stream: {n} tokens",
                              n).format(n=n)) + r"} \\"
        rf"Z &= \big[\,\mathrm{{head}}_0 \cdots \mathrm{{head}}_{{{n_head - 1}}}\,\big]"
        rf"\big(\mathrm{{LN}}_1(X)\big) {sh} && "
        r"\text{" + tex_escape(ngettext("{n} head side by side, ", "{n} heads side by side, ",
                                        n_head).format(n=n_head)) + "} "
        rf"d_k = {d // n_head} \\"
        rf"Y &= X + Z W_O{b_o} {sh} && W_O \in \mathbb{{R}}^{{{d} \times {d}}} \\"
        rf"A &= \mathrm{{LN}}_2(Y)\, W_1{b_1} {sf} && "
        rf"W_1 \in \mathbb{{R}}^{{{d} \times {d_ff}}} \\"
        rf"H &= {act}(A) {sf} && \text{{" + tex_escape(_("entry by entry:")) + "} "
        rf"{act}(x) = "
        rf"{ACTIVATION_FORMULA[activation]} \\"
        rf"X' &= Y + H W_2{b_2} {sh} && W_2 \in \mathbb{{R}}^{{{d_ff} \times {d}}}"
        r"\end{aligned}"
    )


def layernorm_row(token: str, x: Sequence[float], out: Sequence[float], eps: float,
                  bias: bool = True) -> str:
    r"""LayerNorm on one real row: μ, σ², the standardised row's mean and variance, and λ, b.

    The standardised row has variance σ²/(σ²+ε), a hair under 1: ε keeps the
    division safe when a row is constant.

    >>> "0.000" in layernorm_row("a", [1.0, 3.0], [-1.0, 1.0], 1e-5)
    True
    """
    xr = np.asarray(x, np.float64)  # (d,)
    mu, var = xr.mean(), xr.var()
    xhat = (xr - mu) / np.sqrt(var + eps)  # (d,)
    return (
        r"\begin{aligned}"
        rf"x &= {vector(xr)}\ \ ({tex_text(token, 12)}) \\"
        rf"\mu &= \tfrac1d \textstyle\sum_k x_k = {num(mu, 4)},\quad "
        rf"\sigma^2 = \tfrac1d \textstyle\sum_k (x_k - \mu)^2 = {num(var, 4)} \\"
        rf"\hat x &= \frac{{x - \mu}}{{\sqrt{{\sigma^2 + \varepsilon}}}} = {vector(xhat)},\quad "
        rf"\varepsilon = {_eps(eps)} \\"
        rf"\operatorname{{mean}}(\hat x) &= {num(xhat.mean(), 4)},\quad "
        rf"\operatorname{{var}}(\hat x) = \frac{{\sigma^2}}{{\sigma^2 + \varepsilon}} = "
        rf"{xhat.var():.6f} \\"
        rf"\mathrm{{LN}}(x) &= \lambda \odot \hat x{' + b' if bias else ''} = {vector(out)}"
        r"\end{aligned}"
    )


def _eps(eps: float) -> str:
    """ε as a power of ten when it is one.

    >>> _eps(1e-5)
    '10^{-5}'
    """
    power = math.log10(eps)
    return f"10^{{{round(power)}}}" if abs(power - round(power)) < 1e-9 else num(eps, 6)


def activation_point(x: float, gelu: float, gelu_tanh: float, relu: float) -> str:
    r"""GELU, its tanh approximation and ReLU at one x.

    >>> "\\Phi(1.000)" in activation_point(1.0, 0.8413, 0.8412, 1.0)
    True
    """
    return (  # one line each: the three side by side overflowed a 1400-px page
        rf"\begin{{aligned}}\mathrm{{GELU}}({num(x)}) &= {num(x)}\,\Phi({num(x)}) = "
        rf"{num(gelu, 4)}\\"
        rf"0.5x\big(1 + \tanh\big(\sqrt{{2/\pi}}(x + 0.044715x^3)\big)\big) &= "
        rf"{num(gelu_tanh, 4)}\\"
        rf"\mathrm{{ReLU}}({num(x)}) &= \max({num(x)}, 0) = {num(relu, 4)}\end{{aligned}}"
    )


def logit_lens_formula(position: int, token: str, rows: Sequence[tuple[str, str, float]]) -> str:
    r"""``softmax(LN_final(x^{(ℓ)}) W_U)`` and the top guess after each block.

    >>> "0.900" in logit_lens_formula(3, "a", [("after block 0", "b", 0.9)])
    True
    """
    lines = [rf"\text{{{tex_escape(label)}}} &\quad {tex_text(guess, 12)}\ \ (p = {num(p)})"
             for label, guess, p in rows]
    return (
        r"\begin{aligned}"
        rf"&P^{{(\ell)}}_{{{position}}} = \mathrm{{softmax}}\big(\mathrm{{LN}}_{{\text{{final}}}}"
        rf"(x^{{(\ell)}}_{{{position}}})\, W_U\big),\ "
        + r"\text{" + r"}{tex}\text{".join(  # the token set as maths, where the words put it
            tex_escape(p) for p in _("top guess after {token}:").split("{token}", 1)).replace(
                "{tex}", tex_text(token, 12)) + r"} \\ " + r" \\ ".join(lines)
        + r"\end{aligned}"
    )


def dla_formula(position: int, token: str, terms: Sequence[tuple[str, float]], sigma: float,
                total: float, real: float, n_layer: int, positions: bool, bias: bool) -> str:
    r"""Direct logit attribution: the residual stream as a sum of parts, the frozen-σ split
    of the logit, and the live sums of each kind of part (``terms``: (label, value)).

    Without ``positions`` there is no p_i; without ``bias`` no b_O and no b_f.

    >>> tex = dla_formula(4, "a", [("token", 1.0), ("FFN", 0.5)], 2.0, 1.5, 1.5, 2, False,
    ...                   False)
    >>> "p_{4}" in tex, "b_O" in tex, r"\underset{\text{FFN}}{0.5000}" in tex
    (False, False, True)
    >>> tex = dla_formula(0, "a", [("t", 1.0), ("b_O", -1.0)], 1, 0, 0, 1, True, True)
    >>> r"{1.0000} - \underset{b_O}{1.0000}" in tex
    True
    """
    i = str(position)
    pos = rf" + p_{{{i}}}" if positions else ""
    b_o, b_f = (r" + b_O^{\ell}", r" + b_f \cdot W_U[:,t]") if bias else ("", "")
    parts = (rf"\sum_{{h}} z_{{{i}}}^{{\ell,h}} W_O^{{\ell,h}}{b_o} + "
             rf"\mathrm{{FFN}}^{{\ell}}_{{{i}}}")
    live = "".join(  # a negative term is subtracted: "a − 0.0277", not "a + −0.0277"
        ("-" if v < 0 else "+" if k else "") + (" " if k else "")
        + rf"\underset{{{_term(label)}}}{{{num(abs(v), 4)}}}" + " "
        for k, (label, v) in enumerate(terms)).rstrip()
    return (
        r"\begin{aligned}"
        rf"x_{{{i}}} &= E_{{t_{{{i}}}}}{pos} + \sum_{{\ell=0}}^{{{n_layer - 1}}}\Big({parts}\Big)"
        r"\qquad t = " + tex_text(token, 16) + r" \\"
        rf"\mathrm{{logit}}_t &= \mathrm{{LN}}_f(x_{{{i}}}) \cdot W_U[:,t] = \sum_c "
        rf"\big(c - \operatorname{{mean}}(c)\big) \odot \frac{{\lambda}}{{\sigma}} \cdot "
        rf"W_U[:,t]{b_f},\quad \sigma = \sqrt{{\operatorname{{var}}(x_{{{i}}}) + \varepsilon}} "
        rf"= {num(sigma, 4)} \\"
        rf"&= {live} = {num(total, 4)} \\"
        + r"&\text{" + tex_escape(_("the model's logit:")) + " } "
        + rf"{{{num(real, 4)}}},\quad |\Delta| = "
        rf"{num(abs(total - real), 1)}"
        r"\end{aligned}"
    )


def _term(label: str) -> str:
    r"""A term's name under its value: a symbol (``b_O``) as maths, a word as text.

    >>> _term("b_f"), _term("heads")
    ('b_f', '\\text{heads}')
    """
    return label if "_" in label else rf"\text{{{tex_escape(label)}}}"
