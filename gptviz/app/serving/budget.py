"""One server's memory budgets: for the models sessions train or upload, and for the models
whoever started it names (``--models``, ``GPTVIZ_MODELS``, the Hugging Face cache).

A model that would pass the budget unloads the oldest first; each leaves its session's
``Shelf`` with a note to read at the next run. The budget holds weak references, so a model
whose session ended stops counting once freed; a ``Resident`` says which named model to
unload before another is loaded. No Streamlit here.

>>> class Model: ...
>>> budget, shelf, a, b = ModelBudget(limit=100), Shelf(), Model(), Model()
>>> budget.admit(shelf, "a", a, 60, "a was unloaded"), budget.admit(shelf, "b", b, 60, "")
(60, 60)
>>> sorted(shelf), shelf.take_notes(), budget.used()
(['b'], ['a was unloaded'], 60)
"""

from __future__ import annotations

import contextlib
import gc
import os
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

NAMED_SHARE = 0.4  # of the machine's memory, for the named models together (by default)
_CGROUP_LIMITS = ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes")


class Shelf(dict):
    """One session's models by name, plus the notes the budget leaves it; a dict so that
    the rest of the app reads it as one, and weakly referable so that the budget can
    reach it without keeping the session alive."""

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()
        self.notes: list[str] = []

    def take_notes(self) -> list[str]:
        """The notes left since the last call (each is returned once)."""
        with self.lock:
            notes, self.notes = self.notes, []
        return notes


@dataclass
class _Entry:
    shelf: weakref.ref  # -> Shelf
    name: str
    item: weakref.ref  # -> the model's object; dead once its session let it go
    size: int  # bytes
    note: str  # what its session reads if it is unloaded


def model_bytes(model: Any) -> int:
    """Bytes of a torch module's parameters and buffers (a tied weight counts once)."""
    tensors = {id(t): t for t in (*model.parameters(), *model.buffers())}
    return sum(t.numel() * t.element_size() for t in tensors.values())


class ModelBudget:
    """Charges models against ``limit`` bytes, unloading the oldest first; thread-safe."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._lock = threading.Lock()
        self._entries: list[_Entry] = []  # oldest first
        self._collected = float("-inf")  # when gc last ran here (time.monotonic)

    def used(self) -> int:
        """Bytes charged to the models still alive."""
        with self._lock:
            return self._used()

    def admit(self, shelf: Shelf, name: str, item: Any, size: int, note: str) -> int:
        """Put ``item`` on ``shelf`` under ``name`` and charge ``size`` bytes for it, first
        unloading the oldest models until it fits (each leaves its ``note`` on its shelf;
        one model over the limit on its own ends up alone). Returns the bytes now charged."""
        with self._lock:
            if self._used() + size > self.limit and time.monotonic() - self._collected > 60:
                gc.collect()  # a session that ended may hold its models in a cycle (~0.3 s)
                self._collected = time.monotonic()
            while self._entries and self._used() + size > self.limit:
                self._unload(self._entries.pop(0))
            self._entries.append(_Entry(weakref.ref(shelf), name, weakref.ref(item), size, note))
            with shelf.lock:
                shelf[name] = item
            return self._used()

    def _used(self) -> int:
        self._entries = [e for e in self._entries if e.item() is not None and e.shelf()
                         is not None]
        return sum(e.size for e in self._entries)

    @staticmethod
    def _unload(entry: _Entry) -> None:
        shelf, item = entry.shelf(), entry.item()
        if shelf is None or item is None:
            return
        with shelf.lock:
            if shelf.get(entry.name) is item:
                del shelf[entry.name]
                shelf.notes.append(entry.note)


def machine_memory() -> int | None:
    """Bytes this process may use: its container's limit (cgroup v2 or v1) when it has one,
    else the machine's RAM; None when neither can be read."""
    sizes = []
    for path in _CGROUP_LIMITS:
        try:
            text = Path(path).read_text().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < 1 << 50:  # "max" or a huge number: no limit
            sizes.append(int(text))
    with contextlib.suppress(ValueError, OSError, AttributeError):
        sizes.append(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    return min(sizes) if sizes else None


def named_model_budget(environ: Mapping[str, str] = os.environ) -> int:
    """Bytes the models the server's owner names may take together, float32 weights:
    ``GPTVIZ_MODEL_MEMORY_MB`` when set, else 40 % of ``machine_memory()`` (2 GB if unknown).

    >>> named_model_budget({"GPTVIZ_MODEL_MEMORY_MB": "600"})
    600000000
    """
    value = environ.get("GPTVIZ_MODEL_MEMORY_MB", "")
    if value.strip().isdigit():
        return int(value) * 1_000_000
    return int(NAMED_SHARE * (machine_memory() or 5_000_000_000))


class Resident:
    """The shared models in memory, least recently used first, within ``limit`` bytes.

    >>> r = Resident(limit=100)
    >>> r.make_room("a", 60), r.make_room("b", 30), r.make_room("a", 60), r.make_room("c", 40)
    ([], [], [], ['b'])
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._lock = threading.Lock()
        self._sizes: OrderedDict[str, int] = OrderedDict()

    def make_room(self, key: str, size: int) -> list[str]:
        """Count ``key`` (``size`` bytes) as in memory, most recently used; returns the keys
        to unload first, oldest first, so that all fit in the limit."""
        with self._lock:
            if key in self._sizes:
                self._sizes.move_to_end(key)
                return []
            out = []
            while self._sizes and sum(self._sizes.values()) + size > self.limit:
                out.append(self._sizes.popitem(last=False)[0])
            self._sizes[key] = size
            return out

    def forget(self, key: str) -> None:
        """``key`` is not in memory after all (its load failed)."""
        with self._lock:
            self._sizes.pop(key, None)
