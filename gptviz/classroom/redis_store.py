"""The class store on Redis (``redis-py``): one class seen by every server process of a
lecture hall, each process a replica behind the same proxy. ``GPTVIZ_STORE=redis://...``
names it (``stores.open_store``).

It keeps what the SQLite store keeps and answers the same (``store.ClassStore``); its keys
are described in ``redis_keys``, the steps that run inside Redis in ``redis_scripts``, and
what a page is told while Redis is out of reach in ``redis_conn`` (``Paused``).
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from redis.exceptions import WatchError

from gptviz.classroom import codes, records
from gptviz.classroom import inputs as check
from gptviz.classroom.errors import BadInput, ClassEnded, Full, NotFound, RateLimited
from gptviz.classroom.errors import wait_text as _wait
from gptviz.classroom.records import ClassInfo, Pinned, Question, Results, Snapshot, Student, Tally
from gptviz.classroom.redis_conn import PAUSED, REFUSED, Paused, client_for, reachable
from gptviz.classroom.redis_keys import GRACE_S, RedisClasses
from gptviz.classroom.sqlite import WRONG_CODE
from gptviz.classroom.store import ClassStore, Limits
from gptviz.i18n import N_, _

__all__ = ["PAUSED", "REFUSED", "Paused", "RedisStore", "client_for"]
CLOSED = N_("Answers to this question are closed: the teacher has revealed it or moved on.")


class RedisStore(RedisClasses, ClassStore):
    """``RedisStore(client)``: classes kept in Redis through ``client`` (a ``redis.Redis``
    with ``decode_responses=True``, e.g. ``client_for(url)``). ``RedisStore.from_url(url)``
    makes one. ``prefix`` starts every key (several apps may share one Redis)."""

    @classmethod
    def from_url(cls, url: str, limits: Limits | None = None, **kwargs: Any) -> RedisStore:
        return cls(client_for(url), limits, **kwargs)

    # ---- the teacher ----
    @reachable
    def create(self, pinned: Pinned, client: str) -> tuple[ClassInfo, str]:
        pinned, lim = check.check_pinned(pinned), self.limits
        self.purge()
        key = f"create:{client}"  # counted once the class is allowed, as SQLite's rollback
        if wait := self._wait_s(key, lim.classes_per_client, 3600, count=False):
            raise RateLimited(_("This device started {n} classes in the last hour: wait "
                                "{wait}, or resume one.").format(
                                    n=lim.classes_per_client, wait=_wait(wait)), wait)
        now = self.clock()
        if self.r.zcount(f"{self.p}classes", f"({now!r}", "+inf") >= lim.live_classes:
            raise Full(_("The server holds as many classes as it may; try again when one "
                         "ends or expires."))
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

    @reachable
    def check_teacher(self, code: str, token: str) -> ClassInfo:
        return self._info(self._teacher(code, token))

    @reachable
    def open_step(self, code: str, token: str, step: int, snapshot: Snapshot | None,
                  pinned: Pinned | None = None, title: str = "") -> ClassInfo:
        step, title = check.check_step(step, title if snapshot is None else snapshot.title)
        snapshot = None if snapshot is None else check.check_snapshot(snapshot)
        pinned = None if pinned is None else check.check_pinned(pinned)
        found = codes.normalize_code(code) or ""
        qs, qkeys, qrev = (self._k(k, found) for k in ("q", "qkeys", "qrev"))

        def change(pipe: Any, f: dict[str, str]) -> None:
            if f["ended"] == "1":
                raise ClassEnded(_("This class has ended; start a new one."))
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

    @reachable
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

    @reachable
    def end(self, code: str, token: str) -> ClassInfo:
        def change(pipe: Any, f: dict[str, str]) -> None:
            pipe.multi()
            pipe.hset(self._k("class", f["code"]), "ended", 1)
            pipe.hincrby(self._k("class", f["code"]), "version", 1)

        return self._change(code, token, change)

    @reachable
    def hide_nickname(self, code: str, token: str, student: str, hidden: bool = True) -> None:
        f = self._teacher(code, token)
        if not self.r.hexists(self._k("students", f["code"]), student):
            return
        key = self._k("hidden", f["code"])
        with self.r.pipeline() as pipe:
            (pipe.sadd if hidden else pipe.srem)(key, student)
            pipe.expire(key, self._ttl(float(f["expires"])))
            pipe.execute()

    @reachable
    def students(self, code: str, token: str) -> list[Student]:
        return self._students(self._teacher(code, token)["code"])

    @reachable
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
    @reachable
    def get(self, code: str) -> ClassInfo:
        return self._info(self._fields(code))

    @reachable
    def question(self, code: str, question: int) -> Question:
        found = self._fields(code)["code"]
        with self.r.pipeline(transaction=False) as pipe:
            pipe.hget(self._k("q", found), question)
            pipe.sismember(self._k("qrev", found), question)
            snapshot, revealed = pipe.execute()
        if snapshot is None:
            raise NotFound(_("This class has no such question."))
        return Question(question, records.snapshot_from_json(snapshot), bool(revealed))

    @reachable
    def joined(self, code: str) -> int:
        return self.r.hlen(self._k("students", self._fields(code)["code"]))

    @reachable
    def tally(self, code: str, question: int) -> Tally:
        q = self.question(code, question)
        found = codes.normalize_code(code)
        with self.r.pipeline(transaction=True) as pipe:
            pipe.hlen(self._k("students", found))
            pipe.hvals(self._k("a", found, question))
            joined, values = pipe.execute()
        return records.tally_of(q, joined, map(float, values))

    # ---- a student ----
    @reachable
    def join(self, code: str, student: str, nickname: str | None, client: str) -> ClassInfo:
        lim = self.limits
        if not codes.valid_id(student):
            raise BadInput(_("This browser's student id is malformed: reload the page."))
        nickname = check.clean_nickname(nickname)
        key = f"join:{client}"
        if wait := self._wait_s(key, lim.join_failures, lim.join_window_s, count=False):
            raise RateLimited(_("Too many wrong codes from this device: wait {wait}, then "
                                "type the code again.").format(wait=_wait(wait)), wait)
        try:
            f = self._fields(code)
        except NotFound:
            self._wait_s(key, lim.join_failures, lim.join_window_s)  # one more wrong code
            raise
        said = self._join(keys=[self._k(k, f["code"]) for k in ("class", "students", "nicks")],
                          args=[student, nickname, repr(self.clock()), lim.students_per_class,
                                self._ttl(float(f["expires"]))])
        if said == "gone":
            raise NotFound(_(WRONG_CODE).format(code=str(code)[:12]))
        if said == "ended":
            raise ClassEnded(_("This class has ended. Thank you for taking part!"))
        if said == "full":
            raise Full(_("This class is full ({n} students).").format(n=lim.students_per_class))
        return self._info(f)

    @reachable
    def is_member(self, code: str, student: str) -> bool:
        found = codes.normalize_code(code)
        return bool(found and self.r.hexists(self._k("students", found), student))

    @reachable
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
                raise NotFound(_(WRONG_CODE).format(code=str(code)[:12]))
            case "ended":
                raise ClassEnded(_("This class has ended: answers are closed."))
            case "stranger":
                raise NotFound(_("Join the class first (your browser's id is not in it)."))
            case "closed":
                raise ClassEnded(_(CLOSED))
            case "wait":
                wait = float(said[1])
                raise RateLimited(_("Too many answers sent: wait {wait}, then send your "
                                    "answer again.").format(wait=_wait(wait)), wait)
        return value

    @reachable
    def my_answer(self, code: str, student: str, question: int) -> float | None:
        found = self.r.hget(self._k("a", codes.normalize_code(code), question), student)
        return None if found is None else float(found)
