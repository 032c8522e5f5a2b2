"""Predict-then-reveal questions, built from the live model's numbers.

Each builder takes the numbers a step draws and returns a ``Question`` whose one right
answer is what the model computed, or None when the data allow no fair question (one
token, one head, or what ``fairness`` turns down: coin flips, choices that read alike).
Pure functions, no Streamlit: the tests rebuild every answer with torch and compare.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import torch

from gptviz.analysis.taxonomy import kind_scores
from gptviz.app.lesson.fairness import fair, leads
from gptviz.app.shared.chips import token_label
from gptviz.app.shared.tex import percent
from gptviz.tokenizers.base import TokenInfo
from gptviz.tokenizers.specials import UNK

_MARKDOWN = re.compile(r"([\\`*_{}\[\]<>#$~|])")


def md(s: str) -> str:
    r"""Text (a token, a word of the prompt) that Markdown shows as itself, math signs too.

    >>> md("a*b $x$ <i>")
    'a\\*b \\$x\\$ \\<i\\>'
    """
    return _MARKDOWN.sub(r"\\\1", s)


@dataclass(frozen=True)
class Question:
    """One multiple-choice question; ``answer`` indexes the model's answer in ``choices``.

    >>> q = Question("2 + 2?", ("3", "4"), 1, "It is 4."); q.right("4"), q.right("3")
    (True, False)
    """

    text: str  # Markdown
    choices: tuple[str, ...]
    answer: int
    why: str  # Markdown: the model's numbers that decide it

    def right(self, choice: str | None) -> bool:
        return choice == self.choices[self.answer]

    @property
    def key(self) -> str:
        """A fingerprint: a new prompt or model asks a new question, answered afresh."""
        raw = "\x1f".join([self.text, *self.choices])
        return hashlib.sha1(raw.encode("utf-8")).hexdigest()[:16]


def _numbers(answer: int, others: Sequence[int]) -> tuple[tuple[str, ...], int]:
    """Up to four distinct positive whole numbers, ascending, and where ``answer`` is.

    >>> _numbers(3, [1, 2, 4, 5, 7]), _numbers(23, [23_552])
    ((('1', '2', '3', '4'), 2), (('23', '23,552'), 0))
    """
    picked = [answer]
    for x in others:
        if x > 0 and x not in picked and len(picked) < 4:
            picked.append(x)
    picked.sort()
    return tuple(f"{x:,}" for x in picked), picked.index(answer)  # 23,552 as the text writes it


def _word(text: str, tokens: Sequence[TokenInfo]) -> tuple[str, list[TokenInfo]] | None:
    """The word of ``text`` cut into the most tokens (ties: the longest, then the first),
    and the tokens that cover it."""
    words = list(re.finditer(r"\w{2,}", text)) or list(re.finditer(r"\S+", text))
    if not words:
        return None

    def covering(m: re.Match) -> list[TokenInfo]:
        a, b = m.span()
        return [t for t in tokens if t.span[0] < b and t.span[1] > a]

    best = max(words, key=lambda m: (len(covering(m)), len(m.group()), -m.start()))
    return best.group(), covering(best)


def token_count(text: str, tokens: Sequence[TokenInfo]) -> Question | None:
    """How many of the model's tokens cover a word of the prompt (the one cut most)?

    >>> t = [TokenInfo(0, "Ste", b"Ste", (0, 3)), TokenInfo(1, "en", b"en", (3, 5))]
    >>> q = token_count("Steen", t); q.choices[q.answer]
    '2'
    """
    start = tokens[0].span[0] if tokens else 0  # the crop: only the tokens the model reads
    found = _word(text[start:], [replace(t, span=(t.span[0] - start, t.span[1] - start))
                                 for t in tokens])
    if found is None or len(found[0]) > 40:
        return None
    word, covering = found
    n = len(covering)
    choices, answer = _numbers(n, [1, n - 1, n + 1, len(word), n + 2])
    pieces = " | ".join(md(token_label(t)) for t in covering)
    return Question(f"How many tokens does this model's tokenizer make of the word "
                    f"**“{md(word)}”** in your prompt?", choices, answer,
                    f"The tokens that cover “{md(word)}” are {pieces}: **{n}**. A tokenizer "
                    "keeps whole the pieces it saw often while it was trained and splits "
                    "rarer words into smaller ones.")


def one_hot_ones(n_tokens: int, vocab_size: int, distinct: int) -> Question:
    """How many entries of the one-hot matrix are 1?

    >>> q = one_hot_ones(5, 100, 4); q.choices[q.answer], q.choices
    ('5', ('4', '5', '100', '500'))
    """
    choices, answer = _numbers(n_tokens, [distinct, vocab_size, n_tokens * vocab_size])
    return Question(f"The one-hot matrix OH has one row per token ({n_tokens}) and one column "
                    f"per vocabulary entry ({vocab_size:,}). How many of its entries are 1?",
                    choices, answer,
                    f"Exactly one 1 per row, in the column of that row's id: **{n_tokens}** "
                    f"ones among {n_tokens * vocab_size:,} entries. A token that appears twice "
                    "gives two identical rows.")


def position_or_token(e_norm: float, p_norm: float, positional: str) -> Question | None:
    """Which is longer on average: the token's embedding or its position vector? Asked only
    when one is longer than the other by ``MARGIN`` or more.

    >>> q = position_or_token(1.0, 3.0, "learned"); q.choices[q.answer]
    'the position p_i'
    >>> position_or_token(1.0, 1.05, "learned") is None
    True
    """
    choices = ("the token's embedding E[t_i]", "the position p_i")
    answer = int(p_norm > e_norm)
    if not leads(max(e_norm, p_norm), min(e_norm, p_norm)):
        return None
    extra = {"none": " This model adds no positions at all (p_i = 0), so the sum is the "
                     "embedding alone.",
             "rope": " This model adds nothing here (p_i = 0): it rotates queries and keys "
                     "by position inside attention instead (RoPE)."}.get(positional, "")
    return Question("Each token enters the model as x_i = E[t_i] + p_i. Averaged over your "
                    "prompt, which of the two vectors is longer?", choices, answer,
                    f"Mean length ‖E[t_i]‖ = {e_norm:.2f}, ‖p_i‖ = {p_norm:.2f}.{extra}")


def layernorm_variance(var_standardised: float, var_before: float, d: int,
                       bias: bool = True) -> Question | None:
    """After LayerNorm standardises a row (before λ and b), what is its variance?

    >>> q = layernorm_variance(0.99999, 4.2, 128); q.choices[q.answer]
    'about 1'
    """
    options = {"about 0": 0.0, "about 1": 1.0, f"about d = {d}": float(d)}
    if abs(var_before - 1.0) > 0.5 and abs(var_before - d) > 0.5 * d and var_before > 0.5:
        options[f"what it was before, {var_before:.3f}"] = var_before
    choices = tuple(options)
    gaps = np.array([abs(var_standardised - v) for v in options.values()])
    answer = int(np.argmin(gaps))
    if not leads(float(np.sort(gaps)[1]), float(gaps[answer])):  # the nearest, clearly
        return None
    return Question("LayerNorm first standardises each row: x̂ = (x − μ)/√(σ² + ε). For the "
                    f"last token's row (σ² = {var_before:.3f} before), what is the variance "
                    "of x̂?", choices, answer,
                    f"var(x̂) = σ²/(σ² + ε) = **{var_standardised:.6f}**: a hair under 1, "
                    "because of ε. Standardised, every row has mean 0 and variance ≈ 1, "
                    "whatever its scale was; "
                    + ("λ and b then rescale and shift each dimension, " if bias else
                       "λ then rescales each dimension (this model has no shift b), ")
                    + "so the rows leave LayerNorm with the spread training chose.")


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
    top = ", ".join(f"{j}: “{md(labels[j])}” {w[j]:.3f}" for j in order[:3])
    return Question(f"In layer {layer}, head {head}, the last token **“{md(labels[-1])}”** "
                    "spreads its attention over the tokens up to itself. Which one gets the "
                    "largest weight?", choices, shown.index(best),
                    f"The largest weights of its row of W_attn: {top}.")


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
    scores = ", ".join(f"head {h}: {s:.3f}" for h, s in enumerate(score))
    return Question(f"A *previous-token head* sends each token's attention to the token just "
                    f"before it. Which head of layer {layer} does that most, on average over "
                    "your prompt?", tuple(f"head {h}" for h in range(p.shape[0])), best,
                    f"Mean weight on the previous token, w[i, i−1], over the queries "
                    f"i = 2 … {t - 1} (as the Attention page's head taxonomy measures it): "
                    f"{scores}.")


def ffn_norm(before: float, after: float, layer: int, label: str) -> Question | None:
    """After the FFN adds its output, does the last token's residual vector grow or shrink?
    Asked when it does so by ``MARGIN`` or more.

    >>> ffn_norm(2.0, 3.5, 0, "a").choices
    ('it grows', 'it shrinks')
    """
    if not leads(max(before, after), min(before, after)):
        return None
    return Question(f"Block {layer}'s feed-forward network adds its output to the residual "
                    f"stream: x' = y + FFN(y). For the last token **“{md(label)}”**, does the "
                    "length ‖x'‖ grow or shrink compared with ‖y‖?",
                    ("it grows", "it shrinks"), 0 if after > before else 1,
                    f"‖y‖ = {before:.3f} before, ‖x'‖ = {after:.3f} after. Adding a vector can "
                    "shorten another one when it points partly against it.")


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
    choices = tuple(vocab[i] for i in shown)
    if not fair(choices):
        return None
    ranks = ", ".join(f"{md(vocab[i])} {percent(p[i])}" for i in picked)
    return Question(f"After **“{md(label)}”**, which of these is the model's most likely next "
                    "token?", choices, shown.index(best),
                    f"P(next) at T = 1 for these candidates: {ranks}.")


def flatter(sharp_t: float, sharp_h: float, flat_t: float, flat_h: float) -> Question | None:
    """At two temperatures, which distribution is flatter (has the larger entropy)? Asked
    when one entropy leads the other by ``MARGIN``.

    >>> flatter(0.2, 0.5, 2.0, 3.1).answer
    1
    """
    if not leads(max(sharp_h, flat_h), min(sharp_h, flat_h)):
        return None
    return Question(f"The same logits, divided by T = {sharp_t:g} or by T = {flat_t:g} "
                    "before the softmax. Which bar chart is flatter?",
                    (f"T = {sharp_t:g}", f"T = {flat_t:g}"), int(flat_h > sharp_h),
                    f"Entropy H(P_{sharp_t:g}) = {sharp_h:.3f} nats, H(P_{flat_t:g}) = "
                    f"{flat_h:.3f} nats: the larger, the flatter. Dividing by a large T "
                    "shrinks the gaps between logits, so the softmax evens them out.")
