"""Replies without Nagle's wait: TCP_NODELAY on the server's sockets.

Streamlit (1.67) binds its listening socket itself, as ``socket.socket(family)``, whose
protocol number is 0. asyncio turns Nagle's algorithm off only for a socket whose protocol
is ``IPPROTO_TCP``, so no connection the server accepts has ``TCP_NODELAY``. The server
writes a reply's headers and its body in two writes; on a connection the browser keeps
open for its next request, the body then waits for the browser's ACK of the headers,
which the browser delays (40 ms on Linux). A fresh page asks for 70-130 files over six
connections, and the websocket's messages are small writes too: measured on this
machine, a file asked for on a kept-open connection took 44 ms, and 1 ms with the option
set (``benchmarks/pages.py``'s run in ``BENCHMARKS.md`` gives the page loads).

``no_delay()`` sets the option, once per process, on every TCP socket the process holds:
the listening socket, whose connections accepted later inherit it (Linux and the BSDs copy
a listener's options to the sockets it accepts), and the connections already open. The
router calls it on every run; after the first it does nothing. On a system where a
socket is not a file descriptor (Windows) it does nothing.
"""

from __future__ import annotations

import os
import socket
import stat
import threading

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
    number of sockets set (0 after the first call, and on Windows)."""
    global _done
    with _lock:
        if _done or os.name == "nt":
            return 0
        _done = True
        return sum(set_no_delay(fd) for fd in _descriptors())
