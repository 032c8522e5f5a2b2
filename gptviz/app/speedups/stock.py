"""The stock switch: ``GPTVIZ_STOCK`` turns the wing's pieces off, all of them or some.

``GPTVIZ_STOCK=1`` (also ``all``, ``true``, ``yes``, ``on``) draws every page with Streamlit's
and plotly's own elements and patches nothing: the same content, only slower. A list of
piece names, ``GPTVIZ_STOCK=fold,svgplot``, turns off just those, to measure each against
stock. Unset, empty or ``0``: every piece is on. The variable is read at every call, so a
test can set it; a name that is no piece is reported once in the log and ignored.
"""

from __future__ import annotations

import logging
import os

VARIABLE = "GPTVIZ_STOCK"
# Every piece the switch turns off, by the name of its module in this folder.
PIECES = ("svgplot", "heatcanvas", "choice", "download", "fold", "prefetch",
          "base_url", "sockets", "fonts")
ALL = frozenset({"1", "all", "true", "yes", "on"})
NONE = frozenset({"", "0", "false", "no", "off"})
_unknown_reported: set[str] = set()
log = logging.getLogger("gptviz.speedups")


def switched_off(environ: dict[str, str] | None = None) -> frozenset[str]:
    """The pieces the switch turns off now.

    >>> sorted(switched_off({"GPTVIZ_STOCK": " fold, svgplot "}))
    ['fold', 'svgplot']
    >>> switched_off({"GPTVIZ_STOCK": "1"}) == set(PIECES), switched_off({})
    (True, frozenset())
    """
    raw = (os.environ if environ is None else environ).get(VARIABLE, "").strip().lower()
    if raw in NONE:
        return frozenset()
    if raw in ALL:
        return frozenset(PIECES)
    names = {name.strip() for name in raw.split(",") if name.strip()}
    unknown = sorted(names.difference(PIECES).difference(_unknown_reported))
    if unknown:
        _unknown_reported.update(unknown)
        log.warning("%s names no piece %s; the pieces are: %s", VARIABLE, ", ".join(unknown),
                    ", ".join(PIECES))
    return frozenset(names.intersection(PIECES))


def off(piece: str) -> bool:
    """Whether ``piece`` (one of ``PIECES``) is switched off: its stock path is taken."""
    if piece not in PIECES:
        raise ValueError(f"{piece!r} is not a piece of the wing: {PIECES}")
    return piece in switched_off()
