"""Steps 11–14 of the lesson: from the last vector to the logits, P_T, one drawn token, and
the loop that writes text, drawn with the Block and Generation pages' builders."""

from __future__ import annotations

import numpy as np
import torch

from gptviz.analysis import core as analysis
from gptviz.app.block import figures as vb
from gptviz.app.generation import figures as gf
from gptviz.app.generation import formulas as gen_tex
from gptviz.app.generation.controls import token_info
from gptviz.app.lesson import formulas as lt
from gptviz.app.lesson import questions as q
from gptviz.app.lesson.run import FLAT_T, SHARP_T, TOP_P, Lesson, StepView
from gptviz.app.shared.tex import percent
from gptviz.generation import sampling as gen

TOP = 10  # candidates in the bar charts
LENS_TOP = 5  # guesses per row of the logit lens
CHAIN = 3  # lines of the seeds' "text ↦ candidates" display


def _logits(ls: Lesson) -> torch.Tensor:
    return torch.tensor(ls.logits, dtype=torch.float32)  # (|V|,) a copy: the cache's is shared


def logits(ls: Lesson) -> StepView:
    c, last = ls.config, ls.n - 1
    best = int(np.argmax(ls.logits))

    def lens():
        rows, ids, probs = analysis.logit_lens(ls.ckpt.model, ls.cache, LENS_TOP, last,
                                               include_input=True)
        return vb.logit_lens_figure(rows, [[ls.vocab[i] for i in row] for row in ids], probs)

    tied = ("the transposed embedding matrix, $W_U = E^\\top$: the model reads and writes "
            "tokens with the same vectors" if c.tie_embeddings else "a matrix of its own")
    narrative = (
        "To predict what comes next, the model uses the last token's vector only (the other "
        "rows served as keys and values along the way). A final LayerNorm, then a product with "
        f"the unembedding $W_U$ ({c.d_model} × {c.vocab_size:,}), {tied}, gives one score per "
        f"vocabulary entry, a *logit*: $y_N \\in \\mathbb{{R}}^{{{c.vocab_size}}}$. The larger "
        "the logit, the more the model expects that token. The table (the *logit lens*) applies "
        "the same final step after every block: the last row is the real prediction, the rows "
        "above show it taking shape.")
    return StepView(narrative, [ls.figure("logits", lens)], [lt.logits_formula(
        last, c.d_model, c.vocab_size, c.tie_embeddings, ls.vocab[best], best,
        float(ls.logits[best]))],
        ls.link("app_pages/block.py", "Transformer block", "Residual stream and logit lens",
                layer=ls.layer, head=ls.head),
        caption="Each cell is a guessed token, coloured by its probability.",
        question=q.next_token(ls.logits, ls.vocab, ls.labels[-1]))


def _panels(ls: Lesson) -> list[tuple[float, np.ndarray, float]]:
    def compute() -> list[tuple[float, np.ndarray, float]]:
        y = _logits(ls)
        out = []
        for t in sorted({SHARP_T, float(ls.temperature), FLAT_T}):
            p = gen.next_token_probs(y, t)  # (|V|,)
            out.append((t, p.numpy(), gen.entropy(p)))
        return out

    return ls.result("temperature-panels", compute)  # 3 × |V| softmaxes: once per prompt


def _temperatures(T: float, shown: list[float]) -> str:
    """The panels' temperatures in the order drawn, the reader's own marked.

    >>> _temperatures(0.0, [0.0, 0.2, 2.0]), _temperatures(2.0, [0.2, 2.0])
    ('your $T = 0$, $T = 0.2$ and $T = 2$', '$T = 0.2$ and your $T = 2$')
    """
    names = [("your " if t == T else "") + f"$T = {t:g}$" for t in shown]
    return ", ".join(names[:-1]) + " and " + names[-1]


def temperature(ls: Lesson) -> StepView:
    c, T = ls.config, ls.temperature
    panels = _panels(ls)
    fig = ls.figure("temperatures", lambda: gf.temperature_panels(ls.vocab, panels, ls.logits,
                                                                  k=TOP))
    best = int(np.argmax(ls.logits))
    y = _logits(ls).double()
    log_z = float(torch.logsumexp(y / T, 0)) if T > 0 else 0.0
    p_t = next(p for t, p, _ in panels if t == T)  # (|V|,)
    narrative = (
        "Logits are not probabilities: they can be negative and do not add up to 1. Divide "
        "them by a *temperature* $T$ and take the softmax, $P_T(i) = e^{y_i/T} / \\sum_j "
        "e^{y_j/T}$: every entry becomes positive and they sum to 1. A small $T$ widens the "
        "gaps (as $T \\to 0$ all the mass goes to the largest logit), a large $T$ evens them "
        f"out (as $T \\to \\infty$, towards uniform over all {c.vocab_size:,} tokens). The "
        f"panels show the same logits at {_temperatures(T, [t for t, _, _ in panels])}, with "
        "their entropy $H$ in nats.")
    h = {t: e for t, _, e in panels}
    return StepView(narrative, [fig], [gen_tex.pt_formula(
        ls.vocab[best], best, float(ls.logits[best]), T, log_z, float(p_t[best]), c.vocab_size,
        c.vocab_size)],
        ls.link("app_pages/generation.py", "Generation", "Three temperatures",
                temperature=f"{T:g}", gen_temps=[f"{t:g}" for t, _, _ in panels]),
        caption="The same ten candidates in every panel: the ten largest logits.",
        question=q.flatter(SHARP_T, h[SHARP_T], FLAT_T, h[FLAT_T]))


def _generation_link(ls: Lesson, view: str):
    """The Generation page on this lesson's draw: T, top-p and seed as the lesson draws."""
    return ls.link("app_pages/generation.py", "Generation", view,
                   temperature=f"{ls.temperature:g}", top_p=f"{TOP_P:g}", seed=ls.seed)


def draw(ls: Lesson) -> StepView:
    T = ls.temperature
    drawn, kept_p = ls.drawn(1)  # (|V|,) P', the top-p set's P_T renormalised
    first = drawn[0]
    chosen = first.chosen
    p_t = gen.next_token_probs(_logits(ls), T).numpy()  # (|V|,) P_T, nothing cut
    prob, rank = float(p_t[chosen]), 1 + int((p_t > p_t[chosen]).sum())
    kept = int((kept_p > 0).sum())
    k = max(1, min(TOP, kept))  # T = 0 keeps one: no bars of ids at 0 %
    cut = T > 0 and kept < len(kept_p)  # top-p left tokens out: the draw is from P'
    sym = "P'" if cut else "P_T"
    title = (f"top {k} of P′, T = {T:g}, top-p {TOP_P:g}" if cut else
             f"top {k} of P<sub>T</sub>, T = {T:g}")
    fig = ls.figure("draw", lambda: gf.topk_bars(ls.vocab, kept_p, chosen, ls.logits, k=k,
                                                 title=title))
    if T == 0:
        how = ("At $T = 0$ the model simply takes the most likely token (*greedy* decoding), "
               "so the same prompt always gives the same text.")
    else:
        mass = float(p_t[kept_p > 0].sum())
        how = (f"At $T = {T:g}$ it draws one **at random**, so a less likely token sometimes "
               "wins, which keeps the text varied. To keep the long tail of unlikely tokens "
               f"out, the lesson draws with *top-p* = {TOP_P:g}: only the {kept:,} most probable "
               f"tokens, the fewest whose probabilities reach {TOP_P:.0%} ({100 * mass:.1f} % "
               "here), can be drawn, their probabilities rescaled to add up to 1 ($P'$). The "
               f"random generator starts from a *seed* ({ls.seed}): the same seed draws the "
               "same token every time, here and on the Generation page; *Draw again* takes a "
               "new seed and so, often, another token.")
    narrative = (
        f"Now one token is chosen. {how} Here the model chose **“{q.md(ls.vocab[chosen])}”**: "
        f"probability {percent(prob)} under $P_T$, rank {rank} of {len(p_t):,}"
        + (f" ({percent(float(kept_p[chosen]))} among the {kept:,} kept)."
           if cut else "."))
    return StepView(narrative, [fig], [lt.draw_formula(T, ls.vocab[chosen], chosen, prob,
                                                       ls.seed, rank, float(kept_p[chosen]),
                                                       kept if cut else None, TOP_P),
                                       gen_tex.entropy_formula(first.entropy, sym)],
                    _generation_link(ls, "This step"),
                    caption="The chosen token is orange (◀ chosen).", redraw=T > 0)


def repeat(ls: Lesson) -> StepView:
    c, tok = ls.config, ls.ckpt.tokenizer
    drawn, _ = ls.drawn()
    new = [d.chosen for d in drawn]
    prompt_ids = [t.id for t in ls.prompt.all_tokens]
    ids = prompt_ids + new
    tokens = ls.prompt.all_tokens + [token_info(tok, i) for i in new]
    html = gf.sequence_chips_html(tokens, len(prompt_ids), max(0, len(tokens) - c.context_length))
    lines = []
    for k, d in enumerate(drawn[:CHAIN]):
        pieces = gen_tex.chain_pieces([tok.id_to_bytes(i) for i in ids[:d.n_ids]], k > 0)
        candidates = [(gen_tex.token_text(tok.id_to_bytes(i)), p) for i, p in d.top[:4]
                      if p > 0]
        lines.append(gen_tex.mapsto_line(pieces, d.cropped, k > 0, candidates, continued=k > 0))
    narrative = (
        "The chosen token is appended to the text, and the whole computation runs again on the "
        "longer text, from the tokens to a new draw: that loop is all *generation* is. Each new "
        f"token costs one more pass through the model; once the text is longer than the "
        f"context window ({c.context_length} tokens; the $N$ of the first step counted your "
        f"prompt), the oldest tokens are cut. Below, the model "
        f"writes {len(new)} tokens this way (outlined chips). The lines show the first steps "
        "as the seeds write them: the text the model reads ↦ its most likely next tokens.")
    return StepView(narrative, [html], lines, _generation_link(ls, "This step"),
                    caption="The boxed token is the one just appended; the underline is what "
                            "the model reads.", redraw=ls.temperature > 0)
