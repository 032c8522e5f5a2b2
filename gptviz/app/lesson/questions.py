"""Predict-then-reveal questions, built from the live model's numbers.

Each builder takes the numbers a step draws and returns a ``Question`` whose one right
answer is what the model computed, or None when the data allow no fair question (one
token, one head, or what ``fairness`` turns down: coin flips, choices that read alike).
Pure functions, no Streamlit: the tests rebuild every answer with torch and compare. The
texts are in the reader's language (``gptviz.i18n``), the numbers written as it writes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import torch

from gptviz.analysis.taxonomy import kind_scores
from gptviz.app.lesson.fairness import fair, leads
from gptviz.app.lesson.question import Question, longest_word, md, numbers, sentences
from gptviz.app.shared.chips import token_label
from gptviz.app.shared.tex import percent
from gptviz.i18n import _, number
from gptviz.tokenizers.base import TokenInfo
from gptviz.tokenizers.specials import UNK

__all__ = ["Question", "md"]  # the question's type and Markdown escape, for the pages

def _n(x: int) -> str:
    return number(x, 0, grouping=True)


def token_count(text: str, tokens: Sequence[TokenInfo]) -> Question | None:
    """How many of the model's tokens cover a word of the prompt (the one cut most)?

    >>> t = [TokenInfo(0, "Ste", b"Ste", (0, 3)), TokenInfo(1, "en", b"en", (3, 5))]
    >>> q = token_count("Steen", t); q.choices[q.answer]
    '2'
    """
    start = tokens[0].span[0] if tokens else 0  # the crop: only the tokens the model reads
    found = longest_word(text[start:], [replace(t, span=(t.span[0] - start, t.span[1] - start))
                                        for t in tokens])
    if found is None or len(found[0]) > 40:
        return None
    word, covering = found
    n = len(covering)
    choices, answer = numbers(n, [1, n - 1, n + 1, len(word), n + 2])
    pieces = " | ".join(md(token_label(t)) for t in covering)
    return Question(
        _("How many tokens does this model's tokenizer make of the word **“{word}”** in your "
          "prompt?").format(word=md(word)), choices, answer,
        _("The tokens that cover “{word}” are {pieces}: **{n}**. A tokenizer keeps whole the "
          "pieces it saw often while it was trained and splits rarer words into smaller "
          "ones.").format(word=md(word), pieces=pieces, n=n),
        basis=("tokens", word, tuple(t.id for t in covering)))


def one_hot_ones(n_tokens: int, vocab_size: int, distinct: int) -> Question:
    """How many entries of the one-hot matrix are 1?

    >>> q = one_hot_ones(5, 100, 4); q.choices[q.answer], q.choices
    ('5', ('4', '5', '100', '500'))
    """
    choices, answer = numbers(n_tokens, [distinct, vocab_size, n_tokens * vocab_size])
    return Question(
        _("The one-hot matrix OH has one row per token ({n}) and one column per vocabulary "
          "entry ({v}). How many of its entries are 1?").format(n=n_tokens, v=_n(vocab_size)),
        choices, answer,
        _("Exactly one 1 per row, in the column of that row's id: **{n}** ones among {total} "
          "entries. A token that appears twice gives two identical rows.").format(
            n=n_tokens, total=_n(n_tokens * vocab_size)),
        basis=("one-hot", n_tokens, vocab_size, distinct))


def position_or_token(e_norm: float, p_norm: float, positional: str) -> Question | None:
    """Which is longer on average: the token's embedding or its position vector? Asked only
    when one is longer than the other by ``MARGIN`` or more.

    >>> q = position_or_token(1.0, 3.0, "learned"); q.choices[q.answer]
    'the position p_i'
    >>> position_or_token(1.0, 1.05, "learned") is None
    True
    """
    choices = (_("the token's embedding E[t_i]"), _("the position p_i"))
    answer = int(p_norm > e_norm)
    if not leads(max(e_norm, p_norm), min(e_norm, p_norm)):
        return None
    extra = {"none": _("This model adds no positions at all (p_i = 0), so the sum is the "
                       "embedding alone."),
             "rope": _("This model adds nothing here (p_i = 0): it rotates queries and keys "
                       "by position inside attention instead (RoPE).")}.get(positional, "")
    why = _("Mean length ‖{E}‖ = {e}, ‖{P}‖ = {p}.").format(
        E="E[t_i]", P="p_i", e=number(e_norm, 2), p=number(p_norm, 2))
    return Question(_("Each token enters the model as x_i = E[t_i] + p_i. Averaged over your "
                      "prompt, which of the two vectors is longer?"), choices, answer,
                    sentences([why, extra]),
                    basis=("position", round(e_norm, 2), round(p_norm, 2), positional))


def layernorm_variance(var_standardised: float, var_before: float, d: int,
                       bias: bool = True) -> Question | None:
    """After LayerNorm standardises a row (before λ and b), what is its variance?

    >>> q = layernorm_variance(0.99999, 4.2, 128); q.choices[q.answer]
    'about 1'
    """
    options = {_("about 0"): 0.0, _("about 1"): 1.0,
               _("about d = {d}").format(d=d): float(d)}
    if abs(var_before - 1.0) > 0.5 and abs(var_before - d) > 0.5 * d and var_before > 0.5:
        options[_("what it was before, {v}").format(v=number(var_before, 3))] = var_before
    choices = tuple(options)
    gaps = np.array([abs(var_standardised - v) for v in options.values()])
    answer = int(np.argmin(gaps))
    if not leads(float(np.sort(gaps)[1]), float(gaps[answer])):  # the nearest, clearly
        return None
    why = (_("var(x̂) = σ²/(σ² + ε) = **{v}**: a hair under 1, because of ε. Standardised, "
             "every row has mean 0 and variance ≈ 1, whatever its scale was; λ and b then "
             "rescale and shift each dimension, so the rows leave LayerNorm with the spread "
             "training chose.") if bias else
           _("var(x̂) = σ²/(σ² + ε) = **{v}**: a hair under 1, because of ε. Standardised, "
             "every row has mean 0 and variance ≈ 1, whatever its scale was; λ then rescales "
             "each dimension (this model has no shift b), so the rows leave LayerNorm with the "
             "spread training chose."))
    return Question(_("LayerNorm first standardises each row: x̂ = (x − μ)/√(σ² + ε). For the "
                      "last token's row (σ² = {v} before), what is the variance of x̂?").format(
                        v=number(var_before, 3)), choices, answer,
                    why.format(v=number(var_standardised, 6)),
                    basis=("layernorm", round(var_standardised, 6), round(var_before, 3), d))


def most_attended(weights: np.ndarray, labels: Sequence[str], layer: int, head: int
                  ) -> Question | None:
    """Which earlier token does the last token attend to most in this head? Asked when its
    weight leads the runner-up's by ``MARGIN``; the choices are tokens that read differently.

    >>> q = most_attended(np.array([0.1, 0.7, 0.2]), ["a", "b", "c"], 0, 1)
    >>> q.choices[q.answer]
    '1: “b”'
    >>> most_attended(np.array([0.1, 0.46, 0.44]), ["a", "b", "c"], 0, 1) is None
    True
    """
    w = np.asarray(weights, np.float64)  # (T,) row N-1 of W_attn
    if w.size < 2:
        return None
    order = [int(j) for j in np.argsort(-w, kind="stable")]
    best = order[0]
    if not leads(w[best], w[order[1]]):
        return None
    shown, read = [best], {labels[best].strip()}
    for j in [*order[1:3], 0, w.size - 1, *order[3:]]:  # the runners-up, the ends, the rest
        if len(shown) < 4 and labels[j].strip() not in read and UNK not in labels[j]:
            shown.append(j)
            read.add(labels[j].strip())
    shown.sort()
    choices = tuple(f"{j}: “{labels[j]}”" for j in shown)  # quoted: "22: “.”", not "22: ."
    if not fair(choices):
        return None
    top = ", ".join(f"{j}: “{md(labels[j])}” {number(w[j], 3)}" for j in order[:3])
    return Question(
        _("In layer {layer}, head {head}, the last token **“{token}”** spreads its attention "
          "over the tokens up to itself. Which one gets the largest weight?").format(
            layer=layer, head=head, token=md(labels[-1])), choices, shown.index(best),
        _("The largest weights of its row of {w}: {top}.").format(w="W_attn", top=top),
        basis=("attended", layer, head, labels[-1], choices))


def previous_token_head(patterns: np.ndarray, layer: int) -> Question | None:
    """Which head of a layer puts the most weight on the previous token, on average?

    Scored as the Attention page's head taxonomy scores it (``taxonomy.kind_scores``): the
    mean weight on key i−1 over the queries i = 2 … T−1, so both pages give the same numbers.
    Asked when the best head leads the next by ``MARGIN``.

    >>> p = np.stack([np.eye(4), np.eye(4, k=-1) + np.eye(4) * [[1], [0], [0], [0]]])
    >>> q = previous_token_head(p, 0); q.choices[q.answer]
    'head 1'
    """
    p = np.asarray(patterns, np.float64)  # (n_head, T, T)
    if p.shape[0] < 2 or p.shape[-1] < 3:
        return None
    t = p.shape[-1]
    score = kind_scores(torch.from_numpy(p)[None])["previous-token"][0].numpy()  # (n_head,)
    best, runner_up = (int(h) for h in np.argsort(-score, kind="stable")[:2])
    if not leads(score[best], score[runner_up]):
        return None
    scores = ", ".join(_("head {h}: {s}").format(h=h, s=number(s, 3))
                       for h, s in enumerate(score))
    return Question(
        _("A *previous-token head* sends each token's attention to the token just before it. "
          "Which head of layer {layer} does that most, on average over your prompt?").format(
            layer=layer), tuple(_("head {h}").format(h=h) for h in range(p.shape[0])), best,
        _("Mean weight on the previous token, w[i, i−1], over the queries i = 2 … {last} (as "
          "the Attention page's head taxonomy measures it): {scores}.").format(
            last=t - 1, scores=scores),
        basis=("previous-token", layer, tuple(round(float(x), 3) for x in score)))


def ffn_norm(before: float, after: float, layer: int, label: str) -> Question | None:
    """After the FFN adds its output, does the last token's residual vector grow or shrink?
    Asked when it does so by ``MARGIN`` or more.

    >>> ffn_norm(2.0, 3.5, 0, "a").choices
    ('it grows', 'it shrinks')
    """
    if not leads(max(before, after), min(before, after)):
        return None
    return Question(
        _("Block {layer}'s feed-forward network adds its output to the residual stream: "
          "x' = y + FFN(y). For the last token **“{token}”**, does the length ‖x'‖ grow or "
          "shrink compared with ‖y‖?").format(layer=layer, token=md(label)),
        (_("it grows"), _("it shrinks")), 0 if after > before else 1,
        _("‖y‖ = {before} before, ‖x'‖ = {after} after. Adding a vector can shorten another "
          "one when it points partly against it.").format(before=number(before, 3),
                                                          after=number(after, 3)),
        basis=("ffn", layer, label, round(before, 3), round(after, 3)))


def next_token(logits: np.ndarray, vocab: Sequence[str], label: str) -> Question | None:
    """Which of four candidates is the model's most likely next token? Asked when its
    probability leads the runner-up's by ``MARGIN``; the choices read differently.

    >>> q = next_token(np.array([0.1, 2.0, 1.5, -1.0, 0.3]), list("abcde"), "x")
    >>> q.choices[q.answer], len(q.choices)
    ('b', 4)
    >>> next_token(np.array([0.0, 1.0, 0.95]), list("abc"), "x") is None
    True
    """
    y = np.asarray(logits, np.float64)  # (|V|,)
    p = np.exp(y - y.max()) / np.exp(y - y.max()).sum()  # (|V|,) P at T = 1
    order = [int(i) for i in np.argsort(-y, kind="stable")[:40]]
    best = order[0]
    if len(order) < 2 or not leads(p[best], p[order[1]]):
        return None
    picked = [best]
    for i in order[1:]:  # distractors from the top ranks, none that looks like another
        if len(picked) < 4 and vocab[i].strip() not in {vocab[j].strip() for j in picked} \
                and UNK not in vocab[i]:
            picked.append(i)
    shown = sorted(picked)
    choices = tuple(vocab[i] for i in shown)  # tokens: never translated
    if not fair(choices):
        return None
    ranks = ", ".join(f"{md(vocab[i])} {percent(p[i])}" for i in picked)
    return Question(_("After **“{token}”**, which of these is the model's most likely next "
                      "token?").format(token=md(label)), choices, shown.index(best),
                    _("P(next) at T = 1 for these candidates: {ranks}.").format(ranks=ranks),
                    basis=("next", label, choices))


def short(x: float) -> str:
    """``x`` as ``{x:g}`` writes it, with the reader's decimal sign.

    >>> short(0.2), short(2.0)
    ('0.2', '2')
    """
    return f"{x:g}".replace(".", number(0.5, 1)[1])


def flatter(sharp_t: float, sharp_h: float, flat_t: float, flat_h: float) -> Question | None:
    """At two temperatures, which distribution is flatter (has the larger entropy)? Asked
    when one entropy leads the other by ``MARGIN``.

    >>> flatter(0.2, 0.5, 2.0, 3.1).answer
    1
    """
    if not leads(max(sharp_h, flat_h), min(sharp_h, flat_h)):
        return None
    a, b = short(sharp_t), short(flat_t)
    return Question(
        _("The same logits, divided by T = {a} or by T = {b} before the softmax. Which bar "
          "chart is flatter?").format(a=a, b=b), (f"T = {a}", f"T = {b}"),
        int(flat_h > sharp_h),
        _("Entropy H({pa}) = {ha} nats, H({pb}) = {hb} nats: the larger, the flatter. "
          "Dividing by a large T shrinks the gaps between logits, so the softmax evens them "
          "out.").format(pa=f"P_{a}", pb=f"P_{b}", ha=number(sharp_h, 3),
                         hb=number(flat_h, 3)),
        basis=("flatter", sharp_t, flat_t, round(sharp_h, 3), round(flat_h, 3)))
