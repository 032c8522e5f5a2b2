"""The Training page's LaTeX: cross-entropy and perplexity with the live numbers."""

from __future__ import annotations

import math

from gptviz.app.shared.tex import grouped, words
from gptviz.i18n import _


def cross_entropy_latex(vocab_size: int, loss: float | None = None, step: int | None = None
                        ) -> str:
    r"""The loss, its value for an untrained model (ln|V|) and, once known, its live value.

    >>> "\\ln 111" in cross_entropy_latex(111)
    True
    """
    ln_v = math.log(vocab_size)
    lines = [
        r"L(\theta) &= -\frac{1}{BN}\sum_{b=1}^{B}\sum_{i=1}^{N}"
        r"\ln P_\theta\!\left(y_{b,i}\mid x_{b,1},\dots,x_{b,i}\right)",
        words(_("untrained:")) + r"\ P_\theta \approx \tfrac{1}{|V|} \;\Rightarrow\; L &\approx "
        rf"\ln |V| = \ln {vocab_size} = {grouped(ln_v, 3)}",
    ]
    if loss is not None and math.isfinite(loss):
        lines.append(words(_("now (step {step}):"), step=step)
                     + rf"\ L_{{\mathrm{{val}}}} &= {grouped(loss, 3)} \;=\; "
                     + words(_("{share} of {whole}"), share=rf"{grouped(loss / ln_v * 100, 1)}\%",
                             whole=r"\ln|V|"))
    return r"\begin{aligned}" + r"\\".join(lines) + r"\end{aligned}"


def perplexity_latex(vocab_size: int, loss: float | None = None) -> str:
    r"""Perplexity e^L: as unsure as a uniform choice among that many tokens.

    >>> "e^{2.000}" in perplexity_latex(100, 2.0)
    True
    """
    lines = [r"\mathrm{PPL} = e^{L},\qquad " + words(_("untrained:"))
             + rf"\ e^{{\ln|V|}} = |V| = {grouped(vocab_size)}"]
    if loss is not None and math.isfinite(loss):
        ppl = math.exp(min(loss, 700.0))
        lines.append(words(_("now:")) + rf"\ e^{{{grouped(loss, 3)}}} = {grouped(ppl, 2)}"
                     + r"\ " + words(_("— as unsure as a uniform pick among that many tokens")))
    return r"\begin{gathered}" + r"\\".join(lines) + r"\end{gathered}"
