"""Replies without Nagle's wait: TCP_NODELAY on the server's sockets.

Streamlit (1.67) binds its listening socket itself (``_bind_socket``, as
``socket.socket(family)``, protocol 0), and asyncio turns Nagle's algorithm off only for a
socket whose protocol is ``IPPROTO_TCP``: each reply's body then waits for the browser's
delayed ACK of its headers, 40 ms, on every kept-open connection. With the option set, a
file asked for on such a connection took ~1 ms instead of 44 ms (benchmarks/LOG.md, "Nagle's
algorithm on the server's sockets"). ``no_delay()`` sets it once per process on every TCP
socket the process holds; accepted connections inherit it from the listener (Linux, BSD).
Checked against Streamlit 1.67; elsewhere off, with one log line.
"""

from __future__ import annotations

import os
import socket
import stat
import threading

from gptviz.app.speedups import guard

STREAMLIT = ("1.67",)  # releases that bind their socket as described above
NAMES = ("streamlit.web.server.starlette.starlette_server:_bind_socket",)
_done = False
_lock = threading.Lock()
FD_LIMIT = 4096  # file descriptors looked at where /proc/self/fd cannot be listed


def _descriptors() -> list[int]:
    """The process's open file descriptors (or every number below ``FD_LIMIT``)."""
    try:
        return [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:
        return list(range(3, FD_LIMIT))


def set_no_delay(fd: int) -> bool:
    """Set ``TCP_NODELAY`` on the TCP socket ``fd`` (through a duplicate, closed again);
    False, and nothing changed, for anything else: a file, a pipe, a Unix or UDP socket.

    >>> import socket
    >>> listener = socket.socket(socket.AF_INET)  # protocol 0, as Streamlit binds it
    >>> set_no_delay(listener.fileno()), listener.getsockopt(
    ...     socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
    (True, True)
    >>> listener.close()
    """
    try:
        if not stat.S_ISSOCK(os.fstat(fd).st_mode):
            return False
        sock = socket.socket(fileno=os.dup(fd))
    except OSError:
        return False
    try:
        if sock.family not in (socket.AF_INET, socket.AF_INET6) \
                or sock.type != socket.SOCK_STREAM:
            return False
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return True
    except OSError:
        return False
    finally:
        sock.close()  # the duplicate only: the server's own socket stays open


def no_delay() -> int:
    """Set ``TCP_NODELAY`` on every TCP socket of this process, the first time only; the
    number of sockets set (0 after the first call, on Windows, and, with one log line, where
    this Streamlit is not one checked)."""
    global _done
    with _lock:
        if _done or os.name == "nt":
            return 0
        _done = True
        if not guard.fits("sockets", streamlit=STREAMLIT, names=NAMES):
            return 0
        return sum(set_no_delay(fd) for fd in _descriptors())
