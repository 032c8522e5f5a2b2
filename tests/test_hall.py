"""A lecture hall on loopback, as ``deploy/serve.py`` starts it: Redis, HAProxy and two
replicas, one started by serve.py on 127.0.0.2 and one started apart on 127.0.0.3 with the
command README.md gives for another machine (``serve.py replica --env-file hall.env``); then
a crowd of 20 students through the proxy, in Streamlit's own websocket protocol
(``benchmarks/server/streamlit_client.py``), each keeping its cookies as a browser does.

- sticky routing: every request of a student (the page, its websocket, later requests)
  reaches one replica, by the replica's header on each response and by HAProxy's log (every
  request that carried a replica's cookie went to that replica);
- the class (issue 42's Join page) counts every student once across both replicas; a
  killed replica's students reconnect through the proxy to the other one and are back in
  the class with their answers, and the teacher whose Lesson was on it keeps control;
- Redis stopped under a class: the Join page says the class is paused, and once Redis is
  back the student's answer is there;
- SIGTERM stops every process serve.py started.

Skipped with the reason where redis-server or haproxy is missing; required in CI.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from benchmarks.server import streamlit_client as sc
from benchmarks.server.class_client import ClassSession, class_code, page_text
from deploy import serve
from gptviz.classroom import codes
from gptviz.classroom.records import Pinned, Snapshot
from gptviz.classroom.redis_store import RedisStore
from tests.hall_helpers import program
from tests.helpers import ROOT, own_thread, run_alone

pytestmark = pytest.mark.hall
STUDENTS = 20
TIMEOUT_S = 120  # per script run (a shared, loaded machine); nothing here is timed
ONES = Snapshot(3, "Ids → one-hot rows", "How many **ones**?", "choice", ("4", "5", "100"), 1,
                why="Five ones, one per row.", key="ones")


def healthy(address: str) -> bool:
    """Whether the replica at ``address`` (host:port) answers its health check (the proxy
    counts a replica up before its first checks)."""
    try:
        with urllib.request.urlopen(f"http://{address}/_stcore/health", timeout=5) as r:
            return r.status == 200
    except OSError:
        return False


def alive(pid: int) -> bool:
    try:
        Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][0] != "Z"  # not a zombie


class HallUnderTest:
    """``python deploy/serve.py`` (a subprocess, as a person runs it) plus a replica
    started apart, all on free loopback ports, in a temporary run folder."""

    def __init__(self, run: Path) -> None:
        program("redis-server")
        program("haproxy")
        self.run, self.port = run, serve.free_port()
        first, self.remote_port = serve.free_port("127.0.0.2"), serve.free_port("127.0.0.3")
        self.serve = subprocess.Popen(
            [sys.executable, str(ROOT / "deploy" / "serve.py"), "--replicas", "1",
             "--hosts", "127.0.0.2", "--first-port", str(first),
             "--remote", f"127.0.0.3:{self.remote_port}", "--bind", "127.0.0.1",
             "--port", str(self.port), "--redis-port", str(serve.free_port()),
             "--run", str(run), "--no-restart"],
            cwd=ROOT, stdout=(run.parent / "serve.out").open("w"), stderr=subprocess.STDOUT)
        self.url, self.remote = f"http://127.0.0.1:{self.port}", None
        if not serve.wait_for(lambda: (run / "hall.env").is_file(), 60, self.serve):
            self.fail("serve.py wrote no hall.env")
        self.remote = subprocess.Popen(  # the documented command for another machine
            [sys.executable, str(ROOT / "deploy" / "serve.py"), "replica", "--env-file",
             str(run / "hall.env"), "--address", "127.0.0.3", "--port", str(self.remote_port)],
            cwd=ROOT, stdout=(run.parent / "remote.log").open("w"), stderr=subprocess.STDOUT)
        if not serve.wait_for(lambda: "proxy" in self.pids(), 240, self.serve):
            self.fail("serve.py did not start the hall")
        if not serve.wait_for(lambda: self.up() == {"r1", "x1"}, 120):
            self.fail(f"the proxy does not see both replicas up: {self.up()}")
        replicas = re.findall(r"server \w+ (\S+) cookie", (run / "haproxy.cfg").read_text())
        if not serve.wait_for(lambda: all(healthy(a) for a in replicas), 240):
            self.fail(f"a replica does not answer at its own address: {replicas}")
        try:
            run_alone(self.warm())
        except BaseException:
            self.stop()
            raise

    async def warm(self) -> None:
        """One run of the first page on each replica at its own address (its first run
        imports the app's modules), before the students come."""
        async def one(address: str) -> None:
            s = sc.ProtocolSession(f"ws://{address}", TIMEOUT_S)
            await s.connect()
            await s.open("")
            await s.close()
        cfg = (self.run / "haproxy.cfg").read_text()
        await asyncio.gather(*(one(a) for a in re.findall(r"server \w+ (\S+) cookie", cfg)))

    def fail(self, why: str) -> None:
        self.stop()
        out = (self.run.parent / "serve.out").read_text()[-3000:]
        pytest.fail(f"{why}\n{out}")

    def pids(self) -> dict[str, int]:
        try:
            return json.loads((self.run / "pids.json").read_text())
        except (OSError, ValueError):
            return {}

    def log(self) -> str:
        return (self.run / "logs" / "haproxy.log").read_text()

    def up(self) -> set[str]:
        """The replicas the proxy sees up (its stats socket)."""
        return {name for name, state in serve.proxy_status(self.run / "haproxy.sock").items()
                if state == "UP"}

    def served(self) -> list[tuple[str, str]]:
        """(replica, the SERVERID cookie the request carried) for each request the proxy
        has logged that carried one."""
        return re.findall(r'^hall \S+ replicas/(\w+) \d+ -?\d+ "SERVERID=(\w+)"',
                          self.log(), re.M)

    def store(self) -> RedisStore:
        env = serve.read_env(self.run / "hall.env")
        return RedisStore.from_url(env["GPTVIZ_STORE"])

    def stop(self) -> None:
        for proc in (self.serve, self.remote):
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in (self.serve, self.remote):
            if proc is not None:
                try:
                    proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    proc.kill()


@pytest.fixture(scope="module")
def hall(tmp_path_factory):
    h = HallUnderTest(tmp_path_factory.mktemp("hall") / "run")
    yield h
    h.stop()


def get(url: str, cookies: dict[str, str]) -> str:
    """A request with the student's cookies: the replica that answered."""
    headers = {"Cookie": "; ".join(f"{k}={v}" for k, v in cookies.items())}
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=30) as r:
        r.read()
        return r.headers["X-Gptviz-Replica"]


def student_id(i: int) -> str:
    return f"student{i:03d}".ljust(22, "q")


# ---- sticky routing --------------------------------------------------------------------------

def test_every_request_of_a_student_reaches_one_replica(hall):
    async def student(i: int) -> tuple[sc.ProtocolSession, list[str]]:
        s = sc.ProtocolSession("ws" + hall.url.removeprefix("http"), TIMEOUT_S, cookies={})
        await s.connect()  # the page, then its websocket
        run = await s.open("")
        assert run.status == "ok" and not run.exceptions
        later = [await asyncio.to_thread(get, f"{hall.url}{path}", s.cookies)
                 for path in ("/_stcore/host-config", "/_stcore/health", "/")]
        await s.close()
        return s, later

    async def crowd():
        return await asyncio.gather(*(student(i) for i in range(STUDENTS)))

    sessions = run_alone(crowd())
    for s, later in sessions:
        assert s.cookies["SERVERID"] in ("r1", "x1")
        assert set(s.replicas + later) == {s.cookies["SERVERID"]}, (s.replicas, later)
    assert {s.cookies["SERVERID"] for s, _ in sessions} == {"r1", "x1"}  # both had students
    serve.wait_for(lambda: len(hall.served()) >= 4 * STUDENTS, 10)  # (a websocket's line
    served = hall.served()  # is written when it closes)
    assert len(served) >= 4 * STUDENTS
    assert all(server == cookie for server, cookie in served if cookie), \
        [pair for pair in served if pair[1] and pair[0] != pair[1]][:5]
    env = (hall.run / "hall.env").read_text()  # one secret for every replica, kept private
    assert re.search(r"STREAMLIT_SERVER_COOKIE_SECRET=[0-9a-f]{64}\n", env)
    assert (hall.run / "cookie-secret").stat().st_mode & 0o077 == 0


# ---- rate limits count the client the proxy forwards ------------------------------------------

async def wrong_codes(url: str, source: str, n: int, headers: dict | None = None) -> list[str]:
    """A device at ``source`` types ``n`` wrong codes on the Join page, through the proxy:
    what the page says each time."""
    s = ClassSession("ws" + url.removeprefix("http"), TIMEOUT_S)
    s.source, s.headers = source, headers or {}
    await s.connect()
    run = await s.open("join")
    said = []
    for _ in range(n):
        run = await s.type_key(run, "class_code_typed", "ZZZZZZ")
        run = await s.press(run, "class_join")
        said.append(" ".join(run.texts("alert")))
    await s.close()
    return said


@own_thread
def test_the_join_limit_counts_each_device_behind_the_proxy(hall):
    """Every student reaches a replica from the proxy's address; the limits count the
    address the proxy forwards, and not one a device writes itself."""
    with asyncio.Runner() as loop:
        first = loop.run(wrong_codes(hall.url, "127.0.0.5", 6))
        assert all("No class has the code" in x for x in first[:5]), first
        assert "Too many wrong codes from this device" in first[5]  # this device waits
        other = loop.run(wrong_codes(hall.url, "127.0.0.6", 1))  # another device: not slowed
        assert "No class has the code" in other[0], other
        forged = loop.run(wrong_codes(hall.url, "127.0.0.7", 1,  # claims to be another
                                      {"X-Forwarded-For": "127.0.0.8"}))
        assert "No class has the code" in forged[0], forged
        again = loop.run(wrong_codes(hall.url, "127.0.0.8", 5))  # not counted for 127.0.0.8
        assert all("No class has the code" in x for x in again), again


# ---- the class across replicas, and a replica killed -----------------------------------------

async def join_and_answer(url: str, code: str, i: int, choice: int
                          ) -> tuple[sc.ProtocolSession, sc.Run]:
    """A student (an id in a cookie, as the Join page keeps it) joins from the link with the
    code, picks ``choice`` and sends it."""
    s = sc.ProtocolSession("ws" + url.removeprefix("http"), TIMEOUT_S,
                           cookies={"gptviz_student": student_id(i)})
    await s.connect()
    run = await s.open("join", f"code={code}")
    run = await s.press(run, "class_join")
    radio = f"class_answer_{code}_1"  # the browser sends the option's label
    run = await s.choose(run, radio, string_value=s.widget(run, radio).options[choice])
    run = await s.press(run, "class_send_1")
    assert run.status == "ok" and not run.exceptions, run.exceptions
    return s, run


def shown(run: sc.Run) -> str:
    return " ".join(run.texts("markdown") + run.texts("alert") + run.texts("html"))


@own_thread
def test_the_class_counts_every_student_once_and_a_killed_replica_loses_no_answer(hall):
    store = hall.store()
    info, token = store.create(Pinned("m", "p", {"steps": 14}), "teacher")
    store.open_step(info.code, token, ONES.step, ONES)
    choices = {i: i % 3 for i in range(STUDENTS)}
    with asyncio.Runner() as loop:  # one event loop: the sessions' websockets live in it
        teacher, trun = loop.run(teacher_starts_on(hall.url, "r1"))
        taught = class_code(trun)
        assert taught and store.get(taught).step == 1
        sessions = [s for s, _ in loop.run(together(*(
            join_and_answer(hall.url, info.code, i, choices[i]) for i in range(STUDENTS))))]
        on = {i: s.cookies["SERVERID"] for i, s in enumerate(sessions)}
        assert set(on.values()) == {"r1", "x1"}
        tally = store.tally(info.code, 1)
        assert (tally.joined, tally.answered) == (STUDENTS, STUDENTS)
        assert tally.counts == tuple(sum(c == k for c in choices.values()) for k in range(3))

        victims = [i for i, r in on.items() if r == "r1"]
        os.kill(hall.pids()["r1"], signal.SIGKILL)  # in the middle of the class

        async def back(s: sc.ProtocolSession) -> sc.Run:
            run = await s.reconnect()  # the browser's reconnection: the same cookies
            assert s.replicas[-1] == "x1"
            return run

        runs = loop.run(together(*(back(sessions[i]) for i in victims)))
        for i, run in zip(victims, runs, strict=True):
            assert run.status == "ok" and not run.exceptions
            assert f"Sent: {ONES.choices[choices[i]]}" in shown(run).replace("*", "")
        assert store.tally(info.code, 1).counts == tally.counts  # nothing lost, nothing twice
        again = loop.run(sessions[victims[0]].press(runs[0], "class_send_1"))
        assert again.status == "ok"
        assert store.tally(info.code, 1).answered == STUDENTS

        trun = loop.run(back(teacher))  # the teacher's tab was on the killed replica too
        assert class_code(trun) == taught, page_text(trun)[:400]  # the class bar, resumed
        trun = loop.run(teacher.press(trun, "lesson_next"))
        assert trun.status == "ok" and not trun.exceptions
        assert store.get(taught).step == 2  # still the teacher's to move
        for s in [teacher, *sessions]:
            loop.run(s.close())


async def together(*coroutines):
    return await asyncio.gather(*coroutines)


async def teacher_starts_on(url: str, replica: str) -> tuple[ClassSession, sc.Run]:
    """The teacher's Lesson, on ``replica`` (its proxy cookie), starts a class."""
    t = ClassSession("ws" + url.removeprefix("http"), TIMEOUT_S, {"SERVERID": replica})
    await t.connect()
    run = await t.open("lesson", "model=mathematics-char")
    run = await t.press(run, "class_start")
    assert t.replicas[-1] == replica and "gptviz_teacher" in t.cookies, page_text(run)[:400]
    return t, run


@own_thread
def test_redis_restarted_the_page_says_paused_and_the_class_resumes(hall):
    store = hall.store()
    info, token = store.create(Pinned("m", "p", {"steps": 14}), "teacher")
    store.open_step(info.code, token, ONES.step, ONES)
    loop = asyncio.Runner()  # one event loop: the session's websocket lives in it
    s, run = loop.run(join_and_answer(hall.url, info.code, 99, 2))
    teacher, trun = loop.run(teacher_starts_on(hall.url, "x1"))
    taught = class_code(trun)
    os.kill(hall.pids()["redis"], signal.SIGTERM)  # serve.py runs with --no-restart
    serve.wait_for(lambda: not alive(hall.pids()["redis"]), 30)
    paused = loop.run(s._rerun())  # the page's next tick
    assert paused.status == "ok" and not paused.exceptions
    assert "class is paused" in shown(paused)
    tpaused = loop.run(teacher._rerun())  # the teacher's Lesson: paused too, no traceback
    assert tpaused.status == "ok" and not tpaused.exceptions
    assert "class is paused" in page_text(tpaused)
    reloaded = ClassSession(teacher.base_ws, TIMEOUT_S, dict(teacher.cookies))
    loop.run(reloaded.connect())  # the teacher's tab reloaded while Redis is away
    rrun = loop.run(reloaded.open("lesson", "model=mathematics-char"))
    assert rrun.status == "ok" and not rrun.exceptions
    assert "class is paused" in page_text(rrun) and "does not open it" not in page_text(rrun)
    redis = serve.spawn([program("redis-server"), str(hall.run / "redis.conf")],
                        hall.run / "logs" / "redis-again.log", death=signal.SIGTERM)
    try:
        env = serve.read_env(hall.run / "hall.env")
        port = int(env["GPTVIZ_STORE"].rsplit(":", 1)[1].split("/")[0])
        password = (hall.run / "redis-password").read_text().strip()
        assert serve.wait_for(lambda: serve.redis_ping("127.0.0.1", port, password), 30)
        back = loop.run(s._rerun())
        assert back.status == "ok" and not back.exceptions
        assert "Sent: 100" in shown(back).replace("*", "")  # the answer kept on disk
        assert store.tally(info.code, 1).counts == (0, 0, 1)
        assert class_code(loop.run(teacher._rerun())) == taught  # the class bar again
        for _ in range(40):  # the reloaded tab asks by itself, and gets its class back
            rrun = loop.run(reloaded.poll(rrun))
            if class_code(rrun):
                break
            time.sleep(0.3)
        assert class_code(rrun) == taught, page_text(rrun)[:400]
        for session in (s, teacher, reloaded):
            loop.run(session.close())
    finally:
        loop.close()
        serve.stop(redis)


def test_sigterm_stops_every_process_the_hall_started(hall):
    pids = hall.pids()
    assert {"redis", "r1", "proxy"} <= pids.keys()
    hall.serve.send_signal(signal.SIGTERM)
    assert hall.serve.wait(timeout=60) == 0
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(alive(p) for p in pids.values()):
        time.sleep(0.2)
    assert not [name for name, p in pids.items() if alive(p)]
    assert (hall.run / "redis" / "appendonlydir").is_dir()  # Redis's data, on disk
    assert not list(ROOT.glob("**/cookie-secret"))  # (never in the repository)


def test_no_secret_is_in_the_repository_and_the_configuration_is_valid(tmp_path):
    haproxy = program("haproxy")
    cfg = tmp_path / "haproxy.cfg"
    cfg.write_text(serve.haproxy_cfg("127.0.0.1", 8080, [
        serve.Backend("r1", "127.0.0.1", 8601), serve.Backend("x1", "10.0.0.12", 8501)]))
    checked = subprocess.run([haproxy, "-c", "-f", str(cfg)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    text = cfg.read_text()
    for needed in ("cookie SERVERID insert indirect nocache", "option httpchk GET "
                   "/_stcore/health", "timeout tunnel", "option forwardfor", "balance "):
        assert needed in text
    conf = serve.redis_conf(tmp_path, 6390, "pw", ["127.0.0.1"])
    assert "appendonly yes" in conf and 'requirepass "pw"' in conf and "bind 127.0.0.1" in conf
    tracked = subprocess.run(["git", "-C", str(ROOT), "ls-files"], capture_output=True,
                             text=True).stdout.split()
    assert not [f for f in tracked if "secret" in f.lower() or f.endswith(".env")]
    assert codes.valid_id(student_id(1))


def test_the_compose_files_match_what_serve_py_runs():
    """deploy/compose.yaml cannot be run here (no container runtime); what can be checked
    is that its proxy configuration is the one serve.py writes, and that its replicas get
    the same settings as serve.py's."""
    assert (ROOT / "deploy" / "haproxy-compose.cfg").read_text() == serve.compose_cfg()
    yaml = pytest.importorskip("yaml")
    compose = yaml.safe_load((ROOT / "deploy" / "compose.yaml").read_text())
    replicas = {k: v for k, v in compose["services"].items() if k.startswith("r")
                and k != "redis"}
    assert sorted(replicas) == [f"r{i + 1}" for i in range(serve.COMPOSE_REPLICAS)]
    for service in replicas.values():
        assert set(service["environment"]) == set(serve.replica_env("s", "redis://", "t", "u"))
    proxy_ip = compose["services"]["proxy"]["networks"]["hall"]["ipv4_address"]
    assert replicas["r1"]["environment"]["GPTVIZ_TRUSTED_PROXIES"] == proxy_ip
    assert "ports" not in compose["services"]["redis"]  # Redis stays on the private network
    assert "NOT TESTED HERE" in (ROOT / "deploy" / "compose.yaml").read_text()
