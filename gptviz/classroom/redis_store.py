"""The class store on Redis (``redis-py``): one class seen by every server process of a
lecture hall, each process a replica behind the same proxy. ``GPTVIZ_STORE=redis://...``
names it (``stores.open_store``).

It keeps what the SQLite store keeps and answers the same (``store.ClassStore``), in these
keys (``prefix`` first, ``gv:`` by default; ``C`` a class's code, ``Q`` a question's id):

- ``class:C``, a hash: the teacher's credential as a hash, the pinned model and prompt as
  JSON, the current step, question and title, ``ended``, ``revealed`` (the current
  question's), ``created``, ``expires``, ``version`` and ``joins`` (students so far);
- ``students:C`` (id -> the order they joined), ``nicks:C`` (id -> nickname), ``hidden:C``
  (a set of ids);
- ``q:C`` (Q -> the question as asked, ``records.snapshot_json``), ``qkeys:C`` (a question's
  key -> Q), ``qrev:C`` (the revealed Qs);
- ``a:C:Q`` (student id -> the answer), one per question;
- ``classes``, a sorted set of live codes by expiry time, and ``hit:KEY`` (a rate limit's
  window: its start and count).

Every key of a class expires a minute after the class does, so Redis deletes old classes
by itself; ``purge`` deletes them at once. What must not interleave with another server's
request runs in Redis as one script (a student joining or answering, a rate limit) or in a
``WATCH``ed transaction (the teacher's changes). Times come from ``clock`` (tests move it),
as in the SQLite store.

Redis unreachable (restarted, or the network between): each command is retried for about
3 s, then the call raises ``Paused``, a ``ClassError`` whose message says that the class is
paused and nothing is lost. With Redis's persistence on (``appendonly yes``, as
``deploy/serve.py`` starts it), a restarted Redis has every answer back.
"""

from __future__ import annotations

import functools
import json
import math
import time
from collections.abc import Callable
from dataclasses import asdict
from typing import Any, TypeVar

import redis
from redis.backoff import ExponentialBackoff
from redis.exceptions import AuthenticationError, BusyLoadingError, WatchError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.retry import Retry

from gptviz.classroom import codes, records
from gptviz.classroom import inputs as check
from gptviz.classroom.errors import (
    BadInput,
    ClassEnded,
    ClassError,
    Forbidden,
    Full,
    NotFound,
    RateLimited,
)
from gptviz.classroom.errors import wait_text as _wait
from gptviz.classroom.records import ClassInfo, Pinned, Question, Results, Snapshot, Student, Tally
from gptviz.classroom.sqlite import WRONG_CODE
from gptviz.classroom.store import ClassStore, Limits

T = TypeVar("T")
GRACE_S = 60  # a class's keys outlive its expiry by this much (then Redis deletes them)
UNREACHABLE = (RedisConnectionError, RedisTimeoutError, BusyLoadingError)
PAUSED = ("The class is paused: the server cannot reach its class store just now. Nothing "
          "is lost; this page carries on by itself once it is back (usually within seconds).")
REFUSED = ("The server's class store refused its password: whoever runs the server must "
           "check the password in GPTVIZ_STORE (redis://:PASSWORD@HOST:PORT/0).")
NOT_TEACHER = "Only the teacher's session can move, reveal or end this class."
CLOSED = ("Answers to this question are closed: the teacher has revealed it or moved on.")

# ---- scripts: what runs in Redis as one step ----------------------------------------------
# A rate limit's fixed window, as the SQLite store counts it: at most `most` hits per window
# of `window` seconds from the first; returns the seconds to wait ("0": go ahead, counted
# when `count` is 1). Numbers go back to Python as text (Redis would cut them to integers).
HIT = """
local function wait(key, now, window, most)
  local h = redis.call('HMGET', key, 'start', 'n')
  local start, n = tonumber(h[1]), tonumber(h[2])
  if not start or now - start >= window then start, n = now, 0 end
  if n >= most then return start + window - now, start, n end
  return 0, start, n
end
local function count(key, start, n, window)
  redis.call('HSET', key, 'start', string.format('%.6f', start), 'n', n + 1)
  redis.call('EXPIRE', key, math.ceil(window) + 60)
end
"""
HIT_ONE = HIT + """
local w, start, n = wait(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]))
if w == 0 and ARGV[4] == '1' then count(KEYS[1], start, n, tonumber(ARGV[2])) end
return string.format('%.6f', w)
"""
# A student joins (or joins again, keeping their place and answers; a new nickname replaces
# the old). KEYS: class, students, nicks. ARGV: id, nickname, now, most students, ttl.
JOIN = """
local h = redis.call('HMGET', KEYS[1], 'expires', 'ended')
if not h[1] or tonumber(h[1]) <= tonumber(ARGV[3]) then return 'gone' end
if h[2] == '1' then return 'ended' end
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 0 then
  if redis.call('HLEN', KEYS[2]) >= tonumber(ARGV[4]) then return 'full' end
  redis.call('HSET', KEYS[2], ARGV[1], redis.call('HINCRBY', KEYS[1], 'joins', 1))
end
redis.call('HSET', KEYS[3], ARGV[1], ARGV[2])
redis.call('EXPIRE', KEYS[2], ARGV[5])
redis.call('EXPIRE', KEYS[3], ARGV[5])
return 'ok'
"""
# A student's answer to the current question. KEYS: class, students, answers, the student's
# and the client's rate limits. ARGV: id, question, value, now, window, most per student,
# most per client, the seconds a class's keys outlive it. Nothing is counted when an
# answer is refused.
ANSWER = HIT + """
local now, window = tonumber(ARGV[4]), tonumber(ARGV[5])
local h = redis.call('HMGET', KEYS[1], 'expires', 'ended', 'question', 'revealed')
if not h[1] or tonumber(h[1]) <= now then return {'gone'} end
if h[2] == '1' then return {'ended'} end
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 0 then return {'stranger'} end
if h[3] ~= ARGV[2] or h[4] == '1' then return {'closed'} end
local ws, ss, ns = wait(KEYS[4], now, window, tonumber(ARGV[6]))
if ws > 0 then return {'wait', string.format('%.6f', ws)} end
local wc, sc, nc = wait(KEYS[5], now, window, tonumber(ARGV[7]))
if wc > 0 then return {'wait', string.format('%.6f', wc)} end
count(KEYS[4], ss, ns, window)
count(KEYS[5], sc, nc, window)
redis.call('HSET', KEYS[3], ARGV[1], ARGV[3])
redis.call('EXPIRE', KEYS[3], math.max(1, math.ceil(tonumber(h[1]) - now) + tonumber(ARGV[8])))
return {'ok'}
"""


class Paused(ClassError):
    """The store cannot be reached for now (Redis restarting, or the network): nothing is
    lost, and the same request succeeds once it is back."""


def _reachable(method: Callable[..., T]) -> Callable[..., T]:
    """Redis unreachable after the client's retries: ``Paused``, with a message."""
    @functools.wraps(method)
    def call(*args: Any, **kwargs: Any) -> T:
        try:
            return method(*args, **kwargs)
        except AuthenticationError as e:
            raise ClassError(REFUSED) from e
        except UNREACHABLE as e:
            raise Paused(PAUSED) from e
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


class RedisStore(ClassStore):
    """``RedisStore(client)``: classes kept in Redis through ``client`` (a ``redis.Redis``
    with ``decode_responses=True``, e.g. ``client_for(url)``). ``RedisStore.from_url(url)``
    makes one. ``prefix`` starts every key (several apps may share one Redis)."""

    def __init__(self, client: redis.Redis, limits: Limits | None = None,
                 clock: Callable[[], float] = time.time, prefix: str = "gv:") -> None:
        self.r, self.limits, self.clock, self.p = client, limits or Limits(), clock, prefix
        self._hit = self.r.register_script(HIT_ONE)
        self._join = self.r.register_script(JOIN)
        self._answer = self.r.register_script(ANSWER)

    @classmethod
    def from_url(cls, url: str, limits: Limits | None = None, **kwargs: Any) -> RedisStore:
        return cls(client_for(url), limits, **kwargs)

    # ---- keys ----
    def _k(self, kind: str, code: str, question: int | None = None) -> str:
        return f"{self.p}{kind}:{code}" + ("" if question is None else f":{question}")

    def _class_keys(self, code: str) -> list[str]:
        """Every key of a class (its answers' by the questions it has)."""
        ids = self.r.hkeys(self._k("q", code))
        return [self._k(k, code) for k in ("class", "students", "nicks", "hidden", "q",
                                           "qkeys", "qrev")] + [self._k("a", code, int(q))
                                                                for q in ids]

    def _ttl(self, expires: float) -> int:
        return max(1, math.ceil(expires - self.clock()) + GRACE_S)

    # ---- reading a class ----
    def _fields(self, code: object, source: Any = None) -> dict[str, str]:
        """The live class's hash (read through ``source``: a watching pipeline, or the
        client), else ``NotFound``."""
        found = codes.normalize_code(code)
        fields = (source or self.r).hgetall(self._k("class", found)) if found else {}
        if not fields or float(fields["expires"]) <= self.clock():
            raise NotFound(WRONG_CODE.format(code=str(code)[:12]))
        return fields

    @staticmethod
    def _info(f: dict[str, str]) -> ClassInfo:
        return ClassInfo(f["code"], Pinned(**json.loads(f["pinned"])), int(f["step"]),
                         int(f["question"]) if f["question"] else None, f["ended"] == "1",
                         f["revealed"] == "1", float(f["created"]), float(f["expires"]),
                         int(f["version"]), f["title"])

    def _teacher(self, code: object, token: str, source: Any = None) -> dict[str, str]:
        fields = self._fields(code, source)
        if not codes.same_token(token, fields["teacher"]):
            raise Forbidden(NOT_TEACHER)
        return fields

    def _wait_s(self, key: str, most: int, window: float, count: bool = True) -> float:
        return float(self._hit(keys=[f"{self.p}hit:{key}"],
                               args=[repr(self.clock()), repr(window), most, int(count)]))

    def _change(self, code: str, token: str, change: Callable[[Any, dict[str, str]], None],
                *watched: str) -> ClassInfo:
        """A teacher's change: ``change(pipe, fields)`` queues its writes after reading what
        it needs through ``pipe`` (the class and ``watched`` keys are watched: another
        server's change in between makes it start over). The class as it is after."""
        found = codes.normalize_code(code) or ""
        key = self._k("class", found)
        while True:
            with self.r.pipeline() as pipe:
                try:
                    pipe.watch(key, *watched)
                    fields = self._teacher(code, token, pipe)
                    change(pipe, fields)  # (calls pipe.multi() before its first write)
                    if pipe.explicit_transaction:
                        pipe.execute()
                    break
                except WatchError:
                    continue
        return self._info(self._fields(found))

    # ---- the teacher ----
    @_reachable
    def create(self, pinned: Pinned, client: str) -> tuple[ClassInfo, str]:
        pinned, lim = check.check_pinned(pinned), self.limits
        self.purge()
        key = f"create:{client}"  # counted once the class is allowed, as SQLite's rollback
        if wait := self._wait_s(key, lim.classes_per_client, 3600, count=False):
            raise RateLimited(f"This device started {lim.classes_per_client} classes in "
                              f"the last hour: wait {_wait(wait)}, or resume one.", wait)
        now = self.clock()
        if self.r.zcount(f"{self.p}classes", f"({now!r}", "+inf") >= lim.live_classes:
            raise Full("The server holds as many classes as it may; try again when one "
                       "ends or expires.")
        self._wait_s(key, lim.classes_per_client, 3600)
        token, expires = codes.new_token(), now + lim.ttl_s
        fields = {"teacher": codes.token_hash(token), "pinned": json.dumps(asdict(pinned)),
                  "step": 1, "question": "", "ended": 0, "revealed": 0, "created": repr(now),
                  "expires": repr(expires), "version": 0, "title": "", "joins": 0}
        while True:  # a code that is free (taken: ~1e-6 per live class)
            code = codes.new_code()
            key = self._k("class", code)
            with self.r.pipeline() as pipe:
                try:
                    pipe.watch(key)
                    if pipe.exists(key):
                        continue
                    pipe.multi()
                    pipe.hset(key, mapping={"code": code, **fields})
                    pipe.expire(key, self._ttl(expires))
                    pipe.zadd(f"{self.p}classes", {code: expires})
                    pipe.execute()
                    break
                except WatchError:
                    continue
        return self._info(self._fields(code)), token

    @_reachable
    def check_teacher(self, code: str, token: str) -> ClassInfo:
        return self._info(self._teacher(code, token))

    @_reachable
    def open_step(self, code: str, token: str, step: int, snapshot: Snapshot | None,
                  pinned: Pinned | None = None, title: str = "") -> ClassInfo:
        step, title = check.check_step(step, title if snapshot is None else snapshot.title)
        snapshot = None if snapshot is None else check.check_snapshot(snapshot)
        pinned = None if pinned is None else check.check_pinned(pinned)
        found = codes.normalize_code(code) or ""
        qs, qkeys, qrev = (self._k(k, found) for k in ("q", "qkeys", "qrev"))

        def change(pipe: Any, f: dict[str, str]) -> None:
            if f["ended"] == "1":
                raise ClassEnded("This class has ended; start a new one.")
            qid, new_question, revealed = None, None, False
            if snapshot is not None:
                key = snapshot.key or codes.token_hash(records.snapshot_json(snapshot))[:16]
                known = pipe.hget(qkeys, key)
                if known:
                    qid, revealed = int(known), bool(pipe.sismember(qrev, known))
                else:
                    qid = pipe.hlen(qs) + 1
                    new_question = (key, records.snapshot_json(snapshot))
            new_pin = json.dumps(asdict(pinned)) if pinned is not None else f["pinned"]
            if (f["step"], f["question"], f["pinned"], f["title"]) == (
                    str(step), "" if qid is None else str(qid), new_pin, title):
                return
            ttl = self._ttl(float(f["expires"]))
            pipe.multi()
            if new_question is not None:
                pipe.hset(qs, qid, new_question[1])
                pipe.hset(qkeys, new_question[0], qid)
                pipe.expire(qs, ttl)
                pipe.expire(qkeys, ttl)
            pipe.hset(self._k("class", f["code"]), mapping={
                "step": step, "question": "" if qid is None else qid, "pinned": new_pin,
                "title": title, "revealed": int(revealed)})
            pipe.hincrby(self._k("class", f["code"]), "version", 1)

        return self._change(code, token, change, qs, qkeys, qrev)

    @_reachable
    def reveal(self, code: str, token: str) -> ClassInfo:
        def change(pipe: Any, f: dict[str, str]) -> None:
            if f["question"] and f["revealed"] != "1":
                qrev = self._k("qrev", f["code"])
                pipe.multi()
                pipe.sadd(qrev, f["question"])
                pipe.expire(qrev, self._ttl(float(f["expires"])))
                pipe.hset(self._k("class", f["code"]), "revealed", 1)
                pipe.hincrby(self._k("class", f["code"]), "version", 1)

        return self._change(code, token, change)

    @_reachable
    def end(self, code: str, token: str) -> ClassInfo:
        def change(pipe: Any, f: dict[str, str]) -> None:
            pipe.multi()
            pipe.hset(self._k("class", f["code"]), "ended", 1)
            pipe.hincrby(self._k("class", f["code"]), "version", 1)

        return self._change(code, token, change)

    @_reachable
    def hide_nickname(self, code: str, token: str, student: str, hidden: bool = True) -> None:
        f = self._teacher(code, token)
        if not self.r.hexists(self._k("students", f["code"]), student):
            return
        key = self._k("hidden", f["code"])
        with self.r.pipeline() as pipe:
            (pipe.sadd if hidden else pipe.srem)(key, student)
            pipe.expire(key, self._ttl(float(f["expires"])))
            pipe.execute()

    def _students(self, code: str) -> list[Student]:
        with self.r.pipeline(transaction=True) as pipe:
            pipe.hgetall(self._k("students", code))
            pipe.hgetall(self._k("nicks", code))
            pipe.smembers(self._k("hidden", code))
            order, nicks, hidden = pipe.execute()
        return [Student(s, nicks.get(s, ""), s in hidden)
                for s in sorted(order, key=lambda s: int(order[s]))]

    @_reachable
    def students(self, code: str, token: str) -> list[Student]:
        return self._students(self._teacher(code, token)["code"])

    @_reachable
    def results(self, code: str, token: str, per_student: bool = False) -> Results:
        found = self._teacher(code, token)["code"]
        ids = sorted(int(q) for q in self.r.hkeys(self._k("q", found)))
        tallies = tuple(self.tally(found, q) for q in ids)
        if not per_student:
            return Results(tallies)
        with self.r.pipeline(transaction=False) as pipe:
            for q in ids:
                pipe.hgetall(self._k("a", found, q))
            answers = [(q, s, float(v)) for q, given in zip(ids, pipe.execute(), strict=True)
                       for s, v in given.items()]
        return Results(tallies, records.student_rows(self._students(found), answers))

    # ---- anyone with the code ----
    @_reachable
    def get(self, code: str) -> ClassInfo:
        return self._info(self._fields(code))

    @_reachable
    def question(self, code: str, question: int) -> Question:
        found = self._fields(code)["code"]
        with self.r.pipeline(transaction=False) as pipe:
            pipe.hget(self._k("q", found), question)
            pipe.sismember(self._k("qrev", found), question)
            snapshot, revealed = pipe.execute()
        if snapshot is None:
            raise NotFound("This class has no such question.")
        return Question(question, records.snapshot_from_json(snapshot), bool(revealed))

    @_reachable
    def joined(self, code: str) -> int:
        return self.r.hlen(self._k("students", self._fields(code)["code"]))

    @_reachable
    def tally(self, code: str, question: int) -> Tally:
        q = self.question(code, question)
        found = codes.normalize_code(code)
        with self.r.pipeline(transaction=True) as pipe:
            pipe.hlen(self._k("students", found))
            pipe.hvals(self._k("a", found, question))
            joined, values = pipe.execute()
        return records.tally_of(q, joined, map(float, values))

    # ---- a student ----
    @_reachable
    def join(self, code: str, student: str, nickname: str | None, client: str) -> ClassInfo:
        lim = self.limits
        if not codes.valid_id(student):
            raise BadInput("This browser's student id is malformed: reload the page.")
        nickname = check.clean_nickname(nickname)
        key = f"join:{client}"
        if wait := self._wait_s(key, lim.join_failures, lim.join_window_s, count=False):
            raise RateLimited(f"Too many wrong codes from this device: wait "
                              f"{_wait(wait)}, then type the code again.", wait)
        try:
            f = self._fields(code)
        except NotFound:
            self._wait_s(key, lim.join_failures, lim.join_window_s)  # one more wrong code
            raise
        said = self._join(keys=[self._k(k, f["code"]) for k in ("class", "students", "nicks")],
                          args=[student, nickname, repr(self.clock()), lim.students_per_class,
                                self._ttl(float(f["expires"]))])
        if said == "gone":
            raise NotFound(WRONG_CODE.format(code=str(code)[:12]))
        if said == "ended":
            raise ClassEnded("This class has ended. Thank you for taking part!")
        if said == "full":
            raise Full(f"This class is full ({lim.students_per_class} students).")
        return self._info(f)

    @_reachable
    def is_member(self, code: str, student: str) -> bool:
        found = codes.normalize_code(code)
        return bool(found and self.r.hexists(self._k("students", found), student))

    @_reachable
    def answer(self, code: str, student: str, question: int, value: object, client: str
               ) -> float:
        lim = self.limits
        q = self.question(code, question)
        value = check.answer_value(q.snapshot, value)
        found = codes.normalize_code(code)
        said = self._answer(
            keys=[self._k("class", found), self._k("students", found),
                  self._k("a", found, question), f"{self.p}hit:answer:{found}:{student}",
                  f"{self.p}hit:answers:{client}"],
            args=[student, question, repr(value), repr(self.clock()), repr(lim.answer_window_s),
                  lim.answers_per_student, lim.answers_per_client, GRACE_S])
        match said[0]:
            case "gone":
                raise NotFound(WRONG_CODE.format(code=str(code)[:12]))
            case "ended":
                raise ClassEnded("This class has ended: answers are closed.")
            case "stranger":
                raise NotFound("Join the class first (your browser's id is not in it).")
            case "closed":
                raise ClassEnded(CLOSED)
            case "wait":
                wait = float(said[1])
                raise RateLimited(f"Too many answers sent: wait {_wait(wait)}, then send "
                                  "your answer again.", wait)
        return value

    @_reachable
    def my_answer(self, code: str, student: str, question: int) -> float | None:
        found = self.r.hget(self._k("a", codes.normalize_code(code), question), student)
        return None if found is None else float(found)

    # ---- housekeeping ----
    @_reachable
    def purge(self) -> int:
        live = f"{self.p}classes"
        gone = self.r.zrangebyscore(live, "-inf", repr(self.clock()))
        for code in gone:
            keys = self._class_keys(code)
            with self.r.pipeline() as pipe:
                pipe.delete(*keys)
                pipe.zrem(live, code)
                pipe.execute()
        return len(gone)

    def close(self) -> None:
        self.r.close()
