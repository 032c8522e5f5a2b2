"""Where a class is kept on disk: the data folder (``$GPTVIZ_DATA``, else the XDG data
folder, ``~/.local/share/gptviz``) and the store's file in it."""

from __future__ import annotations

import os
from pathlib import Path

DATA_ENV = "GPTVIZ_DATA"
STORE_NAME = "classes.sqlite3"


def data_dir() -> Path:
    """The data folder: ``$GPTVIZ_DATA``, else ``$XDG_DATA_HOME/gptviz``, else
    ``~/.local/share/gptviz`` (not created here)."""
    if os.environ.get(DATA_ENV):
        return Path(os.environ[DATA_ENV]).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(base) / "gptviz"


def store_file() -> Path:
    """The SQLite file of the class store."""
    return data_dir() / STORE_NAME
