"""Counters of the work spent reading a file someone gave (an upload): bytes unpacked from a
zip, characters of JSON scanned and parsed, entries of a safetensors header, bytes of tensors.

The readers add to the counters of the ``counting()`` block they run in (a context variable:
each thread, each session, counts apart); outside one, adding costs a lookup and nothing
is kept. Tests bound these figures rather than times.

>>> with counting() as work:
...     add(json_chars=12)
>>> work.json_chars, work.bytes_unpacked
(12, 0)
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, fields


@dataclass
class Work:
    """What one reading did, in units that bound its time and memory."""

    bytes_unpacked: int = 0  # bytes a zip member unpacked to (read in bounded chunks)
    json_chars: int = 0  # characters the nesting scan and the JSON parser passed over
    header_entries: int = 0  # entries of safetensors headers checked
    tensor_bytes: int = 0  # bytes of tensors viewed in a file once its header was checked


_NOW: ContextVar[Work | None] = ContextVar("gptviz_work", default=None)
_FIELDS = frozenset(f.name for f in fields(Work))


def add(**amounts: int) -> None:
    """Add to the counters of the ``counting()`` block this code runs in, if any."""
    work = _NOW.get()
    if work is None:
        return
    for name, n in amounts.items():
        if name not in _FIELDS:
            raise TypeError(f"Work has no counter {name!r}.")
        setattr(work, name, getattr(work, name) + n)


@contextmanager
def counting() -> Iterator[Work]:
    """Count the work of the readers called inside the block."""
    work = Work()
    token = _NOW.set(work)
    try:
        yield work
    finally:
        _NOW.reset(token)
