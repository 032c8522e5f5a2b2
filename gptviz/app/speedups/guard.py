"""Whether a piece of the wing may run here: the stock switch, the library versions it was
checked against, and the private names it touches.

A piece that does not apply switches itself off with one log line (once per process and
piece) and the page goes on without it, as in stock mode. After an upgrade, check the piece
against the new version and add that version to the piece's own tuple (``STREAMLIT`` or
``PLOTLY`` in its module).
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Iterable

from gptviz.app.speedups import stock

log = logging.getLogger("gptviz.speedups")
_reported: set[str] = set()


def version_matches(installed: str, tested: Iterable[str]) -> bool:
    """Whether ``installed`` is one of the ``tested`` releases, given as "major.minor".

    >>> version_matches("1.67.0", ["1.67"]), version_matches("1.670.1", ["1.67"])
    (True, False)
    """
    return any(installed == t or installed.startswith(t + ".") for t in tested)


def missing(name: str) -> bool:
    """Whether ``"module:attr.attr"`` cannot be reached (the module, or an attribute on
    the way, is gone).

    >>> missing("json:JSONDecoder.raw_decode"), missing("json:no_such_name")
    (False, True)
    """
    module, _, path = name.partition(":")
    try:
        found = importlib.import_module(module)
        for part in filter(None, path.split(".")):
            found = getattr(found, part)
    except (ImportError, AttributeError):
        return True
    return False


def switch_off(piece: str, why: str) -> bool:
    """Log, once per process, that ``piece`` is off and why; always False."""
    if piece not in _reported:
        _reported.add(piece)
        log.warning("gptviz speed-up %r switched off: %s. Pages work without it, only "
                    "slower (gptviz/app/speedups/).", piece, why)
    return False


def applies(piece: str, *, streamlit: Iterable[str] = (), plotly: Iterable[str] = (),
            names: Iterable[str] = ()) -> bool:
    """Whether ``piece`` may run: not switched off by ``GPTVIZ_STOCK`` (then False, no log)
    and ``fits`` this installation."""
    return not stock.off(piece) and fits(piece, streamlit=streamlit, plotly=plotly,
                                         names=names)


def fits(piece: str, *, streamlit: Iterable[str] = (), plotly: Iterable[str] = (),
         names: Iterable[str] = ()) -> bool:
    """Whether the installed Streamlit and plotly are among the releases given (none given:
    not checked) and every private name in ``names`` is there; otherwise one log line, and
    False."""
    for library, tested in (("streamlit", tuple(streamlit)), ("plotly", tuple(plotly))):
        if not tested:
            continue
        installed = str(getattr(importlib.import_module(library), "__version__", "?"))
        if not version_matches(installed, tested):
            return switch_off(piece, f"{library} {installed} is not a release it was "
                                     f"checked with ({', '.join(tested)})")
    gone = [name for name in names if missing(name)]
    if gone:
        return switch_off(piece, f"not found: {', '.join(gone)}")
    return True
