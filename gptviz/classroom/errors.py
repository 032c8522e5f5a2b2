"""What a class refuses, each with a message a person can act on (pages show ``str(e)``)."""

from __future__ import annotations

import math

from gptviz.i18n import ngettext


class ClassError(Exception):
    """A request the class refuses; ``str(error)`` says what is wrong and what to do."""


class BadInput(ClassError):
    """An input that is too long, not a number, out of range..."""


class NotFound(ClassError):
    """No live class has this code (a wrong or stale code, or an expired class)."""


class ClassEnded(ClassError):
    """The teacher ended the class: it can be read, not answered."""


class Forbidden(ClassError):
    """Only the teacher's session may do this (a missing or wrong credential)."""


class RateLimited(ClassError):
    """Too many requests from one client or student: wait ``wait_s`` seconds."""

    def __init__(self, message: str, wait_s: float) -> None:
        super().__init__(message)
        self.wait_s = wait_s


class Paused(ClassError):
    """The store cannot be reached for now (a shared store restarting, or the network):
    nothing is lost, and the same request succeeds once it is back."""


class Full(ClassError):
    """A bound on the store's size is reached: students in a class, classes at once."""


def wait_text(seconds: float) -> str:
    """A wait as a person reads it.

    >>> wait_text(0.2), wait_text(59.1), wait_text(61)
    ('1 second', '60 seconds', '2 minutes')
    """
    s = max(1, math.ceil(seconds))
    if s <= 60:
        return ngettext("{n} second", "{n} seconds", s).format(n=s)
    m = math.ceil(s / 60)
    return ngettext("{n} minute", "{n} minutes", m).format(n=m)
