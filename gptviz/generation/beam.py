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

Nothing here holds a |V|-sized array per position (GPT-2's logits for one 1,024-token window
alone take 206 MB): a pass that needs only y_N unembeds only the last position
(``last_only``), teacher forcing feeds the cache in pieces whose logits fit ``LOGIT_BYTES``,
and the cache holds only the positions the search can reach. When k rows of that cache
would pass ``KV_BYTES`` (GPT-2 small: 74 kB a position, so 8 beams of a 1,000-token text
take 600 MB; 3 beams fit a whole window, 8 about 440 positions), the beams keep no cache and
each step runs every beam's window afresh, one at a time: k passes over the text instead of
k new positions, the price of fitting a server a class shares (a RoPE model keeps its k
rolling rows).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from gptviz.generation.textcache import crop
from gptviz.i18n import _
from gptviz.model import GPT, KVCache

MAX_WIDTH = 8  # the widest search the app offers (any width up to |V| works here)
LOGIT_BYTES = 32 * 2**20  # float32 logits one forward pass may make (see the module's note)
KV_BYTES = 256 * 2**20  # keys and values the k beams may cache (see the module's note)


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
        raise ValueError(_("beam width must be a whole number >= 1 (1 is greedy), got "
                           "{width}.").format(width=width))
    if width > vocab_size:
        raise ValueError(_("beam width {width} is larger than the vocabulary (|V| = {v}): the "
                           "first step has only {v} tokens to keep. Choose a width from 1 to "
                           "{v}.").format(width=width, v=vocab_size))


@torch.no_grad()
def beam_search(model: GPT, ids: Sequence[int], max_new_tokens: int, width: int) -> Beams:
    """The ``width`` most probable continuations of ``ids``, ``max_new_tokens`` tokens each.

    Ties go to the lower beam, then the lower id, as ``argmax`` breaks them, so width 1
    writes exactly what ``generate(model, ids, n, temperature=0)`` writes.
    """
    check_width(width, model.config.vocab_size)
    if max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be >= 0, got {max_new_tokens}.")
    context, _ = crop(model, ids)
    model.check_ids(context)
    prompt = tuple(int(i) for i in ids)
    rope, n_ctx = model.config.rope, model.config.context_length
    seqs = torch.tensor([prompt], dtype=torch.long, device=model.device)  # (1, L)
    cache = _cache(model, len(prompt) + max_new_tokens)  # one row now; k after the first step
    afresh = not rope and width * cache.kv.nbytes > KV_BYTES  # k rows would not fit
    if afresh:
        cache = None  # each step runs every beam's window in turn
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
        best = top_indices(cand, width)  # (k,) ties: the lower index
        parents, tokens = best // logp.shape[1], best % logp.shape[1]  # (k,), (k,)
        scores = cand[best]
        steps.append(BeamStep(tuple(tokens.tolist()), tuple(parents.tolist()),
                              tuple(logp[parents, tokens].tolist()), tuple(scores.tolist())))
        if i == max_new_tokens - 1:
            break
        seqs = torch.cat([seqs[parents], tokens[:, None].to(seqs.device)], dim=1)  # (k, L+1)
        if afresh:  # each beam's window, in turn
            logits = torch.cat([_window(model, seq) for seq in seqs])  # (k, |V|)
            continue
        _follow(cache, parents)
        if rope or cache.length < n_ctx:
            logits = _last(model, seqs[:, -1:], cache)  # one new position per beam
        else:  # the window slid: every position moved, recompute it (as generate does)
            cache.reset()
            logits = _last(model, seqs[:, -n_ctx:], cache)
    return Beams(prompt, width, tuple(steps))


def _window(model: GPT, seq: Tensor) -> Tensor:
    """y_N (1, |V|) after the last context_length ids of one beam's text (L,), without a
    cache: a beam at a time when k rows would not fit."""
    return _last(model, seq[None, -model.config.context_length:], None)


def _follow(cache: KVCache, parents: Tensor) -> None:
    """Row b of the cache becomes the row of beam b's parent (rows may repeat)."""
    parents = parents.to(cache.kv.device)
    if cache.kv.shape[2] != len(parents):  # after the first step: k rows from the prompt's one
        cache.kv = cache.kv.index_select(2, parents)  # (L, 2, k, h, N, d_head)
    elif not torch.equal(parents, torch.arange(len(parents), device=parents.device)):
        for layer in cache.kv:  # a layer at a time: the copy in flight is 1/L of the cache
            filled = layer[:, :, :, : cache.length]  # (2, k, h, T, d_head)
            filled.copy_(filled.index_select(1, parents))


def top_indices(x: Tensor, k: int) -> Tensor:
    """The indices of the k largest entries of x (1-D), largest first, ties to the lower
    index: the first k of a stable descending sort, without sorting all of x.

    >>> top_indices(torch.tensor([1.0, 3.0, 2.0, 3.0, 0.0]), 3).tolist()
    [1, 3, 2]
    """
    kth = torch.topk(x, k).values[-1]
    above = (x > kth).nonzero().flatten()  # (a,) a < k
    chosen = torch.cat([above, (x == kth).nonzero().flatten()[: k - len(above)]]).sort().values
    if len(chosen) < k:  # NaNs: fall back to the full sort
        return x.sort(descending=True, stable=True).indices[:k]
    return chosen[x[chosen].sort(descending=True, stable=True).indices]  # (k,)


def _cache(model: GPT, total: int) -> KVCache:
    """A one-row cache for a text of ``total`` tokens: no more positions than it can use."""
    c = model.config
    capacity = min(c.context_length, total)  # past the window: a full (or rolling) window
    return KVCache(c.n_layer, 1, c.n_head, capacity, c.d_head, device=model.device,
                   dtype=model.embed.weight.dtype, rolling=c.rope)


def _pieces(model: GPT, batch: int) -> int:
    """Positions per forward pass so that batch × positions × |V| logits fit LOGIT_BYTES."""
    return max(1, LOGIT_BYTES // (4 * batch * model.config.vocab_size))


def _feed(model: GPT, ids: Tensor, cache: KVCache) -> Iterator[tuple[int, Tensor]]:
    """Run ids (B, T) through the cache a few positions at a time; yield (first position,
    logits (B, t, |V|)) of each piece."""
    n = _pieces(model, ids.shape[0])
    for s in range(0, ids.shape[1], n):
        yield s, model._forward(ids[:, s: s + n], cache)


def _last(model: GPT, ids: Tensor, cache: KVCache | None) -> Tensor:
    """y_N (B, |V|) float64 after feeding ids (B, T) to the cache (if any), in one pass that
    unembeds only the last position."""
    return model._forward(ids, cache, last_only=True)[:, -1].double().cpu()


def prefix_logits(model: GPT, prompt: Sequence[int], tokens: Sequence[int]) -> Tensor:
    """y_N before each of ``tokens`` after ``prompt`` (teacher forcing), as generation
    computes it: each token's context is cropped to the window (a RoPE model slides over
    the whole text, as ``generate`` does). Shape (len(tokens), |V|), float32; for a long
    text, ``prefix_rows`` gives the same rows a block at a time.

    >>> prefix_logits(model, [1, 2], [3, 4]).shape
    torch.Size([2, 10])
    >>> torch.allclose(prefix_logits(model, [1, 2], [3])[0], model([1, 2])[0, -1], atol=1e-6)
    True
    """
    rows = list(prefix_rows(model, prompt, tokens))
    return torch.cat(rows) if rows else torch.zeros(0, model.config.vocab_size)


@torch.no_grad()
def prefix_rows(model: GPT, prompt: Sequence[int], tokens: Sequence[int]
                ) -> Iterator[Tensor]:
    """``prefix_logits`` in order, as blocks (r, |V|) float32 of at most ~LOGIT_BYTES."""
    seq = [int(i) for i in prompt] + [int(t) for t in tokens]
    n_p, n_ctx = len(prompt), model.config.context_length
    crop(model, prompt)  # an empty prompt is an error
    vocab = model.config.vocab_size
    if bad := [t for t in seq if not 0 <= t < vocab]:
        raise ValueError(f"token id {bad[0]} is outside the vocabulary: valid ids are 0 to "
                         f"{vocab - 1}.")
    if not tokens:
        return
    x = torch.tensor([seq[:-1]], dtype=torch.long, device=model.device)  # (1, L-1)
    rope = model.config.rope
    cache = model.new_cache()
    # the first window: position j's logits predict token j + 1; keep those after the prompt
    for s, logits in _feed(model, x[:, :n_ctx], cache):
        keep = logits[0, max(0, n_p - 1 - s):]  # (t, |V|)
        if len(keep):
            yield keep.float().cpu()
    if rope:  # the cache rolls: every later token goes through it, one at a time
        for j in range(n_ctx, x.shape[1]):
            row = model._forward(x[:, j: j + 1], cache)[0]  # (1, |V|)
            if j >= n_p - 1:
                yield row.float().cpu()
        return
    later = range(max(n_ctx, n_p - 1), x.shape[1])  # positions past the first window
    # whole windows a pass runs: those whose logits would fit if every position were
    # unembedded, a bound on the pass's activations (only y_N is unembedded)
    batch = min(64, max(1, LOGIT_BYTES // (4 * n_ctx * vocab)))
    for k in range(0, len(later), batch):
        windows = torch.stack([x[0, j + 1 - n_ctx: j + 1] for j in later[k: k + batch]])
        yield model(windows, last_only=True)[:, -1].float().cpu()  # (B, |V|)


def next_logits(model: GPT, ids: Sequence[int]) -> Tensor:
    """y_N after ``ids`` (|V|,) float32, exactly as ``generate.step`` computes it (one pass
    over the last context_length ids that unembeds only the last position).

    >>> torch.allclose(next_logits(model, [1, 2]), model([1, 2])[0, -1], atol=1e-6)
    True
    """
    context, _ = crop(model, ids)
    with torch.no_grad():
        return model(context, last_only=True)[0, -1].float().cpu()


def token_logprobs(model: GPT, prompt: Sequence[int], tokens: Sequence[int]) -> Tensor:
    """log P(y_s | x, y_<s) of each token y_s of a continuation (T = 1, no filter); their
    sum is the text's score log P(y | x).

    >>> token_logprobs(model, [1, 2], [3, 4]).shape
    torch.Size([2])
    """
    logits = prefix_logits(model, prompt, tokens).double()  # (L, |V|)
    logp = torch.log_softmax(logits, dim=-1)  # (L, |V|)
    return logp[torch.arange(len(tokens)), torch.tensor(list(tokens), dtype=torch.long)]
