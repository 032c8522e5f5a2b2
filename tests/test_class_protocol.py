"""A class over Streamlit's own websocket protocol, as browsers speak it
(benchmarks/server/class_client.py): a teacher and 30 students join, answer and see the
reveal; counts are exact, nothing lost or counted twice; a student cannot move, reveal or
end the class; wrong codes get a message and are slowed; a server restarted mid-class
keeps every answer; a second class at once stays apart."""

from __future__ import annotations

import asyncio
import os

import pytest

from benchmarks.common import Server
from benchmarks.server.class_client import ClassSession, class_code, count, page_text
from gptviz.classroom import codes
from gptviz.classroom.sqlite import SQLiteStore
from tests.helpers import MODELS, run_alone

STUDENTS = 30
MODEL = "mathematics-char"
pytestmark = pytest.mark.skipif(MODEL not in MODELS, reason=f"{MODEL} is not bundled")


async def teacher_starts(ws: str) -> tuple[ClassSession, object, str]:
    t = ClassSession(ws, timeout_s=120)
    await t.connect()
    run = await t.open("lesson", f"model={MODEL}")
    run = await t.press(run, "class_start")
    code = class_code(run)
    assert run.status == "ok" and code, page_text(run)[:500]
    assert t.cookies["gptviz_teacher"].startswith(code + ".")  # the browser keeps the key
    token = t.cookies["gptviz_teacher"].split(".", 1)[1]
    assert token not in page_text(run)  # never on the projector, nor in its links
    return t, run, code


async def student_joins(ws: str, code: str, k: int) -> tuple[ClassSession, object]:
    s = ClassSession(ws, timeout_s=120)
    await s.connect()
    run = await s.open("join", f"code={code}")
    run = await s.type_key(run, "class_nickname", f"s{k}")
    run = await s.press(run, "class_join")
    assert run.status == "ok" and not run.exceptions, page_text(run)[:300]
    assert codes.valid_id(s.cookies.get("gptviz_student"))
    return s, run


async def answer(s: ClassSession, run, qid: int, choice: int):
    run = await s.choose(run, f"class_answer_{run_code(run)}_{qid}", choice)
    return await s.press(run, f"class_send_{qid}")


def run_code(run) -> str:
    return page_text(run).split("Class ", 1)[1][:6]


async def until(s: ClassSession, run, done, polls: int = 30):
    """Let the page's timers rerun its fragments (as the browser does) until ``done(run)``."""
    for _ in range(polls):
        if done(run):
            return run
        await asyncio.sleep(0.3)
        run = await s.poll(run)
    return run


def store_of(data) -> SQLiteStore:
    return SQLiteStore(data / "classes.sqlite3")


def test_a_teacher_and_30_students_over_the_protocol(tmp_path, monkeypatch):
    monkeypatch.setenv("GPTVIZ_DATA", str(tmp_path))
    monkeypatch.setenv("STREAMLIT_SERVER_FILE_WATCHER_TYPE", "none")
    server = Server(log="class-protocol")
    try:
        teacher_cookies, students, code, qid, choices = run_alone(_first_half(server.ws))
    finally:
        server.stop()
    server = Server(log="class-protocol-restarted")  # the server restarts mid-class
    try:
        run_alone(_second_half(server.ws, teacher_cookies, students, code, qid, choices,
                               tmp_path))
    finally:
        server.stop()


async def _first_half(ws: str):
    t, trun, code = await teacher_starts(ws)
    joined = await asyncio.gather(*(student_joins(ws, code, k) for k in range(STUDENTS)))
    store = store_of_env()
    info = store.get(code)
    qid, n = info.question, len(store.question(code, info.question).snapshot.choices)
    assert store.joined(code) == STUDENTS and info.step == 1
    choices = [k % n for k in range(STUDENTS)]

    async def send(k: int) -> None:
        s, run = joined[k]
        first = await answer(s, run, qid, (choices[k] + 1) % n)  # then they change their mind
        final = await answer(s, first, qid, choices[k])
        assert "Sent:" in page_text(final), page_text(final)[-300:]
    await asyncio.gather(*(send(k) for k in range(STUDENTS)))
    trun = await until(t, trun, lambda r: count(r) == (STUDENTS, STUDENTS))
    assert count(trun) == (STUDENTS, STUDENTS)  # the projector's live count, exact
    expected = tuple(choices.count(i) for i in range(n))
    assert store.tally(code, qid).counts == expected
    await _a_student_cannot_take_over(ws, code, joined[0][0].cookies)
    assert store.get(code) == info  # nothing moved
    for s, _ in joined:
        await s.close()
    await t.close()
    return t.cookies, [s.cookies for s, _ in joined], code, qid, choices


async def _a_student_cannot_take_over(ws: str, code: str, cookies: dict) -> None:
    forged = ClassSession(ws, 120, {**cookies, "gptviz_teacher": f"{code}.{codes.new_token()}"})
    await forged.connect()
    run = await forged.open("lesson", f"model={MODEL}")
    assert "does not open it" in page_text(run)
    assert forged.widget(run, "class_end") is None and class_code(run) is None
    assert "gptviz_teacher" not in forged.cookies  # the page drops the forged key
    for key in ("lesson_reveal", "lesson_next"):  # its own lesson moves, not the class
        run = await forged.press(run, key)
    await forged.close()


def store_of_env() -> SQLiteStore:
    from pathlib import Path
    return store_of(Path(os.environ["GPTVIZ_DATA"]))


async def _second_half(ws, teacher_cookies, students, code, qid, choices, data):
    t = ClassSession(ws, 120, teacher_cookies)  # the teacher's tab, reloaded
    await t.connect()
    trun = await t.open("lesson", f"model={MODEL}")
    assert class_code(trun) == code, page_text(trun)[:400]  # resumed from the cookie
    assert count(trun) == (STUDENTS, STUDENTS)  # no answer lost in the restart
    back = []
    for cookies in students:  # each phone reloads: same identity, same answer
        s = ClassSession(ws, 120, cookies)
        await s.connect()
        back.append((s, await s.open("join", f"code={code}")))
    for k, (s, run) in enumerate(back):
        assert "Sent:" in page_text(run) and s.widget(run, "class_join") is None, k
    trun = await t.press(trun, "lesson_reveal")
    store = store_of(data)
    assert store.get(code).phase == "revealed"
    n = len(store.question(code, qid).snapshot.choices)
    assert store.tally(code, qid).counts == tuple(choices.count(i) for i in range(n))
    assert store.tally(code, qid).answered == STUDENTS  # none twice

    async def sees_outcome(k: int) -> None:
        s, run = back[k]
        run = await until(s, run, lambda r: "the model's" in page_text(r))
        right = choices[k] == store.question(code, qid).snapshot.answer
        assert ("is the model's" if right else "the model's answer is") in page_text(run), k
    await asyncio.gather(*(sees_outcome(k) for k in range(STUDENTS)))
    await _two_classes_and_wrong_codes(ws, code, store)
    for s, _ in back:
        await s.close()
    await t.close()


async def _two_classes_and_wrong_codes(ws: str, first: str, store: SQLiteStore) -> None:
    t2, run2, second = await teacher_starts(ws)
    assert second != first
    s, _ = await student_joins(ws, second, 99)
    assert store.joined(second) == 1 and store.joined(first) == STUDENTS
    guesser = ClassSession(ws, 120)
    await guesser.connect()
    run = await guesser.open("join")
    said = []
    for wrong in ["AAAAAA", "CCCCCC", "DDDDDD", "EEEEEE", "FFFFFF", first]:
        run = await guesser.type_key(run, "class_code_typed", wrong)
        run = await guesser.press(run, "class_join")
        said.append(" ".join(run.texts("alert")))
    assert all("No class has the code" in x for x in said[:5])
    assert "Too many wrong codes from this device: wait" in said[5]  # slowed, right code too
    assert store.joined(first) == STUDENTS
    for session in (t2, s, guesser):
        await session.close()
