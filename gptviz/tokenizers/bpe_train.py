"""Learning byte-pair merges quickly, and the regex patterns that cut text first.

The textbook loop (the seeds', minbpe's) recounts every pair of the whole
corpus after each merge: O(merges x corpus). Here the corpus is reduced to its
unique chunks with their counts, all pairs are counted once, and a merge only
visits the positions where its pair occurs, fixing the counts of the pairs
around each one. A heap with lazy deletion finds the most frequent pair.

Memory grows with the distinct chunks and pairs, which random text has by the
million: positions live in flat arrays, pairs are ints, and ``TrainLimits``
bounds what one training reads and keeps (a shared server serves a class).
"""

from __future__ import annotations

import heapq
from array import array
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import repeat
from typing import Any

from gptviz.i18n import _, number
from gptviz.tokenizers.base import TokenizerError, check_untrusted_ids

# GPT-2's split pattern (tiktoken's r50k_base), and GPT-4's (cl100k_base).
GPT2_PATTERN = (
    r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""
)
GPT4_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
PATTERNS: dict[str, str | None] = {"gpt2": GPT2_PATTERN, "gpt4": GPT4_PATTERN, "none": None}



@dataclass(frozen=True)
class TrainLimits:
    """What one BPE training may hold. Its memory grows with the corpus's distinct chunks
    and pairs, not its length: ~45 bytes per byte of distinct chunks, ~150 per distinct
    chunk and ~250 per distinct pair (benchmarks/server/upload_memory.py), so the defaults keep
    a training under ~150 MB of a shared server."""

    chunk_bytes: int = 2_000_000  # bytes of distinct chunks read; the rest is left out
    chunks: int = 200_000  # distinct chunks read; the rest is left out
    pairs: int = 200_000  # distinct pairs of neighbouring tokens while merging (else an error)
    token_bytes: int = 16_000_000  # bytes of all the tokens together (the vocabulary, the trace)


def check_pattern(pattern: Any, source: str) -> None:
    """Refuse a split pattern that is not a name in PATTERNS (from an upload: any other regex
    could backtrack for minutes on a short text and hold the server's CPU)."""
    if not isinstance(pattern, str) or pattern not in PATTERNS:
        shown = repr(pattern) if len(repr(pattern)) <= 60 else repr(pattern)[:57] + "..."
        raise TokenizerError(
            _("{source}: the split pattern {shown} is not one of the named "
              "patterns ({patterns}); an uploaded tokenizer must use one of "
              "those, since an arbitrary regex can hold the server's CPU. Retrain "
              "it with a named one.").format(
                source=source, shown=shown, patterns=', '.join(PATTERNS)))


def check_upload(data: dict[str, Any], source: str) -> None:
    """What an uploaded BPE tokenizer.json must be besides well formed: a named pattern, and
    at most UNTRUSTED_IDS ids (the 256 bytes, the merges, the specials)."""
    check_pattern(data.get("pattern"), source)
    check_untrusted_ids(256 + sum(len(v) for v in (data.get("merges"), data.get("special_ids"))
                                  if isinstance(v, list | dict)), source)


def learn_within(chunks: Iterable[str], vocab: dict[int, bytes], n_merges: int,
                 limits: TrainLimits) -> tuple[list[Merge], int]:
    """``learn_merges`` on the chunks ``count_chunks_within`` keeps: the merges, and how many
    characters of the text (which ``chunks`` tile) they were learned from."""
    counts, used = count_chunks_within(chunks, limits.chunk_bytes, limits.chunks)
    return learn_merges(counts, vocab, n_merges, limits.token_bytes, limits.pairs), used


@dataclass(frozen=True)
class Merge:
    """One row of the merge table: at ``rank``, ``pair`` became ``new_id``."""

    rank: int  # 0 for the first merge learned
    pair: tuple[int, int]  # the two ids merged
    count: int  # how often the pair occurred in the corpus when it was chosen
    new_id: int
    token: bytes  # the new token's bytes


def learn_merges(
    chunk_counts: dict[bytes, int], vocab: dict[int, bytes], n_merges: int,
    max_token_bytes: int | None = None, max_pairs: int | None = None,
) -> list[Merge]:
    """Learn up to ``n_merges`` merges over byte chunks weighted by their counts.

    ``vocab`` maps the base ids to their bytes and receives the new tokens. A
    pair whose bytes already name a token (``b"a"+b"bc"`` when ``b"ab"+b"c"``
    was learned) is merged into that token instead of a duplicate. Ties in
    count go to the smallest pair of ids, so training is deterministic. Raises
    TokenizerError when the new tokens would hold over ``max_token_bytes`` bytes
    or the distinct neighbouring pairs would pass ``max_pairs``.

    >>> learn_merges({b"abab": 1}, {i: bytes([i]) for i in range(256)}, 1)
    [Merge(rank=0, pair=(97, 98), count=2, new_id=256, token=b'ab')]
    """
    byte_id = [0] * 256
    for i, b in vocab.items():
        if len(b) == 1:
            byte_id[b[0]] = i
    by_bytes = {b: i for i, b in vocab.items()}
    # All unique chunks laid end to end as a doubly linked list of symbols, in flat
    # arrays (4-8 bytes a position; Python lists of ints cost ~40).
    sym, nxt, prev, weight = array("i"), array("i"), array("i"), array("q")
    for chunk, count in chunk_counts.items():
        start, n = len(sym), len(chunk)
        if n:
            sym.extend(map(byte_id.__getitem__, chunk))
            weight.extend(repeat(count, n))
            prev.append(-1)
            prev.extend(range(start, start + n - 1))
            nxt.extend(range(start + 1, start + n))
            nxt.append(-1)

    # A pair (a, b) is the int a << 32 | b, so its order is the pairs' order. counts holds
    # the pairs that occur (count > 0); where, their left positions: an int for one, an
    # array for more, with stale entries (a merge checks each) but no duplicates (a
    # position's symbols only grow). The heap holds -count << 64 | pair; a count that
    # fell since it was pushed is pushed again when popped.
    counts: dict[int, int] = defaultdict(int)
    where: dict[int, int | array] = {}
    for i, j in enumerate(nxt):
        if j != -1:
            key = sym[i] << 32 | sym[j]
            counts[key] += weight[i]
            _note(where, key, i)
    counts = dict(counts)
    heap = [-c << 64 | key for key, c in counts.items()]
    heapq.heapify(heap)

    merges: list[Merge] = []
    next_id = max(vocab) + 1
    token_bytes = 0
    while len(merges) < n_merges and heap:
        entry = heapq.heappop(heap)
        count, key = -(entry >> 64), entry & _PAIRS
        now = counts.get(key, 0)
        if now != count:  # stale: the count changed after it was pushed
            if 0 < now < count:
                heapq.heappush(heap, -now << 64 | key)
            continue
        pair = key >> 32, key & _ID
        token = vocab[pair[0]] + vocab[pair[1]]
        new_id = by_bytes.get(token)
        if new_id is None:
            token_bytes += len(token)
            if max_token_bytes is not None and token_bytes > max_token_bytes:
                raise TokenizerError(
                    _("after {n_merges} merges the new tokens hold over "
                      "{max_token_bytes} MB (they are very long): choose a "
                      "smaller vocab size or a split pattern other than 'none'.").format(
                        n_merges=number(len(merges), 0, grouping=True),
                        max_token_bytes=number(max_token_bytes / 1e6, 0)))
            new_id, next_id = next_id, next_id + 1
            vocab[new_id] = token
            by_bytes[token] = new_id
        merges.append(Merge(len(merges), pair, count, new_id, token))
        for k in _apply_merge(pair, new_id, sym, weight, nxt, prev, counts, where):
            if k in counts:
                heapq.heappush(heap, -counts[k] << 64 | k)
        if max_pairs is not None and len(counts) > max_pairs:
            raise TokenizerError(
                _("after {n_merges} merges this corpus has {n_counts} "
                  "distinct pairs of neighbouring tokens, more than this server "
                  "keeps ({max_pairs}): it is closer to random text than to "
                  "prose. Choose a vocab size of {n_merges1} or less, or "
                  "another corpus.").format(
                    n_merges=number(len(merges), 0, grouping=True),
                    n_counts=number(len(counts), 0, grouping=True),
                    max_pairs=number(max_pairs, 0, grouping=True),
                    n_merges1=number(len(merges) + 256, 0, grouping=True)))
    return merges


_ID, _PAIRS = (1 << 32) - 1, (1 << 64) - 1


def _note(where: dict[int, int | array], key: int, pos: int) -> None:
    """Record that pair ``key`` occurs at ``pos``."""
    at = where.get(key)
    if at is None:
        where[key] = pos
    elif type(at) is int:
        where[key] = array("i", (at, pos))
    else:
        at.append(pos)


def _apply_merge(pair, new_id, sym, weight, nxt, prev, counts, where) -> set[int]:
    """Replace every occurrence of ``pair`` (left to right) and fix the counts
    of the neighbouring pairs; returns the pairs whose count went up."""
    a, b = pair
    up = set()

    def add(key: int, pos: int, w: int) -> None:
        counts[key] = counts.get(key, 0) + w
        _note(where, key, pos)
        up.add(key)

    def sub(key: int, w: int) -> None:
        left = counts[key] - w
        if left:
            counts[key] = left
        else:  # nothing occurs there any more
            del counts[key]
            where.pop(key, None)

    at = where.pop(a << 32 | b, ())
    for i in ((at,) if type(at) is int else sorted(at)):
        j = nxt[i]
        if sym[i] != a or j == -1 or sym[j] != b:
            continue  # stale, or consumed by an overlapping occurrence (e.g. "aaa")
        w, left, right = weight[i], prev[i], nxt[j]
        sub(a << 32 | b, w)
        if left != -1:
            sub(sym[left] << 32 | a, w)
        if right != -1:
            sub(b << 32 | sym[right], w)
        sym[i], sym[j] = new_id, -1
        nxt[i] = right
        if right != -1:
            prev[right] = i
            add(new_id << 32 | sym[right], i, w)
        if left != -1:
            add(sym[left] << 32 | new_id, left, w)
    return up


def count_chunks(chunks: Iterable[str]) -> dict[bytes, int]:
    """How often each pre-tokenized chunk occurs, keyed by its UTF-8 bytes.

    >>> count_chunks(["ab", " ab", "ab"])
    {b'ab': 2, b' ab': 1}
    """
    return {c.encode("utf-8"): n for c, n in Counter(chunks).items()}


def count_chunks_within(chunks: Iterable[str], max_bytes: int, max_chunks: int
                        ) -> tuple[dict[bytes, int], int]:
    """``count_chunks`` of the longest prefix of ``chunks`` whose distinct chunks hold at
    most ``max_bytes`` bytes and number at most ``max_chunks`` (the chunk that would pass
    a limit is cut to the bytes left); returns the counts and the characters read.

    >>> count_chunks_within(["ab", " ab", "ab", " cd"], max_bytes=7, max_chunks=9)
    ({b'ab': 2, b' ab': 1, b' c': 1}, 9)
    """
    counts: dict[bytes, int] = {}
    size = used = 0
    for chunk in chunks:
        data = chunk.encode("utf-8")
        n = counts.get(data)
        if n is None:
            if size + len(data) > max_bytes or len(counts) >= max_chunks:
                fits = len(counts) < max_chunks
                head = data[:max_bytes - size].decode("utf-8", "ignore") if fits else ""
                if head:
                    key = head.encode("utf-8")
                    counts[key] = counts.get(key, 0) + 1
                    used += len(head)
                break
            size, n = size + len(data), 0
        counts[data] = n + 1
        used += len(chunk)
    return counts, used
