"""The class store (SQLite): answers, counts, expiry, rate limits, the teacher's credential,
a restart, two classes at once and bad input, on a store in ``tmp_path`` with a clock the
tests move."""

from __future__ import annotations

import math
import sqlite3
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gptviz.classroom import codes
from gptviz.classroom.errors import (
    BadInput,
    ClassEnded,
    ClassError,
    Forbidden,
    Full,
    NotFound,
    RateLimited,
)
from gptviz.classroom.inputs import NICKNAME_CHARS, clean_nickname, parse_number
from gptviz.classroom.records import Pinned, Snapshot
from gptviz.classroom.sqlite import SQLiteStore
from gptviz.classroom.store import Limits
from gptviz.classroom.stores import open_store

PIN = Pinned("mathematics-char", "The sum of two even numbers", {"layer": 0, "T": 1.0})
CHOICE = Snapshot(1, "Text → tokens", "How many tokens?", "choice", ("1", "2", "3"), 1,
                  why="Two.", key="q-choice")
NUMBER = Snapshot(11, "Logits", "P(top) in %?", "number", value=41.5, low=0, high=100,
                  unit="%", key="q-number")


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store(tmp_path, clock) -> SQLiteStore:
    s = SQLiteStore(tmp_path / "classes.sqlite3", clock=clock)
    yield s
    s.close()


def ids(n: int) -> list[str]:
    return [codes.new_student_id() for _ in range(n)]


def started(store: SQLiteStore, snapshot: Snapshot = CHOICE) -> tuple[str, str]:
    info, token = store.create(PIN, "teacher")
    store.open_step(info.code, token, snapshot.step, snapshot)
    return info.code, token


def test_a_code_is_six_letters_without_look_alikes_and_the_token_is_never_stored(store):
    info, token = store.create(PIN, "teacher")
    assert len(info.code) == codes.CODE_LENGTH and set(info.code) <= set(codes.ALPHABET)
    assert not set("0O1IL2Z5S8B") & set(codes.ALPHABET)
    assert codes.valid_id(token) and len(token) >= 43
    raw = sqlite3.connect(store.path).execute("SELECT * FROM classes").fetchall()
    assert token not in repr(raw) and codes.token_hash(token) in repr(raw)
    assert info.pinned == PIN and info.phase == "asking" and info.step == 1


def test_one_answer_per_student_per_question_a_new_one_replaces_the_old(store):
    code, token = started(store)
    a, b, c = ids(3)
    for s in (a, b, c):
        store.join(code, s, None, "phone")
    qid = store.get(code).question
    store.answer(code, a, qid, 0, "phone")
    store.answer(code, a, qid, 2, "phone")  # changed her mind
    store.answer(code, a, qid, 1, "phone")
    store.answer(code, b, qid, 1, "phone")
    t = store.tally(code, qid)
    assert (t.joined, t.answered, t.counts, t.right) == (3, 2, (0, 2, 0), 2)
    assert store.my_answer(code, a, qid) == 1.0 and store.my_answer(code, c, qid) is None


def test_number_guesses_are_kept_sorted_with_no_name(store):
    code, token = started(store, NUMBER)
    students = ids(4)
    for s, guess in zip(students, ["12", "80,5", 41.5, "3 %"], strict=True):
        store.join(code, s, "x", "phone")
        store.answer(code, s, store.get(code).question, guess, "phone")
    t = store.tally(code, store.get(code).question)
    assert t.values == (3.0, 12.0, 41.5, 80.5) and t.answered == 4 and t.counts == ()


def test_answers_close_on_reveal_and_reopening_a_question_keeps_them(store):
    code, token = started(store)
    s = ids(1)[0]
    store.join(code, s, None, "phone")
    q1 = store.get(code).question
    store.answer(code, s, q1, 1, "phone")
    assert store.reveal(code, token).phase == "revealed"
    with pytest.raises(ClassEnded, match="closed"):
        store.answer(code, s, q1, 0, "phone")
    info = store.open_step(code, token, 11, NUMBER)
    assert info.step == 11 and info.question != q1 and info.phase == "asking"
    with pytest.raises(ClassEnded, match="closed"):  # not the current question
        store.answer(code, s, q1, 0, "phone")
    back = store.open_step(code, token, 1, CHOICE)  # the same question again
    assert back.question == q1 and back.phase == "revealed"
    assert store.tally(code, q1).counts == (0, 1, 0)
    assert store.open_step(code, token, 2, None).question is None  # a step with no question


def test_nothing_changes_without_the_teachers_credential(store):
    code, token = started(store)
    student = ids(1)[0]
    store.join(code, student, "Eve", "phone")
    before = store.get(code)
    for forged in (student, "", "x" * 43, codes.new_token(), None):
        for attempt in (lambda t: store.open_step(code, t, 5, None),
                        lambda t: store.reveal(code, t), lambda t: store.end(code, t),
                        lambda t: store.hide_nickname(code, t, student),
                        lambda t: store.students(code, t), lambda t: store.results(code, t),
                        lambda t: store.check_teacher(code, t)):
            with pytest.raises(Forbidden):
                attempt(forged)
    assert store.get(code) == before
    other, other_token = started(store)
    with pytest.raises(Forbidden):  # another class's teacher
        store.reveal(code, other_token)


def test_two_classes_stay_apart(store):
    (c1, t1), (c2, _) = started(store), started(store, NUMBER)
    assert c1 != c2
    s1, s2 = ids(2)
    store.join(c1, s1, "one", "phone")
    store.join(c2, s2, "two", "phone")
    store.answer(c1, s1, store.get(c1).question, 2, "phone")
    store.answer(c2, s2, store.get(c2).question, 7.5, "phone")
    with pytest.raises(NotFound, match="Join the class first"):
        store.answer(c2, s1, store.get(c2).question, 1, "phone")
    assert store.tally(c1, 1).counts == (0, 0, 1) and store.tally(c2, 1).values == (7.5,)
    assert [s.nickname for s in store.students(c1, t1)] == ["one"]
    store.end(c1, t1)
    assert store.get(c1).phase == "ended" and store.get(c2).phase == "asking"


def test_a_restart_reopens_the_file_with_everything_in_it(tmp_path, clock):
    path = tmp_path / "classes.sqlite3"
    first = SQLiteStore(path, clock=clock)
    code, token = started(first)
    students = ids(30)
    for k, s in enumerate(students):
        first.join(code, s, f"s{k}", "phone")
        first.answer(code, s, 1, k % 3, "phone")
    first.reveal(code, token)
    first.close()  # the server stops mid-class
    again = SQLiteStore(path, clock=clock)
    assert again.check_teacher(code, token).phase == "revealed"
    assert again.tally(code, 1).counts == (10, 10, 10)
    assert all(again.is_member(code, s) for s in students)
    assert again.results(code, token, per_student=True).students[4] == ("s4", {1: 1.0})
    again.close()


def test_a_class_expires_and_its_rows_are_deleted(store, clock):
    code, token = started(store)
    s = ids(1)[0]
    store.join(code, s, None, "phone")
    store.answer(code, s, 1, 0, "phone")
    clock.now += store.limits.ttl_s - 1
    assert store.get(code).code == code
    clock.now += 2
    with pytest.raises(NotFound):
        store.get(code)
    with pytest.raises(NotFound):
        store.check_teacher(code, token)
    assert store.purge() == 1
    db = sqlite3.connect(store.path)
    assert [db.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
            for t in ("classes", "questions", "students", "answers")] == [0, 0, 0, 0]


def test_wrong_codes_are_slowed_per_client(store, clock):
    code, _ = started(store)
    s = ids(1)[0]
    for wrong in ["AAAAAA", "ACDEF", "not a code", "ACDEFG"][:4] + ["CCCCCC"]:
        with pytest.raises(NotFound, match="No class has the code"):
            store.join(wrong, s, None, "guesser")
    with pytest.raises(RateLimited, match="Too many wrong codes") as slowed:
        store.join(code, s, None, "guesser")  # even the right code waits now
    assert 0 < slowed.value.wait_s <= 60
    store.join(code, ids(1)[0], None, "another phone")  # others are not slowed
    clock.now += slowed.value.wait_s + 0.01
    assert store.join(code, s, None, "guesser").code == code


def test_answers_per_student_are_limited(tmp_path, clock):
    store = SQLiteStore(tmp_path / "c.sqlite3", Limits(answers_per_student=3), clock=clock)
    code, _ = started(store)
    s = ids(1)[0]
    store.join(code, s, None, "phone")
    for v in (0, 1, 2):
        store.answer(code, s, 1, v, "phone")
    with pytest.raises(RateLimited, match="Too many answers"):
        store.answer(code, s, 1, 0, "phone")
    assert store.my_answer(code, s, 1) == 2.0  # the flood changed nothing
    clock.now += 61
    store.answer(code, s, 1, 0, "phone")
    store.close()


def test_classes_and_students_are_bounded(tmp_path, clock):
    store = SQLiteStore(tmp_path / "c.sqlite3", Limits(students_per_class=2,
                                                       classes_per_client=2), clock=clock)
    code, _ = started(store)
    a, b, c = ids(3)
    store.join(code, a, None, "p")
    store.join(code, b, None, "p")
    store.join(code, a, "again", "p")  # joining again is not a new student
    with pytest.raises(Full):
        store.join(code, c, None, "p")
    store.create(PIN, "teacher")
    with pytest.raises(RateLimited):
        store.create(PIN, "teacher")
    store.close()


def test_hidden_nicknames_and_results_per_student(store):
    code, token = started(store)
    a, b, c = ids(3)
    store.join(code, a, "Ada", "p")
    store.join(code, b, "<script>rude</script>", "p")
    store.join(code, c, None, "p")
    store.hide_nickname(code, token, b)
    store.join(code, b, "new name", "p")  # a new nickname stays hidden
    store.answer(code, a, 1, 1, "p")
    store.answer(code, b, 1, 0, "p")
    r = store.results(code, token, per_student=True)
    assert r.students == (("Ada", {1: 1.0}), ("student 2", {1: 0.0}), ("student 3", {}))
    assert store.results(code, token).students == ()
    assert r.tallies[0].answered == 2


def test_an_ended_class_refuses_joins_and_answers_but_keeps_its_results(store):
    code, token = started(store)
    s = ids(1)[0]
    store.join(code, s, None, "p")
    store.answer(code, s, 1, 1, "p")
    store.end(code, token)
    with pytest.raises(ClassEnded):
        store.join(code, ids(1)[0], None, "p")
    with pytest.raises(ClassEnded):
        store.answer(code, s, 1, 0, "p")
    with pytest.raises(ClassEnded):
        store.open_step(code, token, 2, None)
    assert store.results(code, token).tallies[0].counts == (0, 1, 0)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -math.inf, "abc", "", "1e999",
                                 True, None, [1], "5" * 41, 101, -0.5])
def test_bad_numeric_guesses_get_a_message(store, bad):
    code, _ = started(store, NUMBER)
    s = ids(1)[0]
    store.join(code, s, None, "p")
    with pytest.raises(BadInput) as e:
        store.answer(code, s, 1, bad, "p")
    assert str(e.value) and store.my_answer(code, s, 1) is None


@pytest.mark.parametrize("bad", [3, -1, 1.5, "1", True, None, float("nan")])
def test_bad_choices_get_a_message(store, bad):
    code, _ = started(store)
    s = ids(1)[0]
    store.join(code, s, None, "p")
    with pytest.raises(BadInput, match="Pick one of the 3 choices"):
        store.answer(code, s, 1, bad, "p")


def test_bad_inputs_from_a_teacher_or_a_browser_are_refused(store):
    info, token = store.create(PIN, "t")
    with pytest.raises(BadInput, match="at most 24 characters"):
        store.join(info.code, ids(1)[0], "x" * 100_000, "p")
    with pytest.raises(BadInput, match="malformed"):
        store.join(info.code, "../../etc", None, "p")
    for bad in [Snapshot(1, "t", "x" * 5000, "choice", ("a", "b"), 0),
                Snapshot(1, "t", "q", "choice", ("a",), 0),
                Snapshot(1, "t", "q", "choice", ("a", "b"), 2),
                Snapshot(1, "t", "q", "number", value=math.nan, low=0, high=1),
                Snapshot(1, "t", "q", "number", value=5, low=0, high=1),
                Snapshot(1, "t", "q", "poll", ("a", "b"), 0)]:
        with pytest.raises(BadInput):
            store.open_step(info.code, token, 1, bad)
    with pytest.raises(BadInput):
        store.create(Pinned("m", "p" * 30_000), "t")
    with pytest.raises(BadInput):
        store.create(Pinned("m", "p", {"T": math.inf}), "t")
    with pytest.raises(BadInput, match="names no store"):
        open_store("postgres://x")


def test_many_threads_answering_at_once_count_exactly(store):
    code, token = started(store)
    students = ids(60)
    for s in students:
        store.join(code, s, None, "p")
    errors: list[Exception] = []

    def answer(chunk: list[str]) -> None:
        try:
            for k, s in enumerate(chunk):
                for v in (2, k % 3):  # a first answer, then the one that counts
                    store.answer(code, s, 1, v, "p")
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    threads = [threading.Thread(target=answer, args=(students[i::6],)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    expected = [0, 0, 0]
    for i in range(6):
        for k, _ in enumerate(students[i::6]):
            expected[k % 3] += 1
    assert store.tally(code, 1).counts == tuple(expected) and store.tally(code, 1).answered == 60


def test_the_default_store_lives_in_the_data_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("GPTVIZ_DATA", str(tmp_path / "data"))
    monkeypatch.delenv("GPTVIZ_STORE", raising=False)
    s = open_store()
    assert s.path == tmp_path / "data" / "classes.sqlite3" and s.path.exists()
    assert sqlite3.connect(s.path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    s.close()


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(max_size=400), st.none(), st.integers()))
def test_any_nickname_is_clean_text_or_a_message(raw):
    try:
        nick = clean_nickname(raw)
    except BadInput as e:
        assert "nickname" in str(e).lower()
        return
    assert len(nick) <= NICKNAME_CHARS and nick == nick.strip()
    assert not any(ord(c) < 32 or 0x7f <= ord(c) < 0xa0 for c in nick)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=60), st.floats(allow_nan=True, allow_infinity=True),
                 st.integers(), st.booleans(), st.none()))
def test_any_guess_is_a_finite_number_in_range_or_a_message(raw):
    try:
        value = parse_number(raw, -5.0, 100.0)
    except BadInput as e:
        assert str(e)
        return
    assert math.isfinite(value) and -5.0 <= value <= 100.0


@pytest.fixture(scope="module")
def lenient(tmp_path_factory) -> SQLiteStore:
    """A store that never slows a client: for many wrong codes in a row."""
    s = SQLiteStore(tmp_path_factory.mktemp("c") / "c.sqlite3", Limits(join_failures=10**6,
                                                                       classes_per_client=10**6))
    yield s
    s.close()


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=80))
def test_any_typed_code_is_found_or_refused_with_a_message(lenient, raw):
    code, _ = started(lenient)
    for typed in (raw, code[:3] + raw[:3]):
        try:
            assert lenient.join(typed, codes.new_student_id(), None, "p").code == code
        except ClassError as e:
            assert isinstance(e, NotFound) and "No class has the code" in str(e)
