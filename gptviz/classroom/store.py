"""The class store's interface: what any store (SQLite here, a shared one for several
server processes) offers the pages, and the limits every store enforces.

Every method that changes a class takes the teacher's credential (``token``) and raises
``Forbidden`` without it; students only join, answer and read their own answer. Errors are
``errors.ClassError``s with a message for the person. Stores are safe to share between the
threads of one process.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass

from gptviz.classroom.records import ClassInfo, Pinned, Question, Results, Snapshot, Student, Tally


@dataclass(frozen=True)
class Limits:
    """What a store allows; the defaults suit a class of 30 to 300 on one server."""

    ttl_s: float = 4 * 3600  # a class expires this long after it starts
    join_failures: int = 5  # wrong codes a client may try per window before it waits
    join_window_s: float = 60.0
    answers_per_student: int = 20  # answers (changes included) per student per window
    answers_per_client: int = 1200  # per client address: a school behind one address
    answer_window_s: float = 60.0
    classes_per_client: int = 10  # classes one client may start per hour
    students_per_class: int = 500
    live_classes: int = 1000  # classes at once in the store


class ClassStore(abc.ABC):
    """Classes, their questions, students and answers. ``client`` names whoever asks (an
    address) for the rate limits; ``token`` is the teacher's credential."""

    limits: Limits

    # ---- the teacher's side: every change checks the credential ----
    @abc.abstractmethod
    def create(self, pinned: Pinned, client: str) -> tuple[ClassInfo, str]:
        """A new class and its teacher's credential (shown to nobody: the teacher's session
        keeps it)."""

    @abc.abstractmethod
    def check_teacher(self, code: str, token: str) -> ClassInfo:
        """The class, if ``token`` is its teacher's credential; else ``Forbidden``."""

    @abc.abstractmethod
    def open_step(self, code: str, token: str, step: int, snapshot: Snapshot | None,
                  pinned: Pinned | None = None, title: str = "") -> ClassInfo:
        """Move the class to ``step`` (titled ``title``, or its question's title) and its
        question (the same question opened again, by ``snapshot.key``, keeps its answers and
        whether it was revealed); ``pinned`` records new settings when the teacher changed
        them. Nothing changes when the class is there already."""

    @abc.abstractmethod
    def reveal(self, code: str, token: str) -> ClassInfo:
        """Show the current question's answer: students see theirs beside the model's, and
        answers to it are closed."""

    @abc.abstractmethod
    def end(self, code: str, token: str) -> ClassInfo:
        """End the class: no more answers; its results stay readable until it expires."""

    @abc.abstractmethod
    def hide_nickname(self, code: str, token: str, student: str, hidden: bool = True) -> None:
        """Hide (or show again) a student's nickname wherever the class shows it."""

    @abc.abstractmethod
    def students(self, code: str, token: str) -> list[Student]:
        """The class's students, in the order they joined (nicknames for the teacher)."""

    @abc.abstractmethod
    def results(self, code: str, token: str, per_student: bool = False) -> Results:
        """Every question's tally, and one row per student when asked (nicknames only;
        a hidden or missing one reads "student k")."""

    # ---- anyone with the code ----
    @abc.abstractmethod
    def get(self, code: str) -> ClassInfo:
        """The live class with this code (``NotFound`` when there is none or it expired)."""

    @abc.abstractmethod
    def question(self, code: str, question: int) -> Question:
        """One question of the class, as it was asked."""

    @abc.abstractmethod
    def joined(self, code: str) -> int:
        """How many students have joined the class."""

    @abc.abstractmethod
    def tally(self, code: str, question: int) -> Tally:
        """A question's answers, counted (no student's name)."""

    # ---- a student ----
    @abc.abstractmethod
    def join(self, code: str, student: str, nickname: str | None, client: str) -> ClassInfo:
        """Join (or join again: the same id keeps its answers; a new nickname replaces the
        old). Wrong codes are counted per client, which then waits (``RateLimited``)."""

    @abc.abstractmethod
    def is_member(self, code: str, student: str) -> bool:
        """Whether this id has joined this class."""

    @abc.abstractmethod
    def answer(self, code: str, student: str, question: int, value: object, client: str
               ) -> float:
        """Record a student's answer to the current question (a choice's index, or a number
        as given); a new answer replaces the old. Returns the value stored."""

    @abc.abstractmethod
    def my_answer(self, code: str, student: str, question: int) -> float | None:
        """This student's answer to a question, or None."""

    # ---- housekeeping ----
    @abc.abstractmethod
    def purge(self) -> int:
        """Delete the classes that expired (and every answer of theirs); how many."""

    def close(self) -> None:  # noqa: B027 (optional: a store that holds nothing open)
        """Release what the store holds open."""
