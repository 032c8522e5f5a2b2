"""Lowest-rank-first BPE merging of one long chunk with a heap, in O(n log n): what
``ByteLevelBPE`` uses above ``_LONG_CHUNK`` bytes, instead of rescanning the pairs.

>>> merge_heap(b"aaab", {b"a": 0, b"b": 1, b"aa": 2, b"ab": 3}, float("inf"), None)
[b'aa', b'ab']
"""

from __future__ import annotations

import heapq


def merge_heap(chunk: bytes, ranks: dict[bytes, int], limit: float,
                steps: list | None) -> list[bytes]:
    """The same lowest-rank-first merging in O(n log n), for long chunks.
    Ties go to the leftmost pair, as in the rescanning loop."""
    parts = [chunk[i:i + 1] for i in range(len(chunk))]
    nxt = list(range(1, len(parts))) + [-1]
    prev = list(range(-1, len(parts) - 1))
    heap = []

    def push(i: int) -> None:
        j = nxt[i]
        if j != -1:
            r = ranks.get(parts[i] + parts[j])
            if r is not None and r < limit:
                heapq.heappush(heap, (r, i, parts[i], parts[j]))

    for i in range(len(parts) - 1):
        push(i)
    while heap:
        r, i, left, right = heapq.heappop(heap)
        j = nxt[i]
        if parts[i] != left or j == -1 or parts[j] != right:
            continue  # stale: a neighbour changed since this pair was pushed
        if steps is not None:
            steps.append((r, ranks[left], ranks[right]))
        parts[i], parts[j] = left + right, b""
        nxt[i] = nxt[j]
        if nxt[j] != -1:
            prev[nxt[j]] = i
        push(i)
        if prev[i] != -1:
            push(prev[i])
    return [p for p in parts if p]
