"""TCP_NODELAY on the server's sockets (gptviz/app/speedups/sockets.py)."""

from __future__ import annotations

import asyncio
import os
import socket
import sys

import pytest

from gptviz.app.speedups import sockets
from tests.helpers import run_alone

pytestmark = pytest.mark.skipif(os.name == "nt", reason="sockets are not descriptors there")


def nodelay(sock: socket.socket) -> bool:
    return sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0


def streamlit_listener() -> socket.socket:
    """A listening socket bound as Streamlit 1.67 binds its own: protocol number 0."""
    listener = socket.socket(socket.AF_INET)
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    return listener


@pytest.fixture
def fresh(monkeypatch):
    monkeypatch.setattr(sockets, "_done", False)


def test_asyncio_leaves_nagle_on_for_such_a_listener():
    """The cause: asyncio sets TCP_NODELAY only on sockets whose protocol is IPPROTO_TCP,
    so the connections a Streamlit server accepts keep Nagle's algorithm."""
    async def main() -> bool:
        listener = streamlit_listener()
        accepted: asyncio.Future = asyncio.get_running_loop().create_future()

        def handler(reader, writer):
            accepted.set_result(writer.get_extra_info("socket"))

        server = await asyncio.start_server(handler, sock=listener)
        _, writer = await asyncio.open_connection(*listener.getsockname())
        sock = await accepted
        result = nodelay(sock)
        writer.close()
        server.close()
        return result

    assert run_alone(main()) is False


def test_open_connections_and_those_accepted_later_get_it(fresh):
    listener = streamlit_listener()
    before = socket.create_connection(listener.getsockname())
    open_one, _ = listener.accept()
    assert not nodelay(open_one) and not nodelay(listener)
    assert sockets.no_delay() >= 3  # the listener, and both ends of the open connection
    assert nodelay(open_one) and nodelay(listener)
    if sys.platform.startswith(("linux", "darwin", "freebsd")):
        after = socket.create_connection(listener.getsockname())
        later, _ = listener.accept()
        assert nodelay(later)  # inherited from the listener
        for s in (after, later):
            s.close()
    for s in (before, open_one, listener):
        s.close()


def test_only_once_per_process(fresh):
    listener = streamlit_listener()
    assert sockets.no_delay() >= 1
    second = streamlit_listener()
    assert sockets.no_delay() == 0  # already done: the server's listener was set the first time
    assert not nodelay(second)
    listener.close()
    second.close()


def test_everything_else_is_left_alone(tmp_path):
    read, write = os.pipe()
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    unix_a, unix_b = socket.socketpair(socket.AF_UNIX)
    with open(tmp_path / "f", "w") as f:
        for fd in (read, write, udp.fileno(), unix_a.fileno(), f.fileno(), 10_000):
            assert sockets.set_no_delay(fd) is False
    tcp = socket.socket(socket.AF_INET6 if socket.has_ipv6 else socket.AF_INET)
    assert sockets.set_no_delay(tcp.fileno()) is True and nodelay(tcp)
    tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # the original still works
    for s in (udp, unix_a, unix_b, tcp):
        s.close()
    os.close(read)
    os.close(write)
