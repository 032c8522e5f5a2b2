"""A lecture hall on one machine: Redis, N Streamlit replicas of the app and HAProxy in
front of them, started together and stopped together.

    python deploy/serve.py --replicas 4 [--port 8080] [--bind 0.0.0.0] [--join-url URL]

It writes the configurations into a run folder outside the repository (``--run``, by
default ``~/.local/share/gptviz/hall``: Redis's data, the logs, the secrets), then starts

- Redis (Debian's ``redis-server``) on loopback with a password and its append-only file
  on (``appendonly yes``, synced every second), so a restarted Redis has every class back;
- N replicas, each ``streamlit run app.py`` on its own port, all with the same settings
  (the repository's ``.streamlit/config.toml`` and the same command line), the same
  ``server.cookieSecret`` (made for this deployment, kept in the run folder, mode 0600,
  handed to each replica in its environment: never on a command line, never in git) and
  the class store in Redis (``GPTVIZ_STORE``);
- HAProxy (Debian's ``haproxy``) on ``--bind``:``--port``: each browser is kept on one
  replica by a cookie the proxy sets (``SERVERID``), websockets are proxied with a long
  tunnel timeout, replicas are health-checked on ``/_stcore/health``, and a replica that
  stops answering has its students sent to another. The proxy forwards each student's
  address (``X-Forwarded-For``), which the replicas believe from the proxy only
  (``GPTVIZ_TRUSTED_PROXIES``).

Ctrl-C (or SIGTERM) stops the proxy, then the replicas, then Redis (which writes its data
out). A replica or Redis that dies meanwhile is started again (``--no-restart``: not).

Across machines: this machine runs Redis and the proxy (``--redis-bind`` adds its private
address for Redis; ``--remote HOST:PORT`` adds a replica running elsewhere), and each other
machine runs replicas with ``python deploy/serve.py replica --env-file hall.env --address
ITS_ADDRESS --port 8501``, ``hall.env`` being the file this command writes in the run
folder (the secret, Redis's address and password, the proxy's address). See README.md,
"A lecture hall".
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import resource
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]  # the repository: app.py, .streamlit/
DEFAULT_RUN = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
                   ) / "gptviz" / "hall"
FIRST_REPLICA_PORT = 8601
PING_S = 30  # Streamlit pings each websocket this often; the proxy's tunnel outlives it


# ---- what the run folder keeps ------------------------------------------------------------

def secret(path: Path, nbytes: int = 32) -> str:
    """The secret kept in ``path``, made (random, ``nbytes`` bytes as hex, mode 0600) on
    the first call: one per deployment, the same for every replica and every restart."""
    if path.is_file():
        found = path.read_text().strip()
        if found:
            return found
    path.parent.mkdir(parents=True, exist_ok=True)
    value = secrets.token_hex(nbytes)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(value + "\n")
    return value


def write_private(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` readable by this user only (it may hold a password)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(path, 0o600)
    return path


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free on ``host`` now."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def lan_address() -> str | None:
    """This machine's address on its local network, or None. Connecting a UDP socket only
    asks the routing table which address it would send from: no packet is sent."""
    for probe in ("10.255.255.255", "192.168.255.255"):
        with contextlib.suppress(OSError), socket.socket(socket.AF_INET,
                                                         socket.SOCK_DGRAM) as s:
            s.connect((probe, 9))
            found = s.getsockname()[0]
            if not found.startswith("127.") and found != "0.0.0.0":
                return found
    return None


# ---- the three configurations -------------------------------------------------------------

@dataclass(frozen=True)
class Backend:
    """A replica as the proxy knows it: its name (the cookie's value) and address."""

    name: str
    host: str
    port: int


def redis_conf(data: Path, port: int, password: str, binds: list[str]) -> str:
    """Redis's configuration: ``binds`` only (loopback, and a private address for replicas
    on other machines), a password, the append-only file synced every second."""
    quoted = password.replace('"', "")
    return "\n".join([
        f"bind {' '.join(binds)}",
        "protected-mode yes",
        f"port {port}",
        f'requirepass "{quoted}"',
        f"dir {data}",
        "appendonly yes",
        "appendfsync everysec",
        "save 300 1",  # a snapshot too, as a second copy
        "daemonize no",
        'logfile ""',
        "loglevel notice",
        "databases 4",
        "maxmemory-policy noeviction",  # never drop a class to make room
        "",
    ])


def max_connections(most: int = 20000) -> int:
    """The proxy's connection limit: ``most``, or what this system's file limit allows
    (each proxied connection holds two descriptors)."""
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    return most if hard == resource.RLIM_INFINITY else max(256, min(most, hard // 2 - 64))


def haproxy_cfg(bind: str, port: int, backends: list[Backend], log: str = "stdout",
                maxconn: int | None = None, stats_socket: Path | None = None,
                header: str = "Written by deploy/serve.py; edits are lost at its next start."
                ) -> str:
    """HAProxy's configuration for ``backends`` behind ``bind``:``port``.

    Sticky sessions: the proxy picks the replica with the fewest connections for a new
    browser and sets the cookie ``SERVERID`` to its name (``insert indirect nocache``:
    the replica never sees it, and no cache keeps it); every later request with that cookie
    (the page, its websocket, media, uploads) goes to the same replica while it is up.
    Websockets: once upgraded, a connection is a tunnel that may be quiet for up to
    ``timeout tunnel`` (Streamlit pings every ``PING_S`` s). A replica that does not answer
    ``/_stcore/health`` with "ok" three times running (within 30 s each: a replica busy with
    a crowd answers late) gets no new students; its own students' requests still go to it
    (``option persist``) until it refuses them, and then to another (``option redispatch``,
    ``retry-on``), which the cookie then names. A replica that was killed refuses at once:
    its students move on their next request. Every response says which replica served it
    (``X-Gptviz-Replica``), and the log has one line per request with the cookie it carried
    and the replica that served it.
    ``stats_socket``: a Unix socket (this user only) where ``proxy_status`` reads which
    replicas are up.
    """
    socket_line = (f"    stats socket {stats_socket} mode 600 level user\n"
                   if stats_socket else "")
    servers = "\n".join(f"    server {b.name} {b.host}:{b.port} cookie {b.name}"
                        for b in backends)
    return f"""# {header}
global
    log {log} format raw local0 info
    maxconn {maxconn or max_connections()}
{socket_line}
defaults
    mode http
    log global
    log-format "hall %ci %b/%s %ST %Tt %{{+Q}}CC %{{+Q}}r"
    option dontlognull
    option forwardfor
    option redispatch
    # a replica the health check calls down still gets its own students' requests; only
    # when it refuses them do they go elsewhere (a busy replica answers its checks late)
    option persist
    retries 3
    # a replica killed mid-request: try again (elsewhere on the last try), not a 502
    retry-on conn-failure empty-response response-timeout
    timeout connect 5s
    timeout client 60s
    timeout server 120s
    timeout http-request 30s
    timeout http-keep-alive 15s
    timeout queue 30s
    timeout tunnel 2h
    timeout client-fin 10s
    timeout server-fin 10s

frontend hall
    bind {bind}:{port}
    # only the address the proxy saw counts (the replicas trust this header from us alone)
    http-request del-header X-Forwarded-For
    capture cookie SERVERID= len 32
    default_backend replicas

backend replicas
    balance leastconn
    cookie SERVERID insert indirect nocache httponly
    option httpchk GET /_stcore/health
    http-check expect string ok
    default-server check inter 3s fastinter 1s downinter 2s fall 3 rise 2 maxconn 2000
    default-server init-addr last,libc,none
    timeout check 30s
    http-response set-header X-Gptviz-Replica %[srv_name]
{servers}
"""


def replica_env(secret_value: str, store_url: str, trusted: str, join_url: str | None
                ) -> dict[str, str]:
    """What every replica gets in its environment (the same for all of them)."""
    env = {"STREAMLIT_SERVER_COOKIE_SECRET": secret_value, "GPTVIZ_STORE": store_url,
           "GPTVIZ_TRUSTED_PROXIES": trusted}
    if join_url:
        env["GPTVIZ_JOIN_URL"] = join_url
    return env


def env_file(env: dict[str, str]) -> str:
    """``env`` as lines ``NAME=value`` (values shell-quoted), as ``read_env`` reads them."""
    return "".join(f"{k}={shlex.quote(v)}\n" for k, v in env.items())


def read_env(path: Path) -> dict[str, str]:
    """The ``NAME=value`` lines of an env file (``#`` comments, shell quoting)."""
    env = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            name, _, value = line.partition("=")
            words = shlex.split(value)
            env[name.strip()] = words[0] if words else ""
    return env


def replica_command(host: str, port: int) -> list[str]:
    """The command of one replica: the app, headless, on ``host``:``port``; every other
    setting comes from the repository's .streamlit/config.toml, the same for all."""
    return [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"),
            "--server.headless", "true", "--server.address", host, "--server.port", str(port),
            "--server.websocketPingInterval", str(PING_S),
            "--browser.gatherUsageStats", "false"]


# ---- processes ----------------------------------------------------------------------------

def _die_with_parent(sig: int) -> Callable[[], None]:
    def set_it() -> None:  # (in the child, before exec)
        with contextlib.suppress(Exception):  # PR_SET_PDEATHSIG (Linux)
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, int(sig))
    return set_it


def spawn(cmd: list[str], log: Path, env: dict[str, str] | None = None, cwd: Path = ROOT,
          death: int = signal.SIGKILL) -> subprocess.Popen:
    """Start ``cmd`` in a session of its own (so Ctrl-C in the terminal reaches this script
    only, which then stops everything in order), its output appended to ``log``. If this
    script dies without stopping it (kill -9), the child gets ``death`` (Linux; Redis gets
    SIGTERM, to write its data out). Call it from the main thread: the child gets ``death``
    when the thread that started it ends."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        return subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env={**os.environ, **(env or {})},
                                start_new_session=True, preexec_fn=_die_with_parent(death))


def stop(proc: subprocess.Popen | None, grace_s: float = 15) -> None:
    """SIGTERM, then SIGKILL after ``grace_s``."""
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def healthy(url: str, timeout_s: float = 2) -> bool:
    """Whether ``url``/_stcore/health answers "ok"."""
    try:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=timeout_s) as r:
            return r.read() == b"ok"
    except OSError:
        return False


def redis_ping(host: str, port: int, password: str, timeout_s: float = 2) -> bool:
    """Whether Redis answers PING with the password (one short exchange, no client library:
    this script runs before anything is installed on a bare machine too)."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as s:
            s.sendall(b"*2\r\n$4\r\nAUTH\r\n$%d\r\n%s\r\n*1\r\n$4\r\nPING\r\n"
                      % (len(password), password.encode()))
            got = b""
            while got.count(b"\r\n") < 2:
                chunk = s.recv(256)
                if not chunk:
                    break
                got += chunk
            return got == b"+OK\r\n+PONG\r\n"
    except OSError:
        return False


def proxy_status(sock: Path) -> dict[str, str]:
    """Each replica's state as the proxy sees it ("UP", "DOWN", "MAINT"...), read from its
    stats socket; empty when the proxy does not answer."""
    try:
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(5)
            s.connect(str(sock))
            s.sendall(b"show stat\n")
            data = b""
            while chunk := s.recv(65536):
                data += chunk
    except OSError:
        return {}
    rows = [line.split(",") for line in data.decode().splitlines() if line and line[0] != "#"]
    return {r[1]: r[17].split()[0] for r in rows
            if len(r) > 17 and r[0] == "replicas" and r[1] not in ("BACKEND", "FRONTEND")}


def wait_for(check, timeout_s: float, proc: subprocess.Popen | None = None) -> bool:
    """Poll ``check()`` until true (then True), the timeout, or ``proc`` exiting."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return True
        if proc is not None and proc.poll() is not None:
            return False
        time.sleep(0.2)
    return False


def need(program: str, package: str) -> str:
    found = shutil.which(program) or next(
        (p for p in (f"/usr/sbin/{program}", f"/usr/bin/{program}") if Path(p).exists()), None)
    if found is None:
        raise SystemExit(f"{program} is not installed: apt-get install {package}")
    return found


# ---- the stack ----------------------------------------------------------------------------

@dataclass
class Hall:
    """Redis, the replicas and the proxy, with their ports and processes. ``start()``,
    ``stop()``, or use it in a ``with`` block; ``url`` is the proxy's address."""

    replicas: int = 2
    run: Path = DEFAULT_RUN
    bind: str = "127.0.0.1"
    port: int = 8080
    hosts: list[str] = field(default_factory=lambda: ["127.0.0.1"])  # replicas, in turn
    remote: list[tuple[str, int]] = field(default_factory=list)  # replicas elsewhere
    redis_binds: list[str] = field(default_factory=lambda: ["127.0.0.1"])
    redis_port: int = 6390
    first_port: int = FIRST_REPLICA_PORT
    trusted: str = "127.0.0.0/8,::1"  # where the proxy connects from, as replicas see it
    join_url: str | None = None
    restart: bool = True
    quiet: bool = False
    procs: dict[str, subprocess.Popen] = field(default_factory=dict)
    backends: list[Backend] = field(default_factory=list)
    stopping: bool = False

    # -- paths and settings --
    @property
    def logs(self) -> Path:
        return self.run / "logs"

    @property
    def url(self) -> str:
        host = "127.0.0.1" if self.bind in ("0.0.0.0", "::", "*") else self.bind
        return f"http://{host}:{self.port}"

    def say(self, text: str) -> None:
        if not self.quiet:
            print(text, flush=True)

    def store_url(self, host: str | None = None) -> str:
        password = secret(self.run / "redis-password")
        return f"redis://:{password}@{host or self.redis_binds[0]}:{self.redis_port}/0"

    def env(self, redis_host: str | None = None) -> dict[str, str]:
        return replica_env(secret(self.run / "cookie-secret"), self.store_url(redis_host),
                           self.trusted, self.join_url)

    # -- starting --
    def start(self) -> Hall:
        self.run.mkdir(parents=True, exist_ok=True)
        os.chmod(self.run, 0o700)
        need("redis-server", "redis-server")
        need("haproxy", "haproxy")
        self.start_redis()
        for i in range(self.replicas):
            host = self.hosts[i % len(self.hosts)]
            self.backends.append(Backend(f"r{i + 1}", host, self.first_port + i))
        self.backends += [Backend(f"x{i + 1}", h, p) for i, (h, p) in enumerate(self.remote)]
        private = [b for b in self.redis_binds if not b.startswith("127.")]
        write_private(self.run / "hall.env", "# deploy/serve.py: for replicas on other "
                      "machines (python deploy/serve.py replica --env-file hall.env ...)\n"
                      + env_file(self.env(private[0] if private else None)))
        for b in self.backends:
            if b.name.startswith("r"):
                self.start_replica(b)
        for b in self.backends:
            if b.name.startswith("r") and not wait_for(
                    lambda b=b: healthy(f"http://{b.host}:{b.port}"), 180, self.procs[b.name]):
                raise SystemExit(f"replica {b.name} did not start: see {self.logs}/{b.name}.log")
            self.say(f"replica {b.name} on {b.host}:{b.port}: up")
        self.start_proxy()
        return self

    def start_redis(self) -> None:
        password = secret(self.run / "redis-password")
        data = self.run / "redis"
        data.mkdir(parents=True, exist_ok=True)
        conf = write_private(self.run / "redis.conf", redis_conf(
            data, self.redis_port, password, self.redis_binds))
        self.procs["redis"] = spawn([need("redis-server", "redis-server"), str(conf)],
                                    self.logs / "redis.log", death=signal.SIGTERM)
        self.write_pids()
        if not wait_for(lambda: redis_ping(self.redis_binds[0], self.redis_port, password), 30,
                        self.procs["redis"]):
            raise SystemExit(f"Redis did not start: see {self.logs}/redis.log")
        self.say(f"redis on {', '.join(self.redis_binds)}:{self.redis_port} (password in "
                 f"{self.run / 'redis-password'}, data in {data})")

    def start_replica(self, b: Backend) -> None:
        self.procs[b.name] = spawn(replica_command(b.host, b.port),
                                   self.logs / f"{b.name}.log", self.env())
        self.write_pids()

    def start_proxy(self) -> None:
        cfg = self.run / "haproxy.cfg"
        cfg.write_text(haproxy_cfg(self.bind, self.port, self.backends,
                                   stats_socket=self.run / "haproxy.sock"))
        haproxy = need("haproxy", "haproxy")
        check = subprocess.run([haproxy, "-c", "-q", "-f", str(cfg)], capture_output=True,
                               text=True)
        if check.returncode:
            raise SystemExit(f"HAProxy refused {cfg}:\n{check.stdout}{check.stderr}")
        self.procs["proxy"] = spawn([haproxy, "-db", "-f", str(cfg)], self.logs / "haproxy.log")
        self.write_pids()
        if not wait_for(lambda: healthy(self.url), 60, self.procs["proxy"]):
            raise SystemExit(f"HAProxy did not answer: see {self.logs}/haproxy.log")
        self.say(f"proxy on {self.bind}:{self.port} → {len(self.backends)} replicas: "
                 f"{self.url}" + (f" (students join at {self.join_url}/join)"
                                  if self.join_url else ""))

    def write_pids(self) -> None:
        """``pids.json`` in the run folder: each process's name and id (to watch, or to kill
        one replica on purpose)."""
        (self.run / "pids.json").write_text(json.dumps(
            {name: proc.pid for name, proc in self.procs.items()}) + "\n")

    # -- running and stopping --
    def watch(self) -> None:
        """Until ``stop()``: start again a replica or Redis that died (unless
        ``restart`` is off); the proxy dying ends the hall."""
        while not self.stopping:
            time.sleep(1)
            for name, proc in list(self.procs.items()):
                if self.stopping or proc.poll() is None:
                    continue
                if name == "proxy":
                    self.say(f"the proxy exited ({proc.returncode}): stopping the hall")
                    return
                self.say(f"{name} exited ({proc.returncode})"
                         + ("; starting it again" if self.restart else ""))
                if not self.restart:
                    continue
                if name == "redis":
                    self.start_redis()
                else:
                    self.start_replica(next(b for b in self.backends if b.name == name))

    def stop(self) -> None:
        """The proxy first (no new requests), then the replicas, then Redis (which writes
        its data out)."""
        self.stopping = True
        order = ["proxy", *(n for n in self.procs if n not in ("proxy", "redis")), "redis"]
        replicas = [self.procs.get(n) for n in order[1:-1]]
        stop(self.procs.get("proxy"))
        for proc in replicas:  # all at once, then wait for each
            if proc is not None and proc.poll() is None:
                proc.terminate()
        for proc in replicas:
            stop(proc)
        stop(self.procs.get("redis"), grace_s=30)

    def __enter__(self) -> Hall:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *_: object) -> None:
        self.stop()


COMPOSE_REPLICAS = 2  # deploy/compose.yaml's replicas, r1 and r2 (add more: see there)


def compose_cfg(replicas: int = COMPOSE_REPLICAS) -> str:
    """The proxy's configuration for ``deploy/compose.yaml``: replicas named ``r1``, ``r2``...
    (the compose services) on port 8501; ``deploy/haproxy-compose.cfg`` is this text
    (``python deploy/serve.py compose-config 4 > deploy/haproxy-compose.cfg`` for 4)."""
    return haproxy_cfg("*", 8080, [Backend(f"r{i + 1}", f"r{i + 1}", 8501)
                                   for i in range(replicas)], maxconn=20000,
                       header="deploy/compose.yaml's proxy, written by python deploy/serve.py "
                              f"compose-config {replicas}")


def replica_main(argv: list[str]) -> None:
    """One replica on this machine for a hall whose proxy and Redis are elsewhere."""
    p = argparse.ArgumentParser(prog="serve.py replica", description=replica_main.__doc__)
    p.add_argument("--env-file", type=Path, required=True,
                   help="hall.env from the proxy's machine (its run folder)")
    p.add_argument("--address", required=True, help="this machine's address the proxy reaches")
    p.add_argument("--port", type=int, default=8501)
    args = p.parse_args(argv)
    env = read_env(args.env_file)
    proc = subprocess.Popen(replica_command(args.address, args.port), cwd=ROOT,
                            env={**os.environ, **env})
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: proc.terminate())
    sys.exit(proc.wait())


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["replica"]:
        return replica_main(argv[1:])
    if argv[:1] == ["compose-config"]:
        return print(compose_cfg(int(argv[1]) if argv[1:] else COMPOSE_REPLICAS), end="")
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="python deploy/serve.py replica --help: a replica "
                                       "on another machine; python deploy/serve.py "
                                       "compose-config N: the proxy's configuration for "
                                       "deploy/compose.yaml with N replicas")
    p.add_argument("--replicas", type=int, default=2, help="replicas on this machine")
    p.add_argument("--port", type=int, default=8080, help="the proxy's port (students')")
    p.add_argument("--bind", default="0.0.0.0",
                   help="the proxy's address (0.0.0.0: every network of this machine)")
    p.add_argument("--hosts", nargs="+", default=["127.0.0.1"],
                   help="addresses the local replicas listen on, in turn")
    p.add_argument("--remote", action="append", default=[], metavar="HOST:PORT",
                   help="a replica on another machine (started there with 'replica')")
    p.add_argument("--redis-bind", nargs="+", default=["127.0.0.1"],
                   help="Redis's addresses: loopback, and a private one for remote replicas")
    p.add_argument("--redis-port", type=int, default=6390)
    p.add_argument("--first-port", type=int, default=FIRST_REPLICA_PORT,
                   help="the first replica's port; the others follow")
    p.add_argument("--trusted", default="127.0.0.0/8,::1",
                   help="addresses the proxy connects to replicas from (X-Forwarded-For "
                        "is believed from these only)")
    p.add_argument("--join-url", help="the address students type (default: this machine's "
                                      "network address and the proxy's port)")
    p.add_argument("--run", type=Path, default=DEFAULT_RUN,
                   help="configurations, secrets, Redis's data and logs (outside git)")
    p.add_argument("--no-restart", action="store_true",
                   help="do not start a replica or Redis again when it dies")
    args = p.parse_args(argv)
    if args.replicas < 0 or (args.replicas == 0 and not args.remote):
        p.error("at least one replica (--replicas N, or --remote HOST:PORT)")
    remote = []
    for spec in args.remote:
        host, _, port = spec.rpartition(":")
        if not host or not port.isdigit():
            p.error(f"--remote {spec!r}: give HOST:PORT, e.g. 10.0.0.12:8501")
        remote.append((host, int(port)))
    join_url = args.join_url
    if join_url is None and args.bind in ("0.0.0.0", "::", "*") and (lan := lan_address()):
        join_url = f"http://{lan}:{args.port}"
    elif join_url is None and args.bind not in ("0.0.0.0", "::", "*"):
        join_url = f"http://{args.bind}:{args.port}"
    hall = Hall(args.replicas, args.run, args.bind, args.port, args.hosts, remote,
                args.redis_bind, args.redis_port, args.first_port,
                args.trusted, join_url, not args.no_restart)

    def finish(*_: object) -> None:
        raise KeyboardInterrupt  # wherever it is: starting, or watching

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, finish)
    try:
        hall.start()
        hall.say("the hall is open; Ctrl-C stops it")
        hall.watch()
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        hall.say("stopping: the proxy, the replicas, then Redis")
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not cut it short
        hall.stop()
        hall.say("stopped")


if __name__ == "__main__":
    main()
