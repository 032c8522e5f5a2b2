r"""Beam search (seed 001): keep the k most probable texts at every step, not just one.

Greedy decoding appends the argmax at every step. The most probable *text* is another
thing (seed 001):

    argmax_y Π_t p(y_t | y_<t, x)  ≠  Π_t argmax_y p(y_t | y_<t, x).

Beam search of width k keeps the k partial texts y_{1:t} with the largest score

    score(y_{1:t}) = log P(y_{1:t} | x) = Σ_{s=1}^{t} log P(y_s | x, y_{<s}),

extends each by every token of V, and keeps the k best of the k·|V| candidates.
Width 1 keeps only the argmax: it is greedy decoding.

No length normalisation: every beam holds exactly t tokens after step t (no beam ends
early here), so dividing the scores by t^α would scale them all alike and change no
choice (it matters only when beams that stopped at an end token compete with longer ones).

The k beams run as one batch, one forward pass per step, over a KV cache whose rows
follow the beams that survive (``KVCache.kv`` re-indexed by each beam's parent). The
context window is handled as ``generate.generate`` handles it, so width 1 reproduces it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from gptviz.generate import _context
from gptviz.model import GPT, KVCache

MAX_WIDTH = 8  # the widest search the app offers (any width up to |V| works here)


@dataclass(frozen=True)
class BeamStep:
    """The beams after one step, best first (index b is beam b's rank)."""

    tokens: tuple[int, ...]  # (k,) the token beam b appended at this step
    parents: tuple[int, ...]  # (k,) the beam of the previous step that beam b extends
    logprobs: tuple[float, ...]  # (k,) log P(token | x, the text of its parent beam)
    scores: tuple[float, ...]  # (k,) log P of beam b's whole new text: sorted, largest first


@dataclass(frozen=True)
class Beams:
    """A whole search: the prompt and every step's beams (the search shows its work).

    >>> b = beam_search(model, [1, 2], 3, width=2)
    >>> len(b.steps), len(b.tokens(2, 0)), b.best[:2]
    (3, 3, [1, 2])
    """

    prompt: tuple[int, ...]
    width: int
    steps: tuple[BeamStep, ...]

    def tokens(self, t: int, b: int) -> list[int]:
        """The tokens beam b holds after step t (both from 0), following its parents back."""
        out = []
        for step in reversed(self.steps[: t + 1]):
            out.append(step.tokens[b])
            b = step.parents[b]
        return out[::-1]

    def lineage(self, t: int, b: int) -> list[int]:
        """The rank at steps 0 … t of the beams that beam b of step t grew from."""
        ranks = [b]
        for step in reversed(self.steps[1: t + 1]):
            ranks.append(step.parents[ranks[-1]])
        return ranks[::-1]

    @property
    def best(self) -> list[int]:
        """The prompt and the most probable text found (beam 0 of the last step)."""
        last = len(self.steps) - 1
        return list(self.prompt) + (self.tokens(last, 0) if self.steps else [])


def check_width(width: int, vocab_size: int) -> None:
    """Raise ValueError unless 1 <= width <= |V|.

    >>> check_width(9, 5)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: beam width 9 is larger than the vocabulary (|V| = 5): ... from 1 to 5.
    """
    if isinstance(width, bool) or not isinstance(width, int) or width < 1:
        raise ValueError(f"beam width must be a whole number >= 1 (1 is greedy), got {width}.")
    if width > vocab_size:
        raise ValueError(f"beam width {width} is larger than the vocabulary (|V| = {vocab_size}):"
                         f" the first step has only {vocab_size} tokens to keep. Choose a width "
                         f"from 1 to {vocab_size}.")


@torch.no_grad()
def beam_search(model: GPT, ids: Sequence[int], max_new_tokens: int, width: int) -> Beams:
    """The ``width`` most probable continuations of ``ids``, ``max_new_tokens`` tokens each.

    Ties go to the lower beam, then the lower id, as ``argmax`` breaks them, so width 1
    writes exactly what ``generate(model, ids, n, temperature=0)`` writes.
    """
    check_width(width, model.config.vocab_size)
    if max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be >= 0, got {max_new_tokens}.")
    context, _ = _context(model, ids)
    model.check_ids(context)
    prompt = tuple(int(i) for i in ids)
    rope, n_ctx = model.config.positional == "rope", model.config.context_length
    seqs = torch.tensor([prompt], dtype=torch.long, device=model.device)  # (1, L)
    cache = model.new_cache()  # one row for the prompt; k rows after the first step
    if rope:  # as generate: the first window at once, then one token at a time (it rolls)
        logits = _last(model, seqs[:, :n_ctx], cache)
        for j in range(n_ctx, seqs.shape[1]):
            logits = _last(model, seqs[:, j: j + 1], cache)
    else:
        logits = _last(model, seqs[:, -n_ctx:], cache)  # (1, |V|)
    scores = torch.zeros(1, dtype=torch.float64)  # (B,) log P of each beam's text so far
    steps = []
    for i in range(max_new_tokens):
        logp = torch.log_softmax(logits, dim=-1)  # (B, |V|) log P(i | x, beam b)
        cand = (scores[:, None] + logp).flatten()  # (B·|V|,) every beam × every token
        best = cand.sort(descending=True, stable=True).indices[:width]  # (k,) ties: low index
        parents, tokens = best // logp.shape[1], best % logp.shape[1]  # (k,), (k,)
        scores = cand[best]
        steps.append(BeamStep(tuple(tokens.tolist()), tuple(parents.tolist()),
                              tuple(logp[parents, tokens].tolist()), tuple(scores.tolist())))
        if i == max_new_tokens - 1:
            break
        seqs = torch.cat([seqs[parents], tokens[:, None].to(seqs.device)], dim=1)  # (k, L+1)
        _follow(cache, parents)
        if rope or cache.length < n_ctx:
            logits = _last(model, seqs[:, -1:], cache)  # one new position per beam
        else:  # the window slid: every position moved, recompute it (as generate does)
            cache.reset()
            logits = _last(model, seqs[:, -n_ctx:], cache)
    return Beams(prompt, width, tuple(steps))


def _follow(cache: KVCache, parents: Tensor) -> None:
    """Row b of the cache becomes the row of beam b's parent (rows may repeat)."""
    parents = parents.to(cache.kv.device)
    if cache.kv.shape[2] != len(parents):  # after the first step: k rows from the prompt's one
        cache.kv = cache.kv.index_select(2, parents)  # (L, 2, k, h, N, d_head)
    elif not torch.equal(parents, torch.arange(len(parents), device=parents.device)):
        filled = cache.kv[:, :, :, :, : cache.length]  # (L, 2, k, h, T, d_head)
        filled.copy_(filled.index_select(2, parents))


def _last(model: GPT, ids: Tensor, cache: KVCache | None) -> Tensor:
    return model._forward(ids, cache)[:, -1].double().cpu()  # (B, |V|) float64


@torch.no_grad()
def prefix_logits(model: GPT, prompt: Sequence[int], tokens: Sequence[int]) -> Tensor:
    """y_N before each of ``tokens`` after ``prompt`` (teacher forcing), as generation
    computes it: each token's context is cropped to the window (a RoPE model slides over
    the whole text, as ``generate`` does). Shape (len(tokens), |V|), float32.

    >>> prefix_logits(model, [1, 2], [3, 4]).shape
    torch.Size([2, 10])
    >>> torch.allclose(prefix_logits(model, [1, 2], [3])[0], model([1, 2])[0, -1], atol=1e-6)
    True
    """
    seq = [int(i) for i in prompt] + [int(t) for t in tokens]
    n_p, n_ctx = len(prompt), model.config.context_length
    _context(model, prompt)  # an empty prompt is an error
    vocab = model.config.vocab_size
    if bad := [t for t in seq if not 0 <= t < vocab]:
        raise ValueError(f"token id {bad[0]} is outside the vocabulary: valid ids are 0 to "
                         f"{vocab - 1}.")
    if not tokens:
        return torch.zeros(0, vocab)
    ends = range(n_p, len(seq))  # token s is read after the ids seq[:end], end = n_p + s
    x = torch.tensor([seq[:-1]], dtype=torch.long)  # (1, L-1)
    if model.config.positional == "rope":  # one window at once, then token by token
        cache = model.new_cache()
        rows = list(model(x[:, :n_ctx], cache)[0])  # position j's logits predict token j+1
        rows += [model(x[:, j: j + 1], cache)[0, -1] for j in range(n_ctx, x.shape[1])]
        return torch.stack(rows[n_p - 1:]).float().cpu()  # (len(tokens), |V|)
    rows = []
    first = [e for e in ends if e <= n_ctx]  # contexts inside the first window: one pass
    if first:
        out = model(x[:, : first[-1]])[0]  # (T, |V|)
        rows += [out[e - 1] for e in first]
    later = [e for e in ends if e > n_ctx]  # one full window each, batched
    for k in range(0, len(later), 64):
        windows = torch.tensor([seq[e - n_ctx: e] for e in later[k: k + 64]])  # (B, N)
        rows += list(model(windows)[:, -1])
    return torch.stack(rows).float().cpu()  # (len(tokens), |V|)


def token_logprobs(model: GPT, prompt: Sequence[int], tokens: Sequence[int]) -> Tensor:
    """log P(y_s | x, y_<s) of each token y_s of a continuation (T = 1, no filter); their
    sum is the text's score log P(y | x).

    >>> token_logprobs(model, [1, 2], [3, 4]).shape
    torch.Size([2])
    """
    logits = prefix_logits(model, prompt, tokens).double()  # (L, |V|)
    logp = torch.log_softmax(logits, dim=-1)  # (L, |V|)
    return logp[torch.arange(len(tokens)), torch.tensor(list(tokens), dtype=torch.long)]
