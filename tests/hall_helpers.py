"""What the lecture hall's tests share: a Redis of their own (Debian's redis-server on a
free loopback port, a password, the append-only file in a temporary folder), started with
``deploy/serve.py``'s own configuration, and the skip (or, in CI, the failure) when Redis
or HAProxy is not installed."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from deploy import serve

NEEDED = {"redis-server": "redis-server", "haproxy": "haproxy"}


def program(name: str) -> str:
    """The path of ``redis-server`` or ``haproxy``; where it is missing the test is skipped
    with the reason, or fails in CI (GPTVIZ_REQUIRE_BROWSER=1 requires every tool)."""
    found = shutil.which(name) or next((p for p in (f"/usr/sbin/{name}", f"/usr/bin/{name}")
                                        if Path(p).exists()), None)
    if found is None:
        reason = f"{name} is not installed: apt-get install -y {NEEDED[name]}"
        if os.environ.get("GPTVIZ_REQUIRE_BROWSER") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    return found


class RedisServer:
    """``redis-server`` on 127.0.0.1 and a free port, data in ``folder``; ``url`` has the
    password. ``stop()`` shuts it down (writing its data), ``start()`` brings it back on
    the same port with the same data."""

    def __init__(self, folder: Path) -> None:
        self.folder, self.exe = folder, program("redis-server")
        self.port, self.password = serve.free_port(), serve.secret(folder / "password")
        self.url = f"redis://:{self.password}@127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen | None = None
        self.start()

    def start(self, after_s: float = 0) -> None:
        """Start Redis (``after_s`` seconds from now, without waiting for it: the process
        is started here, in this thread, which it must outlive)."""
        data = self.folder / "data"
        data.mkdir(parents=True, exist_ok=True)
        conf = serve.write_private(self.folder / "redis.conf", serve.redis_conf(
            data, self.port, self.password, ["127.0.0.1"]))
        cmd = [self.exe, str(conf)]
        if after_s:
            cmd = ["sh", "-c", f'sleep {after_s}; exec "$0" "$1"', *cmd]
        self.proc = serve.spawn(cmd, self.folder / "redis.log")
        if not after_s and not serve.wait_for(
                lambda: serve.redis_ping("127.0.0.1", self.port, self.password), 30, self.proc):
            raise RuntimeError(f"redis-server did not start: {self.folder / 'redis.log'}")

    def stop(self, hard: bool = False) -> None:
        if self.proc is not None and self.proc.poll() is None:
            if hard:
                self.proc.send_signal(signal.SIGKILL)
                self.proc.wait()
            else:
                serve.stop(self.proc, grace_s=30)
