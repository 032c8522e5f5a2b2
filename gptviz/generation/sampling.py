"""Generation: P_T(i) = softmax(y_N / T)_i, filtered by top-k, top-p and min-p, then sampled.

``step`` shows the work of one step as data (cropped context, logits,
probabilities, top candidates, chosen id, entropy); ``generate`` runs many
steps, with a KV cache by default, and gives the same tokens as without one.
``textcache.TextCache`` gives ``step`` that cache for a text that grows, shrinks and
branches (the Generation page's Next token, Undo and branches, the Lesson's continuation).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from gptviz.generation.textcache import TextCache, crop
from gptviz.i18n import _
from gptviz.model import GPT, KVCache
from gptviz.model.decode import Decoder
from gptviz.tokenizers.base import Tokenizer
from gptviz.tokenizers.specials import BOS


@dataclass
class Step:
    """One generation step, as the Generation page draws it."""

    context: list[int]  # the ids the model saw: the last context_length of the sequence
    cropped: int  # how many earlier ids were dropped to fit the context window
    logits: Tensor  # (|V|,) y_N, the last position's logits
    probs: Tensor  # (|V|,) P_T after top-k / top-p (what was sampled from)
    top: list[tuple[int, float]]  # the most probable (id, probability), best first
    chosen: int  # the sampled (or greedy) id
    entropy: float  # H(P_T) in nats; 0 means certain


@dataclass(frozen=True)
class Sampling:
    """How one step turns y_N into a token, and the one seeding rule of every generator.

    Step i (counted from 0 after the prompt) draws with a generator seeded by
    ``(seed + 1) * 1_000_003 + i``, so the same seed writes the same text whether the
    tokens come from ``generate``, from n clicks of "Next token" or one "Generate n",
    and "Undo" then "Next token" draws the same token again.
    """

    temperature: float = 1.0  # T; 0 means greedy (argmax)
    top_k: int | None = None  # keep the k most probable ids; None keeps all
    top_p: float | None = None  # keep the smallest set with mass >= top_p; None keeps all
    seed: int = 0  # step i draws with torch.Generator seeded by (seed, i)
    min_p: float | None = None  # keep ids with P_T >= min_p · max P_T; None (or 0) keeps all

    @property
    def greedy(self) -> bool:
        return self.temperature == 0

    def generator(self, i: int) -> torch.Generator | None:
        """The generator of step i (None when greedy: nothing is drawn).

        >>> Sampling(seed=1).generator(0).initial_seed()
        2000006
        """
        if self.greedy:
            return None
        return torch.Generator().manual_seed((self.seed + 1) * 1_000_003 + i)


def check_sampling(temperature: float, top_k: int | None, top_p: float | None,
                   min_p: float | None = None) -> None:
    """Raise ValueError for settings that define no distribution."""
    if not isinstance(temperature, (int, float)) or math.isnan(temperature) or temperature < 0:
        raise ValueError(f"temperature must be >= 0 (0 means greedy), got {temperature}.")
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1):
        raise ValueError(f"top_k must be a whole number >= 1 (or None for no limit), got {top_k}.")
    if top_p is not None and not 0 < top_p <= 1:
        raise ValueError(f"top_p must be in (0, 1] (1 keeps everything), got {top_p}.")
    if min_p is not None and (isinstance(min_p, bool) or not isinstance(min_p, (int, float))
                              or not 0 <= min_p <= 1):  # NaN fails both comparisons
        raise ValueError(f"min_p must be in [0, 1] (0 keeps every token, 1 only the most "
                         f"probable), got {min_p}.")


def next_token_probs(logits: Tensor, temperature: float = 1.0, top_k: int | None = None,
                     top_p: float | None = None, min_p: float | None = None) -> Tensor:
    """P_T = softmax(logits / T) restricted to the top-k ids, then to the smallest set
    whose mass reaches top_p, then to the ids with P_T(i) >= min_p · max_j P_T(j), and
    renormalised over the kept set S. T = 0 puts all mass on the argmax.

    min-p compares P_T(i) with the largest P_T(j): a ratio that renormalising does not
    change, so it keeps the same ids whether it comes before or after top-k and top-p.

    >>> next_token_probs(torch.tensor([2.0, 1.0, 0.0]), temperature=1.0, top_k=2)
    tensor([0.7311, 0.2689, 0.0000])
    >>> next_token_probs(torch.tensor([2.0, 1.0, 0.0]), temperature=1.0, min_p=0.3)
    tensor([0.7311, 0.2689, 0.0000])
    """
    check_sampling(temperature, top_k, top_p, min_p)
    logits = logits.float()  # (|V|,)
    if temperature == 0:
        return torch.zeros_like(logits).scatter_(0, logits.argmax().view(1), 1.0)
    # float64 and <= 0 before dividing: no overflow or 0/0 for tiny T.
    scaled = (logits.double() - logits.max()) / temperature  # (|V|,)
    keep_min = None
    if min_p:  # (|V|,) S_min, from P_T before any filter
        p_t = torch.softmax(scaled, dim=-1)
        keep_min = p_t >= min_p * p_t.max()
    if top_k is not None and top_k < scaled.numel():  # exactly k ids, even with ties
        keep = scaled.sort(descending=True, stable=True).indices[:top_k]  # (k,) ties: low id
        scaled = torch.full_like(scaled, float("-inf")).index_copy_(0, keep, scaled[keep])
    probs = torch.softmax(scaled, dim=-1)  # (|V|,)
    if top_p is not None and top_p < 1:
        order = scaled.sort(descending=True, stable=True).indices  # (|V|,) best first
        sorted_p = probs[order]  # (|V|,)
        before = sorted_p.cumsum(0) - sorted_p  # mass of the strictly better ids
        drop = order[before >= top_p]  # ids not needed to reach top_p
        probs = probs.index_fill(0, drop, 0.0)
        probs = probs / probs.sum()
    if keep_min is not None:
        probs = probs.masked_fill(~keep_min, 0.0)
        probs = probs / probs.sum()  # the argmax is in every S, so the sum is > 0
    return probs.float()


def entropy(probs: Tensor) -> float:
    """H(P) = -Σ p log p in nats (0 log 0 = 0).

    >>> round(entropy(torch.tensor([0.5, 0.5])), 4)
    0.6931
    """
    p = probs[probs > 0].double()
    return float(-(p * p.log()).sum())


def choose(probs: Tensor, temperature: float, generator: torch.Generator | None) -> int:
    """Greedy at T = 0, else one draw from probs."""
    if temperature == 0:
        return int(probs.argmax())
    return int(torch.multinomial(probs, 1, generator=generator))


def sample_counts(probs: Tensor, n: int, seed: int | None = None) -> Tensor:
    """Draw n ids from probs and count them, to set a histogram beside P_T.

    >>> sample_counts(torch.tensor([0.0, 1.0]), 5)
    tensor([0, 5])
    """
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}.")
    gen = torch.Generator().manual_seed(seed) if seed is not None else None
    draws = torch.multinomial(probs.float().cpu(), n, replacement=True, generator=gen)  # (n,)
    return torch.bincount(draws, minlength=probs.numel())


def encode_prompt(tokenizer: Tokenizer, text: str) -> list[int]:
    """Ids of a prompt; an empty prompt starts from <|BOS|>.

    >>> encode_prompt(tokenizer, "cab"), encode_prompt(tokenizer, "")   # <|BOS|> is id 6
    ([2, 0, 1], [6])
    """
    if text:
        return tokenizer.encode(text)
    if BOS not in tokenizer.special_tokens:
        raise ValueError(_("the prompt is empty and this tokenizer has no {bos} to start "
                           "from: type a few characters.").format(bos=BOS))
    return [tokenizer.special_tokens[BOS]]


@torch.no_grad()
def step(model: GPT, ids: Sequence[int], temperature: float = 1.0, top_k: int | None = None,
         top_p: float | None = None, generator: torch.Generator | None = None,
         n_top: int = 10, min_p: float | None = None, cache: TextCache | None = None) -> Step:
    """One step: crop to the context window, run the model (through ``cache``'s keys and
    values if given), build P_T, choose."""
    check_sampling(temperature, top_k, top_p, min_p)
    context, cropped = crop(model, ids)
    if cache is not None:
        logits = cache.logits(ids)  # (|V|,)
    else:
        logits = model(context, last_only=True)[0, -1].float().cpu()  # (|V|,)
    probs = next_token_probs(logits, temperature, top_k, top_p, min_p)  # (|V|,)
    best = torch.topk(probs, min(n_top, probs.numel()))
    top = [(int(i), float(p)) for p, i in zip(best.values, best.indices, strict=True)]
    return Step(context, cropped, logits, probs, top, choose(probs, temperature, generator),
                entropy(probs))


def step_through(model: GPT, ids: Sequence[int], max_new_tokens: int, temperature: float = 1.0,
                 top_k: int | None = None, top_p: float | None = None,
                 seed: int | None = None, min_p: float | None = None,
                 use_cache: bool = True) -> Iterator[Step]:
    """Yield a Step per new token (each chosen id is appended before the next step).

    With a seed, step i draws as ``Sampling.generator(i)`` says; without, from torch's RNG.
    With ``use_cache`` each step reads only the new id (``TextCache``).
    """
    rule = Sampling(temperature, top_k, top_p, seed or 0)
    ids = list(ids)
    cache = TextCache(model) if use_cache else None
    for i in range(max_new_tokens):
        s = step(model, ids, temperature, top_k, top_p, rule.generator(i) if seed is not None
                 else None, min_p=min_p, cache=cache)
        ids.append(s.chosen)
        yield s


@torch.inference_mode()  # no autograd, and no version counters: ~20 % faster than no_grad
def generate(model: GPT, ids: Sequence[int], max_new_tokens: int, temperature: float = 1.0,
             top_k: int | None = None, top_p: float | None = None, seed: int | None = None,
             use_cache: bool = True, stop_id: int | None = None,
             min_p: float | None = None) -> list[int]:
    """Prompt ids + up to max_new_tokens sampled ids (stopping after ``stop_id``).

    With ``use_cache`` each step feeds only the new token and reuses the keys and
    values of earlier ones. Once the sequence outgrows the context window the
    positions shift, so the window is recomputed, exactly as without a cache.
    A RoPE model instead attends over a sliding window of the whole text: its cache
    rolls (the oldest key leaves, the rest stay valid), and without a cache the whole
    text is run with the window's mask; both give the same tokens.

    >>> out = generate(model, [3], 5, seed=0)     # the prompt, then 5 sampled ids
    >>> len(out), out == generate(model, [3], 5, seed=0, use_cache=False)
    (6, True)
    """
    check_sampling(temperature, top_k, top_p, min_p)
    if max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be >= 0, got {max_new_tokens}.")
    context, _ = crop(model, ids)
    model.check_ids(context)
    rule = Sampling(temperature, top_k, top_p, seed or 0)  # step i's generator, when seeded
    out = [int(i) for i in ids]
    n_ctx = model.config.context_length
    cache = model.new_cache() if use_cache else None
    forward = _forward_of(model, cache)
    if model.config.rope:
        return _generate_rope(model, out, max_new_tokens, probs_of=lambda logits: next_token_probs(
            logits, temperature, top_k, top_p, min_p), pick=lambda probs, i: choose(
            probs, temperature, rule.generator(i) if seed is not None else None),
            forward=forward, cache=cache, stop_id=stop_id)
    logits = forward(out[-n_ctx:])
    for i in range(max_new_tokens):
        probs = next_token_probs(logits, temperature, top_k, top_p, min_p)
        out.append(choose(probs, temperature, rule.generator(i) if seed is not None else None))
        if out[-1] == stop_id or len(out) - len(ids) == max_new_tokens:
            break
        if cache is not None and cache.length < n_ctx:
            logits = forward(out[-1:])  # one new position
        else:
            if cache is not None:
                cache.reset()  # the window slid: every position moved
            logits = forward(out[-n_ctx:])
    return out


def _generate_rope(model: GPT, out: list[int], max_new_tokens: int, probs_of, pick,
                   forward, cache: KVCache | None, stop_id: int | None) -> list[int]:
    """``generate`` for a RoPE model: a sliding window over the whole text."""
    n_prompt, n_ctx = len(out), model.config.context_length
    # the last token's receptive field: each layer reaches n_ctx - 1 positions further back
    reach = model.config.n_layer * (n_ctx - 1) + 1
    if cache is not None:
        logits = forward(out[:n_ctx])  # the first window in one pass
        for token in out[n_ctx:]:  # then one token at a time: the cache rolls
            logits = forward([token])
    for i in range(max_new_tokens):
        if cache is None:  # the text that reaches the last token, run with the window's mask
            logits = forward(out[-reach:])
        out.append(pick(probs_of(logits), i))
        if out[-1] == stop_id or len(out) - n_prompt == max_new_tokens:
            break
        if cache is not None:
            logits = forward(out[-1:])
    return out


def _forward_of(model: GPT, cache: KVCache | None) -> Callable[[list[int]], Tensor]:
    """ids -> y_N (|V|,) through ``cache``: one new token by ``Decoder`` (bit-identical to
    the module path, and faster), more at once through the model."""
    decoder = Decoder.of(model) if cache is not None else None

    def forward(ids: list[int]) -> Tensor:
        if decoder is not None and len(ids) == 1:
            return decoder.step(ids[0], cache).float().cpu()  # (|V|,)
        x = torch.tensor([ids], dtype=torch.long, device=model.device)  # (1, T)
        return model._forward(x, cache, last_only=True)[0, -1].float().cpu()  # (|V|,)
    return forward
