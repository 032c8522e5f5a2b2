r"""The most probable text of n tokens, found exactly: a check on beam search.

Beam search keeps the k best *prefixes* at every step, so the text it ends with need not be

    y* = argmax_{y_1 … y_n} log P(y_1 … y_n | x) = argmax_y Σ_t log P(y_t | x, y_<t):

a prefix that ranks below k at step t can still grow into the best whole text.

``most_probable`` finds y* by a best-first search over the tree of continuations, pruned by
a text already known (the beam's): a log-probability only goes down as a text grows
(every term log P(y_t | …) ≤ 0), so a prefix whose log P is already below the known text's
score can never end above it, and its whole subtree is dropped. The open prefix of largest
log P is extended first (one forward pass gives all |V| of its children); a complete text
that beats the known one becomes the new bound. When the best open prefix is no better than
the bound, nothing left can win and the bound's text is y*.

The search is capped in nodes, two ways: it keeps at most ``MAX_NODES`` prefixes above the
bound (the memory of the search), and it extends at most as many as ``MAX_WORK``
multiply-adds of the model allow (its time: about ten thousand prefixes for the bundled
models while the text fits their window, a few dozen for GPT-2 small). At either cap it
stops and says that it could not check.

While the text fits the context window, the prompt's keys and values are computed once,
and so are those of a prefix's last token when the prefix is extended: a prefix then runs
its last token alone, on top of the prompt's and its ancestors' keys and values. Past the
window, a model with learned or sinusoidal positions runs each prefix's last window afresh
(as beam search and generation do), and a RoPE model, whose rolling cache keeps keys
computed in earlier windows, is not checked.

The log-probabilities are computed as ``beam.beam_search`` computes them (float32 logits of
the last position, log-softmax in float64), so the two scores compare.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from gptviz.generation.beam import KV_BYTES, LOGIT_BYTES
from gptviz.generation.textcache import crop
from gptviz.i18n import N_, _, number
from gptviz.model import GPT, KVCache

MAX_NODES = 20_000  # prefixes the search may keep above the bound before it gives up
MAX_WORK = 10**10  # multiply-adds of the model the prefixes it extends may cost
FLOOR = 10**6  # ... counting a position as at least this many (a tiny model's overheads)
MAX_BATCH = 256  # prefixes one forward pass extends (fewer with a large model: KV_BYTES)


@dataclass(frozen=True)
class Exact:
    """What the exact search found.

    ``tokens`` and ``score`` are the most probable n-token text and its log P, or the known
    text's when nothing beats it; both None when the search did not finish (``reason`` says
    why). ``nodes`` counts the prefixes kept, ``expanded`` those run through the model.

    >>> Exact(None, None, 0, 5, N_("the search reached its cap of {n} prefixes kept"),
    ...       (("n", 20_000),), capped=True).reason
    'the search reached its cap of 20,000 prefixes kept'
    """

    tokens: tuple[int, ...] | None
    score: float | None
    nodes: int
    expanded: int
    why: str | None = None  # why it was not checked, in English; None when it was
    facts: tuple[tuple[str, int], ...] = ()  # the numbers ``why`` names
    capped: bool = False  # not checked because a cap was reached (fewer tokens may fit)

    @property
    def checked(self) -> bool:
        return self.why is None

    @property
    def reason(self) -> str | None:
        """Why it was not checked, in the reader's language, worded when read: one result
        cached for every session gives each its own."""
        if self.why is None:
            return None
        return _(self.why).format(**{k: number(v, 0, grouping=True) for k, v in self.facts})


@torch.no_grad()
def most_probable(model: GPT, ids: Sequence[int], n: int, known: Sequence[int],
                  known_score: float, max_nodes: int = MAX_NODES,
                  max_work: int = MAX_WORK) -> Exact:
    """The most probable continuation of ``ids`` of exactly n tokens, searched best-first
    and pruned by ``known`` (n tokens, log P = ``known_score``, e.g. the beam's text).

    A text must beat ``known_score`` to replace it; ties keep ``known``.

    >>> found = most_probable(model, [1, 2], 2, [0, 0], -100.0)
    >>> found.checked, len(found.tokens), found.score > -100.0
    (True, 2, True)
    """
    if n < 1:
        raise ValueError(f"the text needs at least 1 token, got n = {n}.")
    if len(known) != n:
        raise ValueError(f"the known text has {len(known)} tokens, not n = {n}.")
    context, _ = crop(model, ids)
    model.check_ids(context)
    runner = _Runner(model, ids, n)
    if runner.refused:
        return Exact(None, None, 0, 0, *runner.refused)
    best, best_score = tuple(int(t) for t in known), float(known_score)
    root = runner.logprobs([()])[0]  # (|V|,)
    expanded, work = 1, runner.cost(0)
    if n == 1:
        top = int(root.argmax())
        if float(root[top]) > best_score:
            best, best_score = (top,), float(root[top])
        return Exact(best, best_score, 1, 1)
    kept = torch.nonzero(root > best_score).flatten().tolist()
    if len(kept) > max_nodes:
        return _capped(KEPT, max_nodes, expanded)
    # (−log P, prefix): the heap pops the largest log P first
    heap = [(-float(root[t]), (t,)) for t in kept]
    heapq.heapify(heap)
    nodes = len(heap)
    while heap and -heap[0][0] > best_score:
        batch = []
        while heap and len(batch) < runner.batch and -heap[0][0] > best_score:
            batch.append(heapq.heappop(heap))
        by_depth: dict[int, list[tuple[float, tuple[int, ...]]]] = {}
        for item in batch:
            by_depth.setdefault(len(item[1]), []).append(item)
        for depth, items in sorted(by_depth.items()):
            work += len(items) * runner.cost(depth)
            if work > max_work:
                return _capped(EXTENDED, expanded, expanded)
            rows = runner.logprobs([p for _, p in items], keep=depth < n - 1)  # (B, |V|)
            expanded += len(items)
            scores = rows + torch.tensor([-neg for neg, _ in items],
                                         dtype=torch.float64)[:, None]  # (B, |V|)
            if depth == n - 1:  # the children are whole texts: only the best can matter
                b, t = divmod(int(scores.argmax()), scores.shape[1])
                if float(scores[b, t]) > best_score:
                    best, best_score = items[b][1] + (t,), float(scores[b, t])
                continue
            kept = torch.nonzero(scores > best_score).tolist()
            if nodes + len(kept) > max_nodes:
                return _capped(KEPT, max_nodes, expanded)
            for b, t in kept:
                heapq.heappush(heap, (-float(scores[b, t]), items[b][1] + (t,)))
            nodes += len(kept)
    return Exact(best, best_score, nodes, expanded)


KEPT = N_("the search reached its cap of {n} prefixes kept")
EXTENDED = N_("the search reached its cap of {n} prefixes extended (as many as a model of "
              "this size may run here)")


def _capped(why: str, n: int, expanded: int) -> Exact:
    return Exact(None, None, 0, expanded, why, (("n", n),), capped=True)


class _Runner:
    """log P(· | x, prefix) for prefixes of one length at a time, as generation computes
    it. While the text fits the window, the prompt's keys and values are computed once, and
    so are those of each prefix's last token when the prefix is extended: a prefix runs its
    last token alone on top of the prompt's and its ancestors' (one position a prefix).
    Past the window (learned or sinusoidal positions), each prefix's last window runs
    afresh. ``refused`` says why a text cannot be checked."""

    def __init__(self, model: GPT, ids: Sequence[int], n: int) -> None:
        c = model.config
        self.model, self.ids = model, [int(i) for i in ids]
        context, _ = crop(model, ids)
        self.length, self.n_ctx = len(context), c.context_length
        self.slides = self.length + n - 1 > self.n_ctx
        self.refused: tuple[str, tuple[tuple[str, int], ...]] | None = None  # why, facts
        if self.slides and c.rope:
            self.refused = (N_("the prompt and {more} more tokens pass the context window of "
                               "{n_ctx} tokens, and this model's rolling RoPE cache keeps keys "
                               "from earlier windows"), (("more", n - 1), ("n_ctx", self.n_ctx)))
        blocks = sum(p.numel() for p in model.blocks.parameters())
        self.per_position, self.per_row = max(blocks, FLOOR), c.d_model * c.vocab_size
        self.cache = KVCache(c.n_layer, 1, c.n_head, self.length, c.d_head,
                             device=model.device, dtype=model.embed.weight.dtype,
                             rolling=c.rope)
        x = torch.tensor([context], dtype=torch.long, device=model.device)  # (1, P)
        self.root = model._forward(x, self.cache, last_only=True)[:, -1].double().cpu()
        self.last: dict[tuple[int, ...], torch.Tensor] = {}  # prefix -> (L, 2, h, d_head)
        row = self.cache.kv.nbytes * (self.length + n) // self.length  # a row's keys, values
        fresh = 4 * self.n_ctx * c.vocab_size  # as beam.prefix_rows bounds a window's pass
        self.batch = max(1, min(MAX_BATCH, KV_BYTES // row, LOGIT_BYTES // fresh)
                         if self.slides else min(MAX_BATCH, KV_BYTES // row))

    def cost(self, depth: int) -> int:
        """Multiply-adds (about) of extending one prefix of ``depth`` tokens."""
        positions = self.n_ctx if self.slides and depth else (1 if depth else self.length)
        return positions * self.per_position + self.per_row

    def logprobs(self, prefixes: list[tuple[int, ...]], keep: bool = False) -> torch.Tensor:
        """log P(· | x, prefix) (B, |V|) float64 for prefixes all of one length; with
        ``keep``, each prefix's last keys and values are kept for its children."""
        if prefixes == [()]:
            return torch.log_softmax(self.root, dim=-1)  # (1, |V|)
        device = self.model.device
        if self.slides:
            windows = [(self.ids + list(p))[-self.n_ctx:] for p in prefixes]
            x = torch.tensor(windows, dtype=torch.long, device=device)  # (B, N)
            logits = self.model._forward(x, None, last_only=True)[:, -1]
            return torch.log_softmax(logits.double().cpu(), dim=-1)  # (B, |V|)
        kv, p_len = self.cache.kv, self.length  # (L, 2, 1, h, P, d_head)
        b, d = len(prefixes), len(prefixes[0])
        cache = KVCache(kv.shape[0], b, kv.shape[3], p_len + d, kv.shape[5],
                        device=kv.device, dtype=kv.dtype, rolling=self.cache.rolling)
        cache.kv[:, :, :, :, :p_len] = kv
        for j in range(d - 1):  # the ancestors' last tokens, kept when they were extended
            cache.kv[:, :, :, :, p_len + j] = torch.stack(
                [self.last[p[:j + 1]] for p in prefixes], dim=2)  # (L, 2, B, h, d_head)
        cache.length = cache.position = p_len + d - 1
        x = torch.tensor([[p[-1]] for p in prefixes], dtype=torch.long, device=device)
        logits = self.model._forward(x, cache, last_only=True)[:, -1]  # (B, |V|)
        if keep:
            new = cache.kv[:, :, :, :, p_len + d - 1]  # (L, 2, B, h, d_head)
            for i, p in enumerate(prefixes):
                self.last[p] = new[:, :, i].clone()
        return torch.log_softmax(logits.double().cpu(), dim=-1)  # (B, |V|)
