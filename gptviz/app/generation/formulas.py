r"""Generation as text: the seeds' "prompt ↦ {candidate: p%}" chain, P_T and H filled in,
the running text as token chips (the context window's cut and the new tokens marked), and
the history as a table.

Pure builders: LaTeX strings for ``st.latex``, HTML for ``st.html``, DataFrames.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from gptviz.app.shared.tex import grouped, num, percent_tex, tex_running, tex_text

WINDOW_CHARS = 60  # characters of the context window a line of the seeds' display shows


def mapsto_line(pieces: Sequence[str], cropped: int, boxed: bool,
                candidates: Sequence[tuple[str, float]], continued: bool) -> str:
    r"""One line of the seeds' display: the text, the context window underlined, the token
    just appended boxed, ``↦`` its next-token candidates with percentages.

    >>> tex = mapsto_line(["The", " cat"], 0, True, [(" sat", 0.29), (" ran", 0.004)], True)
    >>> tex.startswith(r"\implies") and r"\fbox" in tex and r"{<}1\%" in tex
    True
    """
    window = list(pieces[cropped:])
    new = window.pop() if boxed and window else None
    body = "".join(window)
    # The seeds write the text before the window plainly; here only when the window is short.
    before = "".join(pieces[:cropped]) if len(body) < WINDOW_CHARS - 8 else ""
    head = tex_running(before, WINDOW_CHARS - len(body)) if before else ""
    box = (r"\,\fbox{" + tex_text(new, 16) + "}") if new is not None else ""
    cases = r" \\ ".join(tex_text(c, 16) + " & " + percent_tex(p) for c, p in candidates)
    return ((r"\implies " if continued else "") + head + r"\underline{"
            + (tex_running(body, WINDOW_CHARS) if body else "") + box + "}"
            + r" \mapsto \begin{cases} " + cases + r" \end{cases}")


def pt_formula(token: str, token_id: int, y: float, temperature: float, log_z: float,
               prob: float, kept: int, vocab_size: int) -> str:
    r"""``P_T(i) = softmax(y_N / T)_i`` for one token with the live numbers; T = 0 is argmax.

    ``log_z`` is log Σ_{j∈S} e^{y_j/T} over the ids S that top-k / top-p keep.

    >>> "e^{-0.500}" in pt_formula("a", 3, 1.0, 1.0, 1.5, 0.6065, 5, 5)
    True
    """
    name = rf"{tex_text(token, 16)}\ (\mathrm{{id}}\ {token_id})"
    if temperature == 0:
        return (r"\begin{aligned}T = 0:\quad \mathrm{Greedy}(x_1,\dots,x_N) &= "
                rf"\arg\max_{{i\in V}} P(i) = \arg\max_{{i \in V}} y_{{N,i}} = {name},\quad "
                rf"y_{{N,{token_id}}} = {num(y)}\\ P_0({tex_text(token, 16)}) &= 1 "
                r"\quad\text{(every other token gets 0: nothing is random)}\end{aligned}")
    t = num(temperature, 2)
    where = (rf"S = V,\ |S| = {grouped(kept)}" if kept >= vocab_size else
             rf"S = \text{{the ids top-}}k\text{{ / top-}}p\text{{ keep}},\ |S| = {grouped(kept)}"
             rf"\ \text{{of}}\ |V| = {grouped(vocab_size)}")
    return (
        r"\begin{aligned}"
        r"P_T(i) &= \sigma\!\Big(\frac{y_N}{T}\Big)_i = "
        r"\frac{e^{y_{N,i}/T}}{\sum_{j\in S} e^{y_{N,j}/T}},\qquad " + where + r"\\"
        rf"P_{{{t}}}({tex_text(token, 16)}) &= \frac{{e^{{{num(y)}/{t}}}}}"
        rf"{{\sum_{{j\in S}} e^{{y_{{N,j}}/{t}}}}} = \frac{{e^{{{num(y / temperature)}}}}}"
        rf"{{e^{{{num(log_z)}}}}}\\"
        rf"&= e^{{{num(y / temperature - log_z)}}} = {num(prob, 4)}"
        r"\end{aligned}")


def entropy_formula(h: float) -> str:
    r"""``H(P_T) = −Σ P log P`` with its value and ``e^H``, the number of equally likely tokens.

    >>> "2.00" in entropy_formula(0.6931)
    True
    """
    return (r"\begin{aligned}H(P_T) &= -\sum_{i\in V} P_T(i)\,\log P_T(i) = " + num(abs(h))
            + r"\ \text{nats}\\ e^{H} &= " + f"{math.exp(h):.2f}"
            + r"\ \text{equally likely tokens}"
            r"\end{aligned}")



