"""A cache bounded in bytes, for results many sessions share: a count of entries says nothing
about memory (one prompt's results range from kB to tens of MB). Values are shared, never
copied, so their numpy arrays are made read-only.
"""

from __future__ import annotations

import dataclasses
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

import numpy as np
import torch

T = TypeVar("T")


ENTRY_BYTES = 256  # what one entry costs beyond its key and value (dict slot, tuple, node)


def nbytes(value: Any) -> int:
    """Bytes a value holds: arrays by their buffers, containers and dataclasses by their
    items, a list or tuple also by its slots, a string as Python stores it (GPT-2's 50,257
    vocabulary labels hold 3.5 MB, not the 0.3 MB of their characters).

    >>> nbytes((np.zeros((2, 3), np.float32), {"k": np.ones(4)}, "ab"))
    221
    >>> @dataclasses.dataclass
    ... class Text:
    ...     text: str
    >>> nbytes(Text("x" * 1000)) > 1000
    True
    """
    if isinstance(value, np.ndarray):
        return int(value.nbytes)
    if isinstance(value, dict):
        return sum(nbytes(k) + nbytes(v) for k, v in value.items())
    if isinstance(value, (tuple, list)):
        if value and all(type(v) in _FLAT for v in value[:8]):  # numbers or strings
            return sys.getsizeof(value) + sum(map(_flat, value))
        return sys.getsizeof(value) + sum(nbytes(v) for v in value)
    if isinstance(value, str):
        return sys.getsizeof(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return sys.getsizeof(value) + sum(nbytes(getattr(value, f.name))
                                          for f in dataclasses.fields(value))
    if isinstance(getattr(value, "_data", None), list) and isinstance(
            getattr(value, "_layout", None), dict):  # a plotly figure: its traces and layout
        return sys.getsizeof(value) + nbytes(value._data) + nbytes(value._layout)
    if isinstance(value, torch.Tensor):
        return value.untyped_storage().nbytes() + sys.getsizeof(value)
    return sys.getsizeof(value)


_FLAT = (float, int, str, bool, type(None))


def _flat(v: Any) -> int:
    """A list item's bytes: a number's or string's own, else ``nbytes``'s (a long list of
    floats or strings, such as a heatmap's z or hover texts, is summed without recursion)."""
    return sys.getsizeof(v) if type(v) in _FLAT else nbytes(v)


def freeze_arrays(value: Any) -> Any:
    """Make every numpy array in ``value`` read-only (in place); returns ``value``."""
    if isinstance(value, np.ndarray):
        value.flags.writeable = False
    elif isinstance(value, dict):
        for v in value.values():
            freeze_arrays(v)
    elif isinstance(value, (tuple, list)):
        for v in value:
            freeze_arrays(v)
    return value


class ByteLRU:
    """Least-recently-used entries dropped once their keys and values pass ``limit`` bytes.

    A value larger than the whole budget is computed and returned but not kept. Threads
    asking for the same missing key at once compute it once: the others wait for it (a
    class opening a page together runs its forward pass once, not thirty times). A value's
    numpy arrays are made read-only: a page that changed one would fail, not change another
    student's numbers.

    >>> lru = ByteLRU(limit=2_500)
    >>> a = lru.get_or_compute("a", lambda: np.zeros(100))  # 800 bytes, its key and 256
    >>> b = lru.get_or_compute("b", lambda: np.zeros(100))
    >>> a is lru.get_or_compute("a", lambda: None), a.flags.writeable
    (True, False)
    >>> _ = lru.get_or_compute("c", lambda: np.zeros(100))  # over 2,500: drops "b"
    >>> sorted(lru.keys()), lru.used
    (['a', 'c'], 2212)
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self._items: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._lock = threading.Lock()
        self._computing: dict[Hashable, threading.Lock] = {}  # key -> held while computed

    def keys(self) -> list[Hashable]:
        with self._lock:
            return list(self._items)

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._items

    def get_or_compute(self, key: Hashable, compute: Callable[[], T]) -> T:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key][0]
            turn = self._computing.setdefault(key, threading.Lock())
        with turn:  # the first caller computes; the others wait here, then read its result
            with self._lock:
                if key in self._items:
                    self._items.move_to_end(key)
                    return self._items[key][0]
            try:
                return self._compute(key, compute)
            finally:
                with self._lock:
                    if self._computing.get(key) is turn:
                        del self._computing[key]

    def _compute(self, key: Hashable, compute: Callable[[], T]) -> T:
        value = freeze_arrays(compute())
        size = nbytes(value) + nbytes(key) + ENTRY_BYTES  # a key may hold a long prompt
        with self._lock:
            if key in self._items:  # another thread stored it meanwhile
                return self._items[key][0]
            if size <= self.limit:
                self._items[key] = (value, size)
                self.used += size
                while self.used > self.limit:
                    _, (_, dropped) = self._items.popitem(last=False)
                    self.used -= dropped
        return value

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self.used = 0
