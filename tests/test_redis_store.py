"""The class store on Redis (``gptviz.classroom.redis_store``) against a real Redis
(Debian's redis-server, started here on a free loopback port with a password): the same
answers as the SQLite store for any sequence of requests, exact counts when two server
processes' clients answer at once, a restart that keeps every answer, a Redis that is away
(the class is paused, then resumes) and classes that expire with all their keys."""

from __future__ import annotations

import itertools
import random
import threading
from dataclasses import replace
from functools import partial

import pytest
import redis

from gptviz.classroom import codes
from gptviz.classroom.errors import ClassError, NotFound
from gptviz.classroom.records import Pinned, Snapshot
from gptviz.classroom.redis_store import PAUSED, Paused, RedisStore
from gptviz.classroom.sqlite import SQLiteStore
from gptviz.classroom.store import Limits
from gptviz.classroom.stores import open_store
from tests.hall_helpers import RedisServer

pytestmark = pytest.mark.hall

CHOICE = Snapshot(3, "Ids", "How many **ones**?", "choice", ("4", "5", "100"), 1,
                  why="Five ones.", key="ones")
OTHER = Snapshot(5, "Attention", "Which token?", "choice", ("a", "b"), 0)  # key from its text
GUESS = Snapshot(11, "Logits", "P of the top token?", "number", value=41.5, low=0, high=100,
                 unit="%", key="top")
SMALL = Limits(ttl_s=3600, join_failures=2, join_window_s=60, answers_per_student=3,
               answers_per_client=7, answer_window_s=60, classes_per_client=5,
               students_per_class=4, live_classes=3)


class Clock:
    def __init__(self) -> None:
        self.t = 1.9e9

    def __call__(self) -> float:
        return self.t


@pytest.fixture(scope="module")
def redis_server(tmp_path_factory):
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    yield server
    server.stop()


@pytest.fixture
def clock() -> Clock:
    return Clock()


def redis_store(server: RedisServer, clock: Clock, limits: Limits | None = None) -> RedisStore:
    store = RedisStore.from_url(server.url, limits, clock=clock)
    store.r.flushdb()
    return store


@pytest.fixture
def store(redis_server, clock) -> RedisStore:
    s = redis_store(redis_server, clock)
    yield s
    s.close()


def ids(n: int, tag: str = "s") -> list[str]:
    return [f"{tag}{i:03d}".ljust(22, "x") for i in range(n)]


# ---- the same answers as SQLite ----------------------------------------------------------

def outcome(call):
    """What a call gave: its result as text, or its error's kind and message."""
    try:
        return ("ok", repr(call()))
    except ClassError as e:
        return ("error", type(e).__name__, str(e))


def scripted(store, clock: Clock, seed: int) -> list[tuple]:
    """A random class's life (seeded: the same requests for every store), and what each
    request gave. Codes and credentials are made in order, so both stores see the same."""
    rng = random.Random(seed)
    students, clients = ids(6), ["10.0.0.1", "10.0.0.2", "10.0.0.3"]
    classes: list[tuple[str, str]] = []
    log = []

    def pick_class() -> tuple[str, str]:
        if not classes or rng.random() < 0.05:
            return rng.choice(["ACDEFG", "bad", "acd-efg"]), "nope" * 11
        code, token = rng.choice(classes)
        return rng.choice([code, code.lower(), f" {code[:3]}-{code[3:]} "]), (
            token if rng.random() < 0.9 else "x" * 43)

    for _ in range(120):
        op = rng.choice(["create", "open", "open", "reveal", "end", "join", "join", "answer",
                         "answer", "answer", "hide", "read", "read", "time", "purge"])
        code, token = pick_class()
        student, client, q = rng.choice(students), rng.choice(clients), rng.randint(1, 3)
        try:  # mostly the current question (not logged: the same read on both stores)
            current = store.get(code).question
        except ClassError:
            current = None
        q = current if current and rng.random() < 0.7 else q
        calls = []
        if op == "create":
            try:
                info, made = store.create(Pinned("m", "p", {"steps": 14}), client)
                classes.append((info.code, made))
                got = ("ok", repr(info), made)
            except ClassError as e:
                got = ("error", type(e).__name__, str(e))
            log.append((op, got))
            continue
        if op == "open":
            snapshot = rng.choice([CHOICE, OTHER, GUESS, None, replace(CHOICE, key="again")])
            step = 7 if snapshot is None else snapshot.step
            calls = [partial(store.open_step, code, token, step, snapshot, title="None here")]
        elif op == "reveal":
            calls = [partial(store.reveal, code, token)]
        elif op == "end" and rng.random() < 0.3:
            calls = [partial(store.end, code, token)]
        elif op == "join":
            nick = rng.choice([None, "Ada", " Bo\u200b ", "x" * 30, "<b>hi</b>"])
            who = student if rng.random() < 0.95 else "bad id"
            calls = [partial(store.join, code, who, nick, client)]
        elif op == "answer":
            value = rng.choice([0, 1, 2, 5, "41,5", "nan", 150.0, 12.25, True, None])
            calls = [partial(store.answer, code, student, q, value, client)]
        elif op == "hide":
            calls = [partial(store.hide_nickname, code, token, student, rng.random() < 0.7)]
        elif op == "read":
            calls = [partial(store.get, code), partial(store.question, code, q),
                     partial(store.joined, code), partial(store.tally, code, q),
                     partial(store.my_answer, code, student, q),
                     partial(store.is_member, code, student), partial(store.students, code, token),
                     partial(store.results, code, token, per_student=True),
                     partial(store.check_teacher, code, token)]
        elif op == "time":
            clock.t += rng.choice([1, 30, 61, 61, 700, 700, 3700])
        elif op == "purge":
            calls = [store.purge]
        log.append((op, [outcome(call) for call in calls]))
    return log


def test_any_sequence_of_requests_gets_the_same_answers_as_sqlite(redis_server, tmp_path,
                                                                 monkeypatch):
    """Twelve random sequences of 120 requests each (small limits, so that they are met; the
    clock moves, so that windows close and classes expire): request by request, the Redis
    store answers what the SQLite store answers, results and messages alike."""
    def run(store, clock, seed) -> list[tuple]:
        made, tokens = itertools.count(), itertools.count()
        monkeypatch.setattr(codes, "new_code", lambda: "ACDEFGHJKMNP"[next(made) % 12] * 6)
        monkeypatch.setattr(codes, "new_token",
                            lambda: f"token-{next(tokens):04d}".ljust(43, "t"))
        return scripted(store, clock, seed)

    seen = set()
    for seed in range(12):
        lite_clock, redis_clock = Clock(), Clock()
        lite = SQLiteStore(tmp_path / f"{seed}.sqlite3", SMALL, clock=lite_clock)
        expected = run(lite, lite_clock, seed)
        lite.close()
        got = run(redis_store(redis_server, redis_clock, SMALL), redis_clock, seed)
        for i, (a, b) in enumerate(zip(got, expected, strict=True)):
            assert a == b, f"seed {seed}, request {i}: Redis {a} / SQLite {b}"
        seen |= {r[1] for _, rs in expected if isinstance(rs, list) for r in rs
                 if r[0] == "error"}
        seen |= {"ok " + op for op, rs in expected if isinstance(rs, list) and rs
                 and rs[0][0] == "ok"}
    assert {"NotFound", "Forbidden", "BadInput", "ClassEnded", "RateLimited", "Full",
            "ok answer", "ok reveal", "ok join", "ok purge"} <= seen, seen  # the paths ran


# ---- a hall: two server processes at once ----------------------------------------------

def test_two_servers_answering_at_once_count_exactly(redis_server, clock):
    """Two clients (two replicas) each with 6 threads: 120 students join and answer, some
    twice; every student is counted once and every last answer is kept."""
    limits = Limits(answers_per_client=10_000)
    a, b = redis_store(redis_server, clock, limits), RedisStore.from_url(
        redis_server.url, limits, clock=clock)
    info, token = a.create(Pinned("m", "p"), "teacher")
    b.open_step(info.code, token, 3, CHOICE)
    people = ids(120)
    final = {s: (i * 7) % 3 for i, s in enumerate(people)}

    def work(store, chunk: list[str]) -> None:
        for s in chunk:
            store.join(info.code, s, None, "10.0.0.9")
            store.answer(info.code, s, 1, (final[s] + 1) % 3, "10.0.0.9")  # changed below
            store.answer(info.code, s, 1, final[s], "10.0.0.9")

    threads = [threading.Thread(target=work, args=(store, people[k::12]))
               for k, store in enumerate([a, b] * 6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    tally = b.tally(info.code, 1)
    assert (tally.joined, tally.answered) == (120, 120)
    assert tally.counts == tuple(sum(v == c for v in final.values()) for c in range(3))
    assert [s.id for s in a.students(info.code, token)] != []
    assert {s.id for s in a.students(info.code, token)} == set(people)
    assert all(b.my_answer(info.code, s, 1) == v for s, v in final.items())


# ---- Redis restarted, Redis away ------------------------------------------------------------

def test_a_restarted_redis_has_every_answer_and_the_class_resumes(redis_server, clock):
    store = redis_store(redis_server, clock)
    info, token = store.create(Pinned("m", "p"), "teacher")
    store.open_step(info.code, token, 11, GUESS)
    for i, s in enumerate(ids(30)):
        store.join(info.code, s, f"n{i}", "10.0.0.1")
        store.answer(info.code, s, 1, float(i), "10.0.0.1")
    redis_server.stop()  # a clean shutdown writes the append-only file out
    with pytest.raises(Paused) as away:
        store.get(info.code)
    assert str(away.value) == PAUSED and "paused" in PAUSED and "Nothing is lost" in PAUSED
    redis_server.start()
    assert store.tally(info.code, 1).values == tuple(float(i) for i in range(30))
    store.answer(info.code, ids(30)[0], 1, 99.5, "10.0.0.1")  # (its script loaded again)
    assert store.my_answer(info.code, ids(30)[0], 1) == 99.5
    store.reveal(info.code, token)  # the teacher carries on
    assert store.get(info.code).revealed
    assert store.students(info.code, token)[3].nickname == "n3"


def test_a_redis_killed_without_warning_keeps_what_it_synced(redis_server, clock):
    """SIGKILL: the append-only file is synced every second; what was answered a moment
    before the kill is back after the restart."""
    import time

    store = redis_store(redis_server, clock)
    info, token = store.create(Pinned("m", "p"), "teacher")
    store.open_step(info.code, token, 3, CHOICE)
    for s in ids(10):
        store.join(info.code, s, None, "10.0.0.1")
        store.answer(info.code, s, 1, 2, "10.0.0.1")
    time.sleep(1.5)  # appendfsync everysec
    redis_server.stop(hard=True)
    redis_server.start()
    assert store.tally(info.code, 1).counts == (0, 0, 10)


def test_a_short_restart_is_not_even_seen(redis_server, clock):
    """Redis back within the client's retries (about 3 s): the request just waits."""
    store = redis_store(redis_server, clock)
    info, _ = store.create(Pinned("m", "p"), "teacher")
    redis_server.stop()
    redis_server.start(after_s=0.5)
    with pytest.raises(redis.exceptions.ConnectionError):
        redis.Redis.from_url(redis_server.url, retry=None).ping()  # it is away
    assert store.get(info.code).code == info.code


def test_a_wrong_password_gets_a_message_for_whoever_runs_the_server(redis_server, clock):
    wrong = redis_server.url.replace(redis_server.password, "wrong")
    store = RedisStore.from_url(wrong, clock=clock)
    with pytest.raises(ClassError, match="refused its password") as refused:
        store.get("ACDEFG")
    assert "wrong" not in str(refused.value)


# ---- expiry, the setting ---------------------------------------------------------------------

def test_a_class_expires_and_purge_deletes_every_key_of_it(store, clock):
    info, token = store.create(Pinned("m", "p"), "teacher")
    store.open_step(info.code, token, 3, CHOICE)
    store.join(info.code, ids(1)[0], "Ada", "10.0.0.1")
    store.answer(info.code, ids(1)[0], 1, 1, "10.0.0.1")
    store.hide_nickname(info.code, token, ids(1)[0])
    store.reveal(info.code, token)
    def class_keys() -> list[str]:  # (a rate limit's window expires on its own, in 2 min)
        return [k for k in store.r.keys(f"gv:*{info.code}*") if not k.startswith("gv:hit:")]

    assert len(class_keys()) == 8
    ttls = [store.r.ttl(k) for k in store.r.keys(f"gv:*{info.code}*")]
    assert all(0 < t <= store.limits.ttl_s + 60 for t in ttls)  # Redis deletes them itself
    clock.t += store.limits.ttl_s
    with pytest.raises(NotFound):
        store.get(info.code)
    assert store.purge() == 1
    assert class_keys() == [] and store.r.zcard("gv:classes") == 0


def test_the_setting_names_the_redis_store(redis_server):
    store = open_store(redis_server.url)
    assert isinstance(store, RedisStore)
    store.close()
    with pytest.raises(ClassError) as unknown:
        open_store("mongodb://:secret@10.0.0.1/x")
    assert "secret" not in str(unknown.value) and "redis://" in str(unknown.value)
