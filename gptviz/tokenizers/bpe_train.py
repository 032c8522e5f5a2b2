"""Learning byte-pair merges quickly, and the regex patterns that cut text first.

The textbook loop (the seeds', minbpe's) recounts every pair of the whole
corpus after each merge: O(merges x corpus). Here the corpus is reduced to its
unique chunks with their counts, all pairs are counted once, and a merge only
visits the positions where its pair occurs, fixing the counts of the pairs
around each one. A heap with lazy deletion finds the most frequent pair.
"""

from __future__ import annotations

import heapq
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

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
class Merge:
    """One row of the merge table: at ``rank``, ``pair`` became ``new_id``."""

    rank: int  # 0 for the first merge learned
    pair: tuple[int, int]  # the two ids merged
    count: int  # how often the pair occurred in the corpus when it was chosen
    new_id: int
    token: bytes  # the new token's bytes


def learn_merges(
    chunk_counts: dict[bytes, int], vocab: dict[int, bytes], n_merges: int
) -> list[Merge]:
    """Learn up to ``n_merges`` merges over byte chunks weighted by their counts.

    ``vocab`` maps the base ids to their bytes and receives the new tokens. A
    pair whose bytes already name a token (``b"a"+b"bc"`` when ``b"ab"+b"c"``
    was learned) is merged into that token instead of a duplicate. Ties in
    count go to the smallest pair of ids, so training is deterministic.

    >>> learn_merges({b"abab": 1}, {i: bytes([i]) for i in range(256)}, 1)
    [Merge(rank=0, pair=(97, 98), count=2, new_id=256, token=b'ab')]
    """
    byte_id = {b: i for i, b in vocab.items() if len(b) == 1}
    by_bytes = {b: i for i, b in vocab.items()}
    # All unique chunks laid end to end as a doubly linked list of symbols.
    sym: list[int] = []
    weight: list[int] = []
    nxt: list[int] = []
    prev: list[int] = []
    for chunk, count in chunk_counts.items():
        start = len(sym)
        for k, byte in enumerate(chunk):
            sym.append(byte_id[bytes([byte])])
            weight.append(count)
            prev.append(start + k - 1 if k else -1)
            nxt.append(start + k + 1 if k < len(chunk) - 1 else -1)

    counts: dict[tuple[int, int], int] = defaultdict(int)
    where: dict[tuple[int, int], set[int]] = defaultdict(set)  # pair -> left positions
    for i, j in enumerate(nxt):
        if j != -1:
            counts[sym[i], sym[j]] += weight[i]
            where[sym[i], sym[j]].add(i)
    heap = [(-c, p) for p, c in counts.items()]
    heapq.heapify(heap)

    merges: list[Merge] = []
    next_id = max(vocab) + 1
    while len(merges) < n_merges and heap:
        neg, pair = heapq.heappop(heap)
        if counts.get(pair, 0) != -neg or neg == 0:
            continue  # stale entry: the count changed after it was pushed
        token = vocab[pair[0]] + vocab[pair[1]]
        new_id = by_bytes.get(token)
        if new_id is None:
            new_id, next_id = next_id, next_id + 1
            vocab[new_id] = token
            by_bytes[token] = new_id
        merges.append(Merge(len(merges), pair, -neg, new_id, token))
        changed = _apply_merge(pair, new_id, sym, weight, nxt, prev, counts, where)
        for p in changed:
            if counts[p] > 0:
                heapq.heappush(heap, (-counts[p], p))
    return merges


def _apply_merge(pair, new_id, sym, weight, nxt, prev, counts, where) -> set[tuple[int, int]]:
    """Replace every occurrence of ``pair`` (left to right) and fix the
    counts of the neighbouring pairs; returns the pairs whose count changed."""
    a, b = pair
    changed = set()

    def move(p: tuple[int, int], pos: int, w: int) -> None:
        counts[p] += w
        (where[p].add if w > 0 else where[p].discard)(pos)
        changed.add(p)

    for i in sorted(where.pop(pair, ())):
        j = nxt[i]
        if sym[i] != a or j == -1 or sym[j] != b:
            continue  # already consumed by an overlapping occurrence (e.g. "aaa")
        w, left, right = weight[i], prev[i], nxt[j]
        counts[pair] -= w
        if left != -1:
            move((sym[left], a), left, -w)
        if right != -1:
            move((b, sym[right]), j, -w)
        sym[i], sym[j] = new_id, -1
        nxt[i] = right
        if right != -1:
            prev[right] = i
            move((new_id, sym[right]), i, w)
        if left != -1:
            move((sym[left], new_id), left, w)
    changed.discard(pair)
    if counts[pair] == 0:
        del counts[pair]
    return changed


def count_chunks(chunks: Iterable[str]) -> dict[bytes, int]:
    """How often each pre-tokenized chunk occurs, keyed by its UTF-8 bytes.

    >>> count_chunks(["ab", " ab", "ab"])
    {b'ab': 2, b' ab': 1}
    """
    return {c.encode("utf-8"): n for c, n in Counter(chunks).items()}
