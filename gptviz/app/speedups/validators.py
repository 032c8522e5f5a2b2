"""Plotly's table of property validators, read per entry instead of held parsed.

Plotly (6.x) parses ``plotly/validators/_validators.json`` (3.8 MB) whole the first time a
validator is needed, and Streamlit's import does that; the parsed table is kept for the
process's lifetime. ``lean_validators()`` swaps it (``ValidatorCache._json_cache``) for a
``LazyTable`` that keeps where each entry starts and parses one entry when asked: the same
dicts, built fresh at each ``get``. It saves memory, not time: 11.6 MB of the server's RSS
(BENCHMARKS.md, the ``session_rss.py`` runs of 2026-11-24, 09:42). Checked against plotly
6.5; with another plotly, or a file of another layout, it does nothing (one log line).
"""

from __future__ import annotations

import json
import os
import re
import threading
from pathlib import Path

from gptviz.app.speedups import guard

PLOTLY = ("6.5",)  # releases whose table and ValidatorCache were checked
NAMES = ("plotly.validator_cache:ValidatorCache._json_cache",
         "plotly.validator_cache:ValidatorCache.get_validator")
# A top-level key of the file: plotly writes it with json.dump(indent=4), so a key at line
# start with four spaces is an entry of the outer object (nested keys have eight or more).
_ENTRY = re.compile(rb'^    ("(?:[^"\\]|\\.)*"): ', re.M)


class LazyTable:
    """``get(key)`` of a JSON object file of the layout above, parsing that entry only."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        data = Path(path).read_bytes()
        found = list(_ENTRY.finditer(data))
        ends = [m.start() for m in found[1:]] + [len(data)]
        # key -> offset << 32 | length of its value's text (with a trailing ",\n" at most):
        # one int per entry, not a tuple of two (~0.8 MB less over 12k entries)
        self.spans = {json.loads(m.group(1)): m.end() << 32 | (end - m.end())
                      for m, end in zip(found, ends, strict=True)}
        self._lock = threading.Lock()
        self._fd: int | None = None

    def __len__(self) -> int:
        return len(self.spans)

    def __contains__(self, key: object) -> bool:
        return key in self.spans

    def get(self, key: str, default=None):
        span = self.spans.get(key)
        if span is None:
            return default
        with self._lock:  # a session thread each: one descriptor, opened once
            if self._fd is None:
                self._fd = os.open(self.path, os.O_RDONLY)
        text = os.pread(self._fd, span & 0xFFFFFFFF, span >> 32).decode()
        return json.JSONDecoder().raw_decode(text)[0]

    def __getitem__(self, key: str):
        if key not in self.spans:
            raise KeyError(key)
        return self.get(key)


def lean_validators() -> bool:
    """Replace plotly's parsed validator table with a ``LazyTable`` of the same file, when
    it matches (same keys); whether it was replaced. Any other plotly: left alone, with one
    log line."""
    if not guard.fits("validators", plotly=PLOTLY, names=NAMES):
        return False
    from plotly.validator_cache import ValidatorCache

    parsed = getattr(ValidatorCache, "_json_cache", None)
    if not isinstance(parsed, dict):  # not parsed yet, already lazy, or another plotly
        return False
    import plotly
    path = Path(plotly.__file__).parent / "validators" / "_validators.json"
    try:
        lazy = LazyTable(path)
    except (OSError, ValueError) as exc:
        return guard.switch_off("validators", f"cannot index {path}: {exc}")
    if lazy.spans.keys() != parsed.keys():  # another layout than json.dump(indent=4)'s
        return guard.switch_off("validators", f"{path} is not laid out as json.dump(indent=4)")
    ValidatorCache._json_cache = lazy
    return True
