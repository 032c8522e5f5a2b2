r"""The lesson's own LaTeX: the lines no explore page writes (the ids, the heads joined by
W_O, the FFN and the residual sums with their lengths, the logits, the draw). Each adapts to
the model: without biases the ``+ b`` terms disappear, without positions ``p_i = 0``.

The other formulas of the lesson are the explore pages' own builders.
"""

from __future__ import annotations

from collections.abc import Sequence

from gptviz.app.attention.formulas import qkv_lines
from gptviz.app.lesson.questions import short
from gptviz.app.shared.tex import grouped, num, percent_tex, tex_text
from gptviz.i18n import _, number
from gptviz.model.config import ACTIVATION_TEX


def _b(name: str, bias: bool) -> str:
    r"""`` + b_name`` when the model has biases, else nothing.

    >>> _b("O", True), _b("O", False)
    (' + b_O', '')
    """
    return rf" + b_{name}" if bias else ""


def ids_formula(ids: Sequence[int], vocab_size: int, shown: int = 10, dropped: int = 0) -> str:
    r"""``(t_1, …, t_N) ↦ (id, …) ∈ {0, …, |V|−1}^N`` with the live ids; when the first
    ``dropped`` tokens of the text fell out of the context window, the kept ones keep their
    numbers in the text, ``(t_{dropped+1}, …, t_N)``, as step 1 counted them.

    >>> ids_formula([5, 3], 10)
    '(t_1,\\dots,t_{2}) \\mapsto (5,\\ 3) \\in \\{0,\\dots,9\\}^{2}'
    >>> ids_formula([5, 3], 10, dropped=4)[:22]
    '(t_{5},\\dots,t_{6}) \\m'
    """
    more = len(ids) > shown
    body = r",\ ".join(str(i) for i in ids[:shown]) + (r",\ \dots" if more else "")
    first = "t_1" if not dropped else rf"t_{{{dropped + 1}}}"
    return (rf"({first},\dots,t_{{{dropped + len(ids)}}}) \mapsto ({body}) \in "
            rf"\{{0,\dots,{grouped(vocab_size - 1)}\}}^{{{len(ids)}}}")


def layernorm_definition(bias: bool) -> str:
    r"""LayerNorm as this model computes it (``+ b`` only with biases).

    >>> layernorm_definition(False).count("+ b")
    0
    """
    return (r"\mathrm{LN}(x) = \lambda \odot \frac{x - \mu}{\sqrt{\sigma^2 + \varepsilon}}"
            + (" + b" if bias else "") + r",\qquad \mu = \tfrac1d \textstyle\sum_k x_k,\quad "
            r"\sigma^2 = \tfrac1d \textstyle\sum_k (x_k - \mu)^2")


def qkv_formula(n: int, d_head: int, layer: int, bias: bool, rope: bool = False) -> str:
    r"""``Q = LN_1(X) W_Q + b_Q`` (and K, V) with the head's shapes (``qkv_lines``).

    >>> "b_K" in qkv_formula(4, 16, 0, True), "b_K" in qkv_formula(4, 16, 0, False)
    (True, False)
    """
    layer_text = _("layer {layer}").format(layer=layer)
    return (qkv_lines(bias, rope) + rf"\ \in \mathbb{{R}}^{{{n} \times {d_head}}},\qquad "
            rf"d_k = {d_head},\ \text{{{layer_text}}}")


def heads_formula(n: int, d: int, n_head: int, d_head: int, bias: bool) -> str:
    r"""The heads side by side, mixed by W_O: ``MHA(X) = [z⁰ | … | zʰ⁻¹] W_O + b_O``.

    >>> "b_O" in heads_formula(4, 64, 4, 16, False)
    False
    """
    joined = {1: r"z^{(0)}", 2: r"z^{(0)}\ \big|\ z^{(1)}"}.get(
        n_head, rf"z^{{(0)}}\ \big|\ \cdots\ \big|\ z^{{({n_head - 1})}}")
    return (rf"\mathrm{{MHA}}(X) = \big[\,{joined}\,\big]\, W_O{_b('O', bias)} \in "
            rf"\mathbb{{R}}^{{{n} \times {d}}},\qquad z^{{(h)}} \in \mathbb{{R}}^{{{n} \times "
            rf"{d_head}}},\ W_O \in \mathbb{{R}}^{{{d} \times {d}}},\ h = 0,\dots,{n_head - 1}")


def ffn_formula(i: int, label: str, d: int, d_ff: int, activation: str, bias: bool,
                before: float, ffn: float, after: float) -> str:
    r"""The FFN with its shapes, and the lengths of y_i, FFN(y_i) and their sum at token i.

    >>> tex = ffn_formula(3, "a", 64, 256, "relu", False, 1.0, 0.5, 1.2)
    >>> r"\mathrm{ReLU}" in tex, "b_1" in tex, "1.200" in tex
    (True, False, True)
    """
    act = ACTIVATION_TEX[activation]
    return (
        r"\begin{aligned}"
        rf"\mathrm{{FFN}}(y) &= {act}\big(\mathrm{{LN}}_2(y)\, W_1{_b('1', bias)}\big)\, "
        rf"W_2{_b('2', bias)},\quad W_1 \in \mathbb{{R}}^{{{d} \times {d_ff}}},\ "
        rf"W_2 \in \mathbb{{R}}^{{{d_ff} \times {d}}} \\"
        rf"x'_{{{i}}} &= y_{{{i}}} + \mathrm{{FFN}}(y_{{{i}}})\ \ ({tex_text(label, 12)}):\quad "
        rf"\lVert y_{{{i}}}\rVert = {num(before)},\ \lVert \mathrm{{FFN}}(y_{{{i}}})\rVert = "
        rf"{num(ffn)},\ \lVert x'_{{{i}}}\rVert = {num(after)}"
        r"\end{aligned}"
    )


def residual_formula() -> str:
    r"""The pre-LN residual sums of one block (the chain of lengths is a figure:
    ``figures.residual_chain``).

    >>> r"\mathrm{FFN}_\ell" in residual_formula()
    True
    """
    in_mha, in_ffn = _("inside MHA"), _("inside FFN")
    return (  # MHA and FFN as steps 7–9 define them, each with its LayerNorm inside
        r"y^{(\ell)} = x^{(\ell)} + \mathrm{MHA}_\ell\big(x^{(\ell)}\big),\qquad "
        r"x^{(\ell+1)} = y^{(\ell)} + \mathrm{FFN}_\ell\big(y^{(\ell)}\big)\qquad "
        rf"(\mathrm{{LN}}_1 \text{{ {in_mha}}},\ \mathrm{{LN}}_2 \text{{ {in_ffn}}})"
    )


def logits_formula(i: int, d: int, vocab_size: int, tied: bool, token: str, token_id: int,
                   y: float) -> str:
    r"""``y_i = LN_final(x_i) W_U`` (``W_U = Eᵀ`` when tied) and the largest logit.

    >>> r"W_U = E^\top" in logits_formula(3, 64, 100, True, "a", 7, 4.5)
    True
    """
    own, final = _("(its own matrix)"), _("final")
    wu = (rf"W_U = E^\top \in \mathbb{{R}}^{{{d} \times {grouped(vocab_size)}}}" if tied else
          rf"W_U \in \mathbb{{R}}^{{{d} \times {grouped(vocab_size)}}}\ \text{{{own}}}")
    return (
        r"\begin{aligned}"
        rf"y_{{{i}}} &= \mathrm{{LN}}_{{\text{{{final}}}}}(x_{{{i}}})\, W_U \in "
        rf"\mathbb{{R}}^{{{grouped(vocab_size)}}},\qquad {wu} \\"
        rf"\max_v y_{{{i},v}} &= y_{{{i},{token_id}}} = \mathrm{{LN}}_{{\text{{{final}}}}}"
        rf"(x_{{{i}}}) \cdot W_U[:, {token_id}] = {num(y)}\quad ({tex_text(token, 16)})"
        r"\end{aligned}"
    )


def draw_formula(temperature: float, token: str, token_id: int, prob: float, seed: int,
                 rank: int = 1, kept_prob: float = 1.0, kept: int | None = None,
                 top_p: float = 1.0) -> str:
    r"""The draw: ``t_{N+1} ∼ P'`` (the top-p set's P_T renormalised; ``kept`` tokens, None
    when top-p cut nothing: ``∼ P_T``) or the argmax at T = 0, and what came out: its P_T
    and rank, its P' and the generator's seed.

    >>> r"\arg\max" in draw_formula(0.0, "a", 3, 1.0, 0)
    True
    >>> tex = draw_formula(1.0, "a", 3, 0.136, 0, 2, 0.15, 16, 0.9)
    >>> r"\text{rank } 2" in tex and "P'(t_{N+1}) = 15.0" in tex and "top-p 0.9" in tex
    True
    """
    name = rf"{tex_text(token, 16)}\ (\mathrm{{id}}\ {token_id})"
    if temperature == 0:
        return (rf"t_{{N+1}} = \arg\max_{{v \in V}} P_0(v) = {name},\qquad "
                rf"P_0(t_{{N+1}}) = {percent_tex(prob)}")
    t = num(temperature, 2)
    if kept is None:
        source, extra = rf"P_{{{t}}}", ""
    else:
        source = "P'"
        most = _("top-p {p}: the {kept} most probable tokens").format(
            p=short(top_p), kept=number(kept, 0, grouping=True))
        extra = (rf",\quad P'(t_{{N+1}}) = {percent_tex(kept_prob)}\ "
                 rf"(\text{{{most}}})")
    rank_text, seed_text = _("rank"), _("generator seed {seed}").format(seed=seed)
    return (rf"t_{{N+1}} \sim {source}:\quad t_{{N+1}} = {name},\qquad "
            rf"P_{{{t}}}(t_{{N+1}}) = {percent_tex(prob)}\ (\text{{{rank_text} }} {rank})"
            rf"{extra},\quad \text{{{seed_text}}}")
