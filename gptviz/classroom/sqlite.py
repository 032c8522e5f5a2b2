"""The default class store: one SQLite file (standard library), in WAL mode.

One connection per store, shared by the server's threads behind a lock (each call is a
few short statements); every change is one transaction, synced to disk before it returns
(``synchronous=FULL``), so a server restarted mid-class finds every answer. Several
processes may open the same file (WAL lets readers run beside the one writer).
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict
from pathlib import Path

from gptviz.classroom import codes, records
from gptviz.classroom import inputs as check
from gptviz.classroom.errors import BadInput, ClassEnded, Forbidden, Full, NotFound, RateLimited
from gptviz.classroom.errors import wait_text as _wait
from gptviz.classroom.records import ClassInfo, Pinned, Question, Results, Snapshot, Student, Tally
from gptviz.classroom.sqlite_schema import CLASS_ROW, STATEMENTS
from gptviz.classroom.store import ClassStore, Limits
from gptviz.i18n import N_, _

WRONG_CODE = N_("No class has the code “{code}” now. Check it on the projector (letters and "
              "digits, as shown), or ask your teacher.")


class SQLiteStore(ClassStore):
    """``SQLiteStore(path)``: the store in one file (created with its folder). ``clock``
    gives the time in seconds (tests move it)."""

    def __init__(self, path: str | Path, limits: Limits | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.path, self.limits, self.clock = Path(path), limits or Limits(), clock
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False,
                                   timeout=10.0)
        for pragma in ("journal_mode=WAL", "synchronous=FULL", "foreign_keys=ON",
                       "busy_timeout=10000"):
            self._db.execute(f"PRAGMA {pragma}")
        with self._tx() as db:
            for statement in STATEMENTS:
                db.execute(statement)
        self.purge()

    # ---- plumbing ----
    @contextlib.contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (the lock held: other threads wait their turn)."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _read(self, sql: str, args: tuple = ()) -> list[tuple]:
        with self._lock:
            return self._db.execute(sql, args).fetchall()

    def _row(self, db: sqlite3.Connection, code: object) -> tuple:
        found = codes.normalize_code(code)
        row = found and db.execute(CLASS_ROW, (found, self.clock())).fetchone()
        if not row:
            raise NotFound(_(WRONG_CODE).format(code=str(code)[:12]))
        return row

    @staticmethod
    def _info(row: tuple) -> ClassInfo:
        code, pinned, step, question, ended, created, expires, version, revealed, title = row[:10]
        return ClassInfo(code, Pinned(**json.loads(pinned)), step, question, bool(ended),
                         bool(revealed), created, expires, version, title)

    def _teacher(self, db: sqlite3.Connection, code: str, token: str) -> tuple:
        row = self._row(db, code)
        if not codes.same_token(token, row[10]):
            raise Forbidden(_("Only the teacher's session can move, reveal or end this class."))
        return row

    def _wait_s(self, db: sqlite3.Connection, key: str, most: int, window: float,
                count: bool = True) -> float:
        """Seconds ``key`` must wait (0: go ahead, counted when ``count``): at most ``most``
        hits per fixed window of ``window`` seconds."""
        now = self.clock()
        row = db.execute("SELECT start, count FROM hits WHERE key = ?", (key,)).fetchone()
        start, n = (now, 0) if row is None or now - row[0] >= window else row
        if n >= most:
            return start + window - now
        if count:
            db.execute("INSERT OR REPLACE INTO hits VALUES (?, ?, ?)", (key, start, n + 1))
        return 0.0

    # ---- the teacher ----
    def create(self, pinned: Pinned, client: str) -> tuple[ClassInfo, str]:
        pinned, lim = check.check_pinned(pinned), self.limits
        self.purge()
        with self._tx() as db:
            if wait := self._wait_s(db, f"create:{client}", lim.classes_per_client, 3600):
                raise RateLimited(_("This device started {n} classes in the last hour: wait "
                                    "{wait}, or resume one.").format(
                                        n=lim.classes_per_client, wait=_wait(wait)), wait)
            if db.execute("SELECT count(*) FROM classes").fetchone()[0] >= lim.live_classes:
                raise Full(_("The server holds as many classes as it may; try again when one "
                             "ends or expires."))
            code = codes.new_code()
            while db.execute("SELECT 1 FROM classes WHERE code = ?", (code,)).fetchone():
                code = codes.new_code()  # (taken: ~1e-6 per live class)
            token, now = codes.new_token(), self.clock()
            db.execute("INSERT INTO classes VALUES (?, ?, ?, 1, NULL, 0, ?, ?, 0, '')",
                       (code, codes.token_hash(token), json.dumps(asdict(pinned)), now,
                        now + lim.ttl_s))
            return self._info(self._row(db, code)), token

    def check_teacher(self, code: str, token: str) -> ClassInfo:
        with self._lock:
            return self._info(self._teacher(self._db, code, token))

    def open_step(self, code: str, token: str, step: int, snapshot: Snapshot | None,
                  pinned: Pinned | None = None, title: str = "") -> ClassInfo:
        step, title = check.check_step(step, title if snapshot is None else snapshot.title)
        snapshot = None if snapshot is None else check.check_snapshot(snapshot)
        pinned = None if pinned is None else check.check_pinned(pinned)
        with self._tx() as db:
            row = self._teacher(db, code, token)
            code = row[0]
            if row[4]:
                raise ClassEnded(_("This class has ended; start a new one."))
            qid = None
            if snapshot is not None:
                key = snapshot.key or codes.token_hash(records.snapshot_json(snapshot))[:16]
                found = db.execute("SELECT id FROM questions WHERE code = ? AND key = ?",
                                   (code, key)).fetchone()
                if found:
                    qid = found[0]
                else:
                    qid = 1 + db.execute("SELECT coalesce(max(id), 0) FROM questions WHERE "
                                         "code = ?", (code,)).fetchone()[0]
                    db.execute("INSERT INTO questions VALUES (?, ?, ?, ?, 0)",
                               (code, qid, key, records.snapshot_json(snapshot)))
            new_pin = json.dumps(asdict(pinned)) if pinned is not None else row[1]
            if (row[2], row[3], row[1], row[9]) != (step, qid, new_pin, title):
                db.execute("UPDATE classes SET step = ?, question = ?, pinned = ?, title = ?, "
                           "version = version + 1 WHERE code = ?",
                           (step, qid, new_pin, title, code))
            return self._info(self._row(db, code))

    def reveal(self, code: str, token: str) -> ClassInfo:
        with self._tx() as db:
            row = self._teacher(db, code, token)
            if row[3] is not None and not row[8]:
                db.execute("UPDATE questions SET revealed = 1 WHERE code = ? AND id = ?",
                           (row[0], row[3]))
                db.execute("UPDATE classes SET version = version + 1 WHERE code = ?", (row[0],))
            return self._info(self._row(db, row[0]))

    def end(self, code: str, token: str) -> ClassInfo:
        with self._tx() as db:
            row = self._teacher(db, code, token)
            db.execute("UPDATE classes SET ended = 1, version = version + 1 WHERE code = ?",
                       (row[0],))
            return self._info(self._row(db, row[0]))

    def hide_nickname(self, code: str, token: str, student: str, hidden: bool = True) -> None:
        with self._tx() as db:
            row = self._teacher(db, code, token)
            db.execute("UPDATE students SET hidden = ? WHERE code = ? AND id = ?",
                       (int(bool(hidden)), row[0], student))

    def students(self, code: str, token: str) -> list[Student]:
        with self._lock:
            row = self._teacher(self._db, code, token)
            return [Student(i, n, bool(h)) for i, n, h in self._db.execute(
                "SELECT id, nickname, hidden FROM students WHERE code = ? ORDER BY rowid",
                (row[0],))]

    def results(self, code: str, token: str, per_student: bool = False) -> Results:
        with self._lock:
            row = self._teacher(self._db, code, token)
            ids = [q for (q,) in self._db.execute(
                "SELECT id FROM questions WHERE code = ? ORDER BY id", (row[0],))]
            tallies = tuple(self.tally(row[0], q) for q in ids)
            if not per_student:
                return Results(tallies)
            people = self.students(row[0], token)
            answers = self._db.execute("SELECT question, student, value FROM answers WHERE "
                                       "code = ?", (row[0],)).fetchall()
            return Results(tallies, records.student_rows(people, answers))

    # ---- anyone with the code ----
    def get(self, code: str) -> ClassInfo:
        with self._lock:
            return self._info(self._row(self._db, code))

    def question(self, code: str, question: int) -> Question:
        with self._lock:
            row = self._row(self._db, code)
            found = self._db.execute("SELECT snapshot, revealed FROM questions WHERE code = ? "
                                     "AND id = ?", (row[0], question)).fetchone()
        if found is None:
            raise NotFound(_("This class has no such question."))
        return Question(question, records.snapshot_from_json(found[0]), bool(found[1]))

    def joined(self, code: str) -> int:
        with self._lock:
            row = self._row(self._db, code)
            return self._db.execute("SELECT count(*) FROM students WHERE code = ?",
                                    (row[0],)).fetchone()[0]

    def tally(self, code: str, question: int) -> Tally:
        with self._lock:
            q, joined = self.question(code, question), self.joined(code)
            values = [v for (v,) in self._db.execute(
                "SELECT value FROM answers WHERE code = ? AND question = ?",
                (codes.normalize_code(code), question))]
        return records.tally_of(q, joined, values)

    # ---- a student ----
    def join(self, code: str, student: str, nickname: str | None, client: str) -> ClassInfo:
        lim = self.limits
        if not codes.valid_id(student):
            raise BadInput(_("This browser's student id is malformed: reload the page."))
        nickname = check.clean_nickname(nickname)
        with self._tx() as db:
            key = f"join:{client}"
            if wait := self._wait_s(db, key, lim.join_failures, lim.join_window_s, count=False):
                raise RateLimited(_("Too many wrong codes from this device: wait {wait}, then "
                                    "type the code again.").format(wait=_wait(wait)), wait)
            try:
                row = self._row(db, code)
            except NotFound as wrong:
                self._wait_s(db, key, lim.join_failures, lim.join_window_s)  # one more wrong
                row = wrong  # raised once the count is committed
        if isinstance(row, NotFound):
            raise row
        with self._tx() as db:
            row = self._row(db, row[0])
            if row[4]:
                raise ClassEnded(_("This class has ended. Thank you for taking part!"))
            known = db.execute("SELECT 1 FROM students WHERE code = ? AND id = ?",
                               (row[0], student)).fetchone()
            if not known and db.execute("SELECT count(*) FROM students WHERE code = ?",
                                        (row[0],)).fetchone()[0] >= lim.students_per_class:
                raise Full(_("This class is full ({n} students).").format(n=lim.students_per_class))
            db.execute("INSERT INTO students VALUES (?, ?, ?, 0) ON CONFLICT(code, id) DO "
                       "UPDATE SET nickname = excluded.nickname", (row[0], student, nickname))
            return self._info(row)

    def is_member(self, code: str, student: str) -> bool:
        found = codes.normalize_code(code)
        return bool(found and self._read("SELECT 1 FROM students WHERE code = ? AND id = ?",
                                         (found, student)))

    def answer(self, code: str, student: str, question: int, value: object, client: str
               ) -> float:
        lim = self.limits
        q = self.question(code, question)
        value = check.answer_value(q.snapshot, value)
        with self._tx() as db:
            row = self._row(db, code)
            if row[4]:
                raise ClassEnded(_("This class has ended: answers are closed."))
            if not db.execute("SELECT 1 FROM students WHERE code = ? AND id = ?",
                              (row[0], student)).fetchone():
                raise NotFound(_("Join the class first (your browser's id is not in it)."))
            if row[3] != question or row[8]:
                raise ClassEnded(_("Answers to this question are closed: the teacher has "
                                   "revealed it or moved on."))
            for key, most in ((f"answer:{row[0]}:{student}", lim.answers_per_student),
                              (f"answers:{client}", lim.answers_per_client)):
                if wait := self._wait_s(db, key, most, lim.answer_window_s):
                    raise RateLimited(_("Too many answers sent: wait {wait}, then send your "
                                        "answer again.").format(wait=_wait(wait)), wait)
            db.execute("INSERT OR REPLACE INTO answers VALUES (?, ?, ?, ?, ?)",
                       (row[0], question, student, value, self.clock()))
        return value

    def my_answer(self, code: str, student: str, question: int) -> float | None:
        found = self._read("SELECT value FROM answers WHERE code = ? AND question = ? AND "
                           "student = ?", (codes.normalize_code(code), question, student))
        return found[0][0] if found else None

    # ---- housekeeping ----
    def purge(self) -> int:
        now = self.clock()
        with self._tx() as db:
            gone = db.execute("DELETE FROM classes WHERE expires <= ?", (now,)).rowcount
            db.execute("DELETE FROM hits WHERE start < ?", (now - 3600,))
        return gone

    def close(self) -> None:
        with self._lock:
            self._db.close()
