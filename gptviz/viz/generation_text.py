r"""Generation as text: the seeds' "prompt ↦ {candidate: p%}" chain, P_T and H filled in,
the running text as token chips (the context window's cut and the new tokens marked), and
the history as a table.

Pure builders: LaTeX strings for ``st.latex``, HTML for ``st.html``, DataFrames.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence

import pandas as pd

from gptviz.tokenizers.base import TokenInfo
from gptviz.viz.generation import percent
from gptviz.viz.latex import tex_text
from gptviz.viz.math_panels import num
from gptviz.viz.tokens import (
    CHIP_CSS,
    PALETTE,
    SPECIAL_FILL,
    UNKNOWN_FILL,
    hex_bytes,
    token_label,
    visible,
)

WINDOW_CHARS = 60  # characters of the context window a line of the seeds' display shows
_TEX = {"\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "$": r"\$", "&": r"\&", "#": r"\#",
        "%": r"\%", "_": r"\_", "^": r"\textasciicircum{}", "~": r"\textasciitilde{}"}

SEQ_CSS = """
<style>
.gv-chip.gv-cut{opacity:.38;text-decoration:line-through}
.gv-chip.gv-new{outline:2px solid #f58518;outline-offset:-2px}
.gv-chip.gv-last{outline:3px solid #d4470f;box-shadow:0 0 0 2px #ffd8b5}
.gv-scissor{font:600 13px ui-sans-serif,system-ui,sans-serif;color:#b42318;align-self:center;
padding:0 4px}
.gv-more{font:12px ui-sans-serif,system-ui,sans-serif;color:#6b7280;align-self:center}
</style>
"""


def tex_running(s: str, max_chars: int = 40) -> str:
    r"""Running text for ``\text{…}``: its tail, escaped, spaces kept, newlines shown as ↵.

    >>> tex_running("a_b\nc", 10), tex_running("abcdef", 4)
    ('\\text{a\\_b↵c}', '\\text{…def}')
    """
    if len(s) > max_chars:
        s = "…" + s[-(max_chars - 1):]
    shown = "".join(ch if ch == " " else visible(ch) for ch in s)
    return r"\text{" + "".join(_TEX.get(ch, ch) for ch in shown) + "}"


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
    cases = r" \\ ".join(tex_text(c, 16) + " & " + _tex_percent(p) for c, p in candidates)
    return ((r"\implies " if continued else "") + head + r"\underline{"
            + (tex_running(body, WINDOW_CHARS) if body else "") + box + "}"
            + r" \mapsto \begin{cases} " + cases + r" \end{cases}")


def _tex_percent(p: float) -> str:
    return percent(p).replace("%", r"\%").replace("<", "{<}")


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
    where = (rf"S = V,\ |S| = {kept:,}" if kept >= vocab_size else
             rf"S = \text{{the ids top-}}k\text{{ / top-}}p\text{{ keep}},\ |S| = {kept:,}"
             rf"\ \text{{of}}\ |V| = {vocab_size:,}").replace(",", "{,}")
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


def _chip(tok: TokenInfo, pos: int, classes: str, tip: str) -> str:
    fill = (UNKNOWN_FILL if tok.unknown else SPECIAL_FILL if tok.special
            else PALETTE[pos % len(PALETTE)])
    special = " special" if tok.special and not tok.unknown else ""
    return (f'<span class="gv-chip{special} {classes}" style="background:{fill}" '
            f'title="{html.escape(tip)}">{html.escape(token_label(tok))}'
            f"<small>{tok.id}</small></span>")


def sequence_chips_html(tokens: Sequence[TokenInfo], n_prompt: int, dropped: int,
                        max_tokens: int = 400) -> str:
    """The prompt and the generated tokens as chips; the ``dropped`` first tokens (outside the
    context window) faded and struck through before a ✂; generated tokens outlined, the newest
    most.

    >>> t = [TokenInfo(i, c, c.encode(), (i, i + 1)) for i, c in enumerate("abcd")]
    >>> h = sequence_chips_html(t, n_prompt=2, dropped=1)
    >>> h.count(" gv-new"), h.count(" gv-cut"), "✂" in h
    (2, 1, True)
    """
    n = len(tokens)
    first = max(0, n - max_tokens)
    parts = [CHIP_CSS, SEQ_CSS, '<div class="gv-chips">']
    if first:
        parts.append(f'<span class="gv-more">… {first:,} earlier tokens not drawn</span>')
    for pos in range(first, n):
        tok = tokens[pos]
        if pos == dropped and dropped:
            parts.append(f'<span class="gv-scissor" title="the context window starts here: the '
                         f'{dropped:,} tokens before it are cut">✂</span>')
        generated = pos >= n_prompt
        classes = " ".join(c for c, on in (("gv-cut", pos < dropped), ("gv-new", generated),
                                           ("gv-last", generated and pos == n - 1)) if on)
        where = (f"generated at step {pos - n_prompt + 1}" if generated else "prompt") + (
            " · cut: outside the context window" if pos < dropped else "")
        tip = (f"position {pos} · id {tok.id} · token {tok.string!r} · "
               f"bytes [{hex_bytes(tok.bytes)}] · {where}")
        parts.append(_chip(tok, pos, classes, tip))
    parts.append("</div>")
    return "".join(parts)


def attention_chips_html(tokens: Sequence[TokenInfo], weights: Sequence[float]) -> str:
    """The context tokens tinted by one query's attention weights, each weight under its chip.

    >>> t = [TokenInfo(i, c, c.encode(), (i, i + 1)) for i, c in enumerate("ab")]
    >>> "0.75" in attention_chips_html(t, [0.25, 0.75])
    True
    """
    top = max(max(weights, default=0.0), 1e-9)
    parts = [CHIP_CSS, '<div class="gv-chips">']
    for pos, (tok, w) in enumerate(zip(tokens, weights, strict=True)):
        alpha = 0.08 + 0.92 * float(w) / top
        tip = f"position {pos} · id {tok.id} · token {tok.string!r} · weight {float(w):.4f}"
        parts.append(
            f'<span class="gv-chip" style="background:rgba(245,133,24,{alpha:.3f})" '
            f'title="{html.escape(tip)}">{html.escape(token_label(tok))}'
            f"<small>{float(w):.2f}</small></span>")
    parts.append("</div>")
    return "".join(parts)


def history_table(contexts: Sequence[str], chosen: Sequence[str], probs: Sequence[float],
                  entropies: Sequence[float], settings: Sequence[str],
                  cropped: Sequence[int]) -> pd.DataFrame:
    """One row per generated token: step, the end of its context, choice, P(choice), H.

    >>> float(history_table(["ab"], ["c"], [0.5], [0.69], ["T=1"], [0]).iloc[0]["P(chosen)"])
    0.5
    """
    return pd.DataFrame({
        "step": range(1, len(chosen) + 1),
        "context (end)": [visible(c[-30:]) for c in contexts],
        "chosen": [visible(c) for c in chosen],
        "P(chosen)": [round(float(p), 4) for p in probs],
        "entropy (nats)": [round(float(h), 4) for h in entropies],
        "settings": list(settings),
        "cut tokens": list(cropped),
    })
