r"""The Learning page's LaTeX, filled in with the live numbers: the loss at one position,
∂L/∂z = P − e_y, the chain rule, one SGD step with its first- and second-order
predictions, and the central difference of the gradient check.
"""

from __future__ import annotations

import math

from gptviz.app.shared.tex import num, tex_escape, tex_text
from gptviz.i18n import _, pgettext


def sci(v: float, digits: int = 3) -> str:
    r"""A number for LaTeX in scientific notation when it is very large or small.

    >>> sci(0.0123), sci(3.2e-7), sci(4.5e12), sci(float("nan"))
    ('0.0123', '3.20 \\times 10^{-7}', '4.50 \\times 10^{12}', '\\text{NaN}')
    """
    v = float(v)
    if math.isnan(v):
        return r"\text{NaN}"
    if math.isinf(v):
        return r"\infty" if v > 0 else r"-\infty"
    if v != 0 and not 1e-3 <= abs(v) < 1e4:
        mantissa, exp = f"{v:.{digits - 1}e}".split("e")
        return rf"{mantissa} \times 10^{{{int(exp)}}}"
    return f"{v:.{digits}g}" if abs(v) < 1 else f"{v:.{digits}f}".rstrip("0").rstrip(".")


def loss_latex(position: int, target: str, p: float, loss: float) -> str:
    r"""L = −ln P(y | x_0 … x_t) with the live probability.

    >>> "-\\ln 0.2500" in loss_latex(3, "a", 0.25, 1.386)
    True
    """
    return (rf"L = -\ln P\big(y \mid x_0, \dots, x_{{{position}}}\big) = "
            rf"-\ln P\big(y = {tex_text(target, 16)}\big) = -\ln {num(p, 4)} = {num(loss, 4)}")


def softmax_gradient_latex() -> str:
    r"""Why ∂L/∂z = P − e_y: the softmax's log-sum-exp differentiated once."""
    return (r"L = -\ln \frac{e^{z_y}}{\sum_j e^{z_j}} = -z_y + \ln \sum_j e^{z_j}"
            r"\quad\Longrightarrow\quad \frac{\partial L}{\partial z_i} = "
            r"\frac{e^{z_i}}{\sum_j e^{z_j}} - [i = y] = P_i - (e_y)_i")


def logit_gradient_latex(target: str, p_target: float, other: str | None, p_other: float,
                         auto_target: float) -> str:
    r"""The two kinds of entry of P − e_y, live: the target's and the top other token's.

    >>> tex = logit_gradient_latex("a", 0.3, "b", 0.5, -0.7)
    >>> "0.3000 - 1" in tex, r"z_{\text{b}}} &= P_{\text{b}} - 0 = 0.5000" in tex
    (True, True)
    """
    lines = [rf"\frac{{\partial L}}{{\partial z_{{{tex_text(target, 12)}}}}} &= P(y) - 1 = "
             rf"{num(p_target, 4)} - 1 = {num(p_target - 1, 4)} && "
             + r"\text{" + tex_escape(_("autograd:")) + " } " + num(auto_target, 4)]
    if other is not None:
        lines.append(rf"\frac{{\partial L}}{{\partial z_{{{tex_text(other, 12)}}}}} &= "
                     rf"P_{{{tex_text(other, 12)}}} - 0 = {num(p_other, 4)} && "
                     + r"\text{" + tex_escape(_("the most probable other token")) + "}")
    return r"\begin{aligned}" + r"\\".join(lines) + r"\end{aligned}"


def chain_rule_latex(n_layer: int) -> str:
    r"""How autograd carries ∂L/∂z back to every parameter.

    >>> "h^{(2)}" in chain_rule_latex(2)
    True
    """
    return (r"\frac{\partial L}{\partial \theta} = \frac{\partial L}{\partial z}\,"
            r"\frac{\partial z}{\partial h^{(" + str(n_layer) + r")}}\,\frac{\partial h^{("
            + str(n_layer) + r")}}{\partial h^{(" + str(n_layer - 1) + r")}}\cdots"
            r"\frac{\partial h^{(\ell+1)}}{\partial \theta}\qquad"
            r"\|g\|^2 = \sum_{\text{" + tex_escape(_("groups")) + r"}} \Big\|\frac{\partial L}"
            r"{\partial \theta_{\text{" + tex_escape(_("group")) + r"}}}\Big\|^2")


def sgd_latex(eta: float, grad_sq: float, curvature: float, real: float,
              precise: bool = False) -> str:
    r"""θ' = θ − η g and the predicted ΔL beside the real one, with the precision the real
    one was computed in (float64 when float32's rounding could show, ``learning.sgd_steps``).

    >>> "= -0.01&" in sgd_latex(1e-4, 100.0, 1e3, -0.0099)
    True
    >>> r"\text{real, float64}" in sgd_latex(1e-6, 1.0, 1.0, -1e-6, precise=True)
    True
    """
    first = -eta * grad_sq
    second = first + 0.5 * eta**2 * curvature
    return (
        r"\begin{aligned}"
        rf"\theta' &= \theta - \eta\, g, \qquad \eta = {sci(eta)},\quad "
        rf"\|g\|^2 = {sci(grad_sq, 4)},\quad g^\top H g = {sci(curvature, 4)}\\"
        rf"\Delta L &\approx -\eta \|g\|^2 = {sci(first, 4)}"
        r"&&\text{" + tex_escape(_("first order")) + r"}\\"
        rf"\Delta L &\approx -\eta \|g\|^2 + \tfrac12 \eta^2\, g^\top H g = {sci(second, 4)}"
        r"&&\text{" + tex_escape(_("second order")) + r"}\\"
        rf"\Delta L &= L(\theta') - L(\theta) = {sci(real, 4)} && "
        r"\text{" + tex_escape(_("real, {precision}").format(
            precision="float64" if precise else "float32")) + r"}\end{aligned}"
    )


def central_difference_latex(eps: float) -> str:
    r"""The finite difference the check compares autograd with.

    >>> "10^{-6}" in central_difference_latex(1e-6)
    True
    """
    power = round(math.log10(eps))
    shown = f"10^{{{power}}}" if math.isclose(eps, 10.0**power) else sci(eps)
    return (r"\frac{\partial L}{\partial \theta_i} \approx "
            r"\frac{L(\theta + \varepsilon e_i) - L(\theta - \varepsilon e_i)}{2\varepsilon},"
            rf"\qquad \varepsilon = {shown},\qquad "
            r"\text{" + tex_escape(pgettext("finite difference", "error")) + r"} \approx "
            r"\underbrace{O(\varepsilon^2)}_{\text{" + tex_escape(_("curvature")) + "}} + "
            r"\underbrace{O(u\,L/\varepsilon)}_{\text{" + tex_escape(_("rounding,"))
            + r" } u = 2^{-53}}")
