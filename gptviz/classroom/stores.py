"""Which class store a server uses: the setting ``GPTVIZ_STORE`` names one; SQLite in the
data folder when it is empty; Redis (``redis_store``), shared by several server processes,
when it is a ``redis://`` address."""

from __future__ import annotations

import os

from gptviz.classroom.errors import BadInput
from gptviz.classroom.paths import store_file
from gptviz.classroom.sqlite import SQLiteStore
from gptviz.classroom.store import ClassStore, Limits
from gptviz.i18n import _

STORE_ENV = "GPTVIZ_STORE"  # empty, sqlite:///path/to/file, or redis://:PASSWORD@HOST:PORT/0
REDIS_SCHEMES = ("redis://", "rediss://", "unix://")


def open_store(url: str | None = None, limits: Limits | None = None) -> ClassStore:
    """The store a setting names: ``url`` or ``$GPTVIZ_STORE``; empty is SQLite in the data
    folder (``paths.data_dir()``), ``sqlite:///path/to/file`` a file of one's own,
    ``redis://:password@host:port/db`` (or ``rediss://``, ``unix://``) the store that several
    server processes share (``redis_store.RedisStore``)."""
    url = (url if url is not None else os.environ.get(STORE_ENV, "")).strip()
    if not url:
        return SQLiteStore(store_file(), limits)
    if url.startswith("sqlite:///"):
        return SQLiteStore(url.removeprefix("sqlite://"), limits)
    if url.startswith(REDIS_SCHEMES):
        from gptviz.classroom.redis_store import RedisStore

        return RedisStore.from_url(url, limits)
    shown = url.split("://", 1)[0] + "://..." if "://" in url else url[:40]  # no password
    raise BadInput(_("{setting} names no store this version knows: leave it empty for SQLite "
                     "in the data folder, give sqlite:///path/to/classes.sqlite3, or "
                     "redis://:PASSWORD@HOST:6379/0 for Redis.").format(
                         setting=f"{STORE_ENV}={shown!r}"))
