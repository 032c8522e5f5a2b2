"""Which class store a server uses: the setting ``GPTVIZ_STORE`` names one; SQLite in the
data folder when it is empty. A shared store for several server processes is added here."""

from __future__ import annotations

import os

from gptviz.classroom.errors import BadInput
from gptviz.classroom.paths import store_file
from gptviz.classroom.sqlite import SQLiteStore
from gptviz.classroom.store import ClassStore, Limits

STORE_ENV = "GPTVIZ_STORE"  # empty, or sqlite:///path/to/file


def open_store(url: str | None = None, limits: Limits | None = None) -> ClassStore:
    """The store a setting names: ``url`` or ``$GPTVIZ_STORE``; empty is SQLite in the data
    folder (``paths.data_dir()``), ``sqlite:///path/to/file`` a file of one's own."""
    url = (url if url is not None else os.environ.get(STORE_ENV, "")).strip()
    if not url:
        return SQLiteStore(store_file(), limits)
    if url.startswith("sqlite:///"):
        return SQLiteStore(url.removeprefix("sqlite://"), limits)
    raise BadInput(f"{STORE_ENV}={url!r} names no store this version knows: leave it empty "
                   "for SQLite in the data folder, or give sqlite:///path/to/classes.sqlite3.")
