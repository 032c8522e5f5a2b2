"""The class store on Redis: its keys, and what every call of ``redis_store.RedisStore``
shares (reading a class, checking the teacher, a rate limit's count, a teacher's change in a
``WATCH``ed transaction, deleting expired classes).

A class lives in these keys (``prefix`` first, ``gv:`` by default; ``C`` a class's code,
``Q`` a question's id):

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
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from typing import Any

import redis
from redis.exceptions import WatchError

from gptviz.classroom import codes
from gptviz.classroom.errors import Forbidden, NotFound
from gptviz.classroom.records import ClassInfo, Pinned, Student
from gptviz.classroom.redis_conn import reachable
from gptviz.classroom.redis_scripts import ANSWER, HIT_ONE, JOIN
from gptviz.classroom.sqlite import WRONG_CODE
from gptviz.classroom.store import Limits
from gptviz.i18n import N_, _

GRACE_S = 60  # a class's keys outlive its expiry by this much (then Redis deletes them)
NOT_TEACHER = N_("Only the teacher's session can move, reveal or end this class.")


class RedisClasses:
    """Classes in Redis through ``client`` (a ``redis.Redis`` with ``decode_responses=True``,
    e.g. ``redis_conn.client_for(url)``); ``prefix`` starts every key (several apps may
    share one Redis)."""

    def __init__(self, client: redis.Redis, limits: Limits | None = None,
                 clock: Callable[[], float] = time.time, prefix: str = "gv:") -> None:
        self.r, self.limits, self.clock, self.p = client, limits or Limits(), clock, prefix
        self._hit = self.r.register_script(HIT_ONE)
        self._join = self.r.register_script(JOIN)
        self._answer = self.r.register_script(ANSWER)

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
            raise NotFound(_(WRONG_CODE).format(code=str(code)[:12]))
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
            raise Forbidden(_(NOT_TEACHER))
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


    def _students(self, code: str) -> list[Student]:
        with self.r.pipeline(transaction=True) as pipe:
            pipe.hgetall(self._k("students", code))
            pipe.hgetall(self._k("nicks", code))
            pipe.smembers(self._k("hidden", code))
            order, nicks, hidden = pipe.execute()
        return [Student(s, nicks.get(s, ""), s in hidden)
                for s in sorted(order, key=lambda s: int(order[s]))]


    # ---- housekeeping ----
    @reachable
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
