r"""Generation as text: the seeds' "prompt ↦ {candidate: p%}" chain, P_T and H filled in,
the running text as token chips (the context window's cut and the new tokens marked), and
the history as a table.

Pure builders: LaTeX strings for ``st.latex``, HTML for ``st.html``, DataFrames.
"""

from __future__ import annotations

import codecs
import math
from collections.abc import Sequence

from gptviz.app.shared.chips import hex_bytes
from gptviz.app.shared.tex import STRUT, grouped, num, percent_tex, tex_running, tex_text, words
from gptviz.i18n import _

WINDOW_CHARS = 60  # characters of the context window a line of the seeds' display shows
TIE = 5e-4  # log-probabilities this close read as equal (the formulas show 3 decimals)


def token_text(data: bytes) -> str:
    """One token on its own, as a chip names it: its text, or ‹hex› when its bytes are only
    part of a character.

    >>> token_text(b" cat"), token_text("😀".encode()[:2])
    (' cat', '‹f0 9f›')
    """
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return f"‹{hex_bytes(data)}›"


def running_pieces(parts: Sequence[bytes]) -> list[str]:
    """Each token's share of the running text: a character split over several tokens is
    written where its last byte arrives, so that the pieces join into the text itself;
    bytes still waiting for the rest of their character at the end show as ‹hex›.

    >>> smile = "😀".encode()
    >>> running_pieces([b"a ", smile[:2], smile[2:], b"!"])
    ['a ', '', '😀', '!']
    >>> running_pieces([b"a ", smile[:3]])
    ['a ', '‹f0 9f 98›']
    """
    dec = codecs.getincrementaldecoder("utf-8")(errors="replace")
    out = [dec.decode(b) for b in parts]
    waiting = dec.getstate()[0]
    if out and waiting:
        out[-1] += f"‹{hex_bytes(waiting)}›"
    return out


def chain_pieces(parts: Sequence[bytes], boxed: bool) -> list[str]:
    """``mapsto_line``'s pieces: the running text, and the boxed last token on its own."""
    if boxed and parts:
        return [*running_pieces(parts[:-1]), token_text(parts[-1])]
    return running_pieces(parts)


def whole_tail(pieces: Sequence[str], chars: int) -> str:
    """The last pieces that fit in ``chars`` characters, whole, after "…" when some are left
    out; a last piece longer than that alone is cut inside.

    >>> whole_tail(["ab", "<|UNK|>", "cd"], 10), whole_tail(["abcdefghijkl"], 5)
    ('…<|UNK|>cd', '…ijkl')
    """
    text = "".join(pieces)
    if len(text) <= chars:
        return text
    kept, size = [], 1  # "…"
    for piece in reversed(pieces):
        if size + len(piece) > chars:
            break
        kept.append(piece)
        size += len(piece)
    if not kept:
        return "…" + text[-(chars - 1):] if chars > 1 else "…"
    return "…" + "".join(reversed(kept))


def mapsto_line(pieces: Sequence[str], cropped: int, boxed: bool,
                candidates: Sequence[tuple[str, float]], continued: bool) -> str:
    r"""One line of the seeds' display: the text, the context window underlined, the token
    just appended boxed, ``↦`` its next-token candidates with percentages.

    >>> tex = mapsto_line(["The", " cat"], 0, True, [(" sat", 0.29), (" ran", 0.004)], True)
    >>> tex.startswith(r"\implies") and r"\fbox" in tex and r"0.4\%" in tex
    True
    """
    window = list(pieces[cropped:])
    new = window.pop() if boxed and window else None
    body = "".join(window)
    # Long tokens (GPT-2's) leave less of the line to the text: the whole line must fit.
    widest = max((min(len(c), 16) for c, _ in candidates), default=0)
    room = max(24, WINDOW_CHARS - widest - (min(len(new), 16) if new else 0) + 2)
    # The seeds write the text before the window plainly; here only when the window is short.
    head = whole_tail(pieces[:cropped], room - len(body)) if len(body) < room - 8 else ""
    head = tex_running(head, len(head)) if head else ""
    body = whole_tail(window, room)  # cut between tokens: "…NK|>" read as garbage
    box = (r"\,\fbox{" + STRUT + tex_text(new, 16) + "}") if new is not None else ""
    cases = r" \\ ".join(tex_text(c, 16) + " & " + percent_tex(p) for c, p in candidates)
    return ((r"\implies " if continued else "") + head + r"\underline{"
            + (tex_running(body, len(body)) if body else "") + box + "}"
            + r" \mapsto \begin{cases} " + cases + r" \end{cases}")


def pt_formula(token: str, token_id: int, y: float, temperature: float, log_z: float,
               prob: float, kept: int, vocab_size: int, log_z_all: float | None = None,
               min_p: float | None = None, p_max: float = 1.0) -> str:
    r"""``P_T(i) = softmax(y_N / T)_i`` for one token with the live numbers; T = 0 is argmax.

    ``log_z`` is log Σ_{j∈S} e^{y_j/T} over the ids S that top-k / top-p / min-p keep,
    ``log_z_all`` the same over the whole vocabulary V (``None``: S = V). When S ≠ V the
    token is drawn from P', P_T restricted to S and renormalised by the mass of S; ``prob``
    is P'(token). With ``min_p``, S lies inside S_min, the ids with P_T(i) ≥ min_p · p_max
    (``p_max`` = max_j P_T(j)), written out with its threshold.

    >>> "e^{-0.500}" in pt_formula("a", 3, 1.0, 1.0, 1.5, 0.6065, 5, 5)
    True
    >>> tex = pt_formula("a", 3, 1.0, 1.0, 1.5, 0.6065, 2, 5, log_z_all=1.6)
    >>> r"P'(i)" in tex and "0.9048" in tex  # the mass of S, e^{1.5 - 1.6}
    True
    >>> tex = pt_formula("a", 3, 1.0, 1.0, 1.5, 0.6065, 2, 5, 1.6, min_p=0.1, p_max=0.5)
    >>> r"S_{\min}" in tex and "0.05000" in tex  # the threshold 0.1 × 0.5
    True
    """
    name = rf"{tex_text(token, 16)}\ (\mathrm{{id}}\ {token_id})"
    if temperature == 0:
        return (  # short lines: the formula sits in the narrower of two columns
            r"\begin{aligned}" + words(_("Greedy")) + r"(x_1,\dots,x_N) &= \arg\max_{i\in V} P(i) "
            rf"= \arg\max_{{i \in V}} y_{{N,i}}\\ &= {name},\quad y_{{N,{token_id}}} = "
            rf"{num(y)}\\ P_0({tex_text(token, 16)}) &= 1\quad (T = 0)\\ "
            r"&" + words(_("every other token gets 0: nothing is random")) + r"\end{aligned}")
    t, tok = num(temperature, 2), tex_text(token, 16)
    softmax = (r"P_T(i) &= \sigma\!\Big(\frac{y_N}{T}\Big)_i = "
               r"\frac{e^{y_{N,i}/T}}{\sum_{j\in V} e^{y_{N,j}/T}}")
    a = y / temperature
    if kept >= vocab_size or log_z_all is None:
        return (  # short lines: the formula sits in the narrower of two columns
            r"\begin{aligned}" + softmax + r"\\"
            rf"P_{{{t}}}({tok}) &= \frac{{e^{{{num(y)}/{t}}}}}"
            rf"{{\sum_{{j\in V}} e^{{y_{{N,j}}/{t}}}}} = \frac{{e^{{{num(a)}}}}}"
            rf"{{e^{{{num(log_z)}}}}}\\ &= e^{{{num(a - log_z)}}} = {num(prob, 4)}"
            r"\end{aligned}")  # |V| is in the bar chart's title, beside it
    mass = math.exp(log_z - log_z_all)  # m_S = Σ_{j∈S} P_T(j)
    return (  # short lines: the formula sits in the narrower of two columns
        r"\begin{aligned}" + softmax + r"\\"
        r"P'(i) &= \begin{cases} \dfrac{P_T(i)}{m_S} = "
        r"\dfrac{e^{y_{N,i}/T}}{\sum_{j\in S} e^{y_{N,j}/T}} & i \in S \\ "
        r"0 & i \notin S \end{cases}\\"
        r"S &= S_k \cap S_p \cap S_{\min},\ "
        + words(_("{kept} of {all}"), kept=f"|S| = {grouped(kept)}", all=grouped(vocab_size))
        + r"\\"
        + (r"S_{\min} &= \{i : P_T(i) \ge p_{\min} \cdot \max_j P_T(j)\}\\"
           rf"&= \{{i : P_T(i) \ge {num(min_p, 2)} \times {num(p_max, 4)} = "
           rf"{num(min_p * p_max, 5)}\}}\\" if min_p else "") +
        rf"m_S &= \textstyle\sum_{{j\in S}} P_{{{t}}}(j) = {num(mass, 4)}\quad "
        + words(_("(the mass of {S})"), S="S") + r"\\"
        rf"P'({tok}) &= \frac{{P_{{{t}}}({tok})}}{{m_S}} = "
        rf"\frac{{{num(math.exp(a - log_z_all), 4)}}}{{{num(mass, 4)}}} = "
        rf"\frac{{e^{{{num(y)}/{t}}}}}{{\sum_{{j\in S}} e^{{y_{{N,j}}/{t}}}}}\\"
        rf"&= \frac{{e^{{{num(a)}}}}}{{e^{{{num(log_z)}}}}} = e^{{{num(a - log_z)}}} = "
        rf"{num(prob, 4)}"
        r"\end{aligned}")


def entropy_formula(h: float, symbol: str = "P_T") -> str:
    r"""``H(P) = −Σ P log P`` of the distribution drawn from (``symbol``: P_T, or P' when
    top-k / top-p renormalised it), with its value and ``e^H``, the number of equally
    likely tokens.

    >>> "2.00" in entropy_formula(0.6931)
    True
    >>> "H(P')" in entropy_formula(0.6931, "P'")
    True
    >>> "50{,}011" in entropy_formula(10.82)  # e^10.82: near GPT-2's 50,257, nearly uniform
    True
    """
    return (rf"\begin{{aligned}}H({symbol}) &= -\sum_{{i\in V}} {symbol}(i)\,\log {symbol}(i) = "
            + num(abs(h)) + r"\ " + words(_("nats")) + r"\\ e^{H} &= "
            + grouped(math.exp(h), 2 if h < math.log(1000) else 0)
            + r"\ " + words(_("equally likely tokens")) + r"\end{aligned}")


def _terms(values: Sequence[float], shown: int = 3) -> str:
    """'(−0.105) + (−1.204) + ⋯ + (−0.330)': the first ``shown`` terms, ⋯, the last two."""
    parts = [f"({num(v)})" for v in values]
    if len(parts) > shown + 3:
        parts = parts[:shown] + [r"\cdots"] + parts[-2:]
    return " + ".join(parts)


def beam_score_formula(logprobs: Sequence[float], score: float, rank: int, width: int,
                       vocab_size: int) -> str:
    r"""The score of beam ``rank`` after t = len(logprobs) steps, its terms filled in, the
    candidates of a step, and the length normalisation (none: α = 0).

    >>> tex = beam_score_formula([-0.5, -1.0], -1.5, 0, 3, 10)
    >>> "(-0.500) + (-1.000) = -1.500" in tex and r"3 \cdot 10 = 30" in tex
    True
    """
    t = len(logprobs)
    return (
        r"\begin{aligned}"
        r"\operatorname{score}(y_{1:t}) &= \log P(y_{1:t} \mid x) = "
        r"\sum_{s=1}^{t} \log P(y_s \mid x, y_{<s})\\"
        + words(_("beam {rank}, {t}"), rank=rank, t=f"t = {t}")
        + rf":\quad \operatorname{{score}} &= {_terms(logprobs)} = {num(score)}\\"
        + words(_("step {t}"), t="t+1") + r":\quad \operatorname{score}(y_{1:t}\,i) &= "
        r"\operatorname{score}(y_{1:t}) + \log P(i \mid x, y_{1:t}),\ "
        + words(_("{product} candidates, the {k} best kept"), k="k", product=(
            rf"k \cdot |V| = {width} \cdot {grouped(vocab_size)} = {grouped(width * vocab_size)}"))
        + r"\\" + words(_("length normalisation:"))
        + r"\quad \tilde s &= \operatorname{score} / t^{\alpha},\ "
        rf"\alpha = 0:\ \tilde s = \operatorname{{score}} = {num(score)}"
        r"\end{aligned}")


def greedy_vs_beam(greedy: float, beam: float, width: int, pruned_at: int | None = None,
                   best_line: str = "") -> str:
    r"""Seed 001's inequality with the live log-probabilities of the two texts; when greedy's
    wins, ``pruned_at`` is the step at which its prefix fell out of the k beams. The first
    line says that neither text need be y*, the most probable of all; ``best_line``
    (``beam_vs_best``) says whether the beam's was, when an exact search checked it.

    >>> r"e^{2.000}" in greedy_vs_beam(-5.0, -3.0, 4)
    True
    >>> r"\ <\ " in greedy_vs_beam(-2.0, -9.0, 2, pruned_at=2)  # beam search lost
    True
    """
    gap = beam - greedy
    if gap > TIE:
        factor = rf" \approx {grouped(math.exp(gap), 1)}" if gap < 20 else ""
        verdict = words(_("the beams' text is {factor} more probable"),
                        factor=rf"e^{{{num(gap)}}}{factor}\times")
    elif gap >= -TIE:
        verdict = words(_("here both find the same probability"))
    else:  # a beam can prune greedy's prefix early: wider is not always better
        verdict = (words(_("here greedy's text is more probable")) + r"\\&" + words(
            _("(its prefix left the {k} beams at step {t}; the texts kept then ended worse)"),
            k=width, t=pruned_at))
    relation = r"\ \ge\ " if gap >= -TIE else r"\ <\ "
    g = "y^{" + words(_("greedy")) + "}"
    return (r"\begin{aligned}&y^{*} = \arg\max_{y} \prod_{t=1}^{n} p(y_t \mid y_{<t}, x)\ "
            + words(_("(whole texts)")) + rf",\quad {g}_t = "
            rf"\arg\max_{{v \in V}} p(v \mid {g}_{{<t}}, x)\ " + words(_("(step by step)"))
            + r"\\&" + words(_("beam search keeps the {k} best prefixes of each length: like "
                                "greedy, it can miss {best}"), k="k", best="y^{*}") + r"\\"
            rf"&\log P({_beam(width)} \mid x) = {num(beam)}" + relation +
            rf"\log P({g} \mid x) = {num(greedy)}:\\&" + verdict +
            (r"\\&" + best_line if best_line else "") + r"\end{aligned}")


def _beam(width: int) -> str:
    r"""y^{beam, k}: the beam's text, named in the reader's language."""
    return "y^{" + words(_("beam")) + f",k={width}}}"


def beam_vs_best(beam: float, width: int, best: float | None, text: str | None = None,
                 pruned_at: int | None = None) -> str:
    r"""One line: y*, the most probable text of the beam's length, against the beam's text;
    ``best`` None when the exact search could not check (``gptviz.generation.exact``).
    ``text`` is y* when it is not the beam's, ``pruned_at`` the step its prefix left them.

    >>> r"\text{beam search missed $y^{*} = \text{↵↵Let}$}" in beam_vs_best(
    ...     -4.472, 3, -4.318, "↵↵Let", 3)
    True
    >>> r"y^{*} = y^{\text{beam}" in beam_vs_best(-4.0, 3, -4.0)
    True
    >>> r"\text{not checked}" in beam_vs_best(-4.0, 3, None)
    True
    """
    mine = rf"\log P({_beam(width)} \mid x)"
    if best is None:
        return (rf"\log P(y^{{*}} \mid x) \ge {mine} = {num(beam)}:\ y^{{*}}\ "
                + words(_("not checked")))
    if text is None or best - beam <= TIE:
        same = (rf"y^{{*}} = {_beam(width)}" if text is None else
                words(_("another text ties with it, to 3 decimals")))
        return rf"\log P(y^{{*}} \mid x) = {mine} = {num(beam)}:\ {same}"
    return (rf"\log P(y^{{*}} \mid x) = {num(best)}\ >\ {mine} = {num(beam)}:\ "
            + words(_("beam search missed {best}"), best=f"y^{{*}} = {tex_text(text, 24)}")
            + (r"\ " + words(_("(its prefix left the {k} beams at step {t})"), k=width,
                             t=pruned_at) if pruned_at else ""))
