"""Reaching the class store's Redis: a client that retries while Redis restarts, and what a
page is told when it stays out of reach (``Paused``) or refuses the password.

Redis unreachable (restarted, or the network between): each command is retried for about
3 s, then the call raises ``Paused``, a ``ClassError`` whose message says that the class is
paused and nothing is lost. With Redis's persistence on (``appendonly yes``, as
``deploy/serve.py`` starts it), a restarted Redis has every answer back.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import redis
from redis.backoff import ExponentialBackoff
from redis.exceptions import AuthenticationError, BusyLoadingError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.retry import Retry

from gptviz.classroom.errors import ClassError, Paused
from gptviz.i18n import N_, _

T = TypeVar("T")
UNREACHABLE = (RedisConnectionError, RedisTimeoutError, BusyLoadingError)
PAUSED = N_("The class is paused: the server cannot reach its class store just now. Nothing "
          "is lost; this page carries on by itself once it is back (usually within seconds).")
REFUSED = N_("The server's class store refused its password: whoever runs the server must "
           "check the password in GPTVIZ_STORE (redis://:PASSWORD@HOST:PORT/0).")


def reachable(method: Callable[..., T]) -> Callable[..., T]:
    """Redis unreachable after the client's retries: ``Paused``, with a message."""
    @functools.wraps(method)
    def call(*args: Any, **kwargs: Any) -> T:
        try:
            return method(*args, **kwargs)
        except AuthenticationError as e:
            raise ClassError(_(REFUSED)) from e
        except UNREACHABLE as e:
            raise Paused(_(PAUSED)) from e
    return call


def client_for(url: str, retry_s: float = 3.0) -> redis.Redis:
    """A thread-safe client (a connection pool) for ``url`` (``redis://:password@host:port/db``
    or ``unix:///path?password=...``): every command retried with growing waits for about
    ``retry_s`` seconds while Redis cannot be reached or is loading its data."""
    backoff, tries, total = ExponentialBackoff(cap=0.5, base=0.05), 0, 0.0
    while total < retry_s:
        tries += 1
        total += backoff.compute(tries)
    return redis.Redis.from_url(
        url, decode_responses=True, socket_connect_timeout=2, socket_timeout=10,
        health_check_interval=15, retry=Retry(backoff, tries),
        retry_on_error=[RedisConnectionError, RedisTimeoutError, BusyLoadingError])
    # (a wrong password is an AuthenticationError, a ConnectionError too: retried the same)

