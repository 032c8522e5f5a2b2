"""What a class keeps, as plain frozen dataclasses: the same for every store.

A ``Snapshot`` is one question as the teacher's lesson asked it (its text, its choices or
the kind of number asked for, and the model's answer), so students and results need no
model. Answers are numbers: a choice's index, or the number guessed.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Literal

from gptviz.i18n import number, separators

Kind = Literal["choice", "number"]
Phase = Literal["asking", "revealed", "ended"]
KINDS = ("choice", "number")


@dataclass(frozen=True)
class Pinned:
    """What the class pins when it starts: the teacher's model, prompt and settings."""

    model: str  # the model's name, as the picker lists it
    prompt: str  # the lesson's prompt, as typed
    settings: dict[str, float | int | str] = field(default_factory=dict)  # layer, head, T...
    lang: str = "en"  # the class's language (the teacher's)


@dataclass(frozen=True)
class Snapshot:
    """One question as the class sees it. ``answer`` indexes ``choices`` (kind "choice");
    ``value`` is the model's number (kind "number"), guesses lying in [``low``, ``high``].

    >>> Snapshot(3, "Ids", "2 + 2?", "choice", ("3", "4"), answer=1).model_text()
    '4'
    >>> Snapshot(11, "Logits", "P?", "number", value=41.25, unit="%").model_text()
    '41.2 %'
    """

    step: int
    title: str  # the step's title
    text: str  # the question (Markdown)
    kind: Kind
    choices: tuple[str, ...] = ()
    answer: int | None = None
    value: float | None = None
    low: float = 0.0
    high: float = 0.0
    unit: str = ""  # after a number: "%", "tokens", ""
    why: str = ""  # Markdown: the model's numbers that decide it
    key: str = ""  # a fingerprint: the same question opened again keeps its answers

    def model_text(self) -> str:
        """The model's answer as a student reads it."""
        if self.kind == "choice":
            return self.choices[self.answer] if self.answer is not None else ""
        return number_text(self.value, self.unit)

    def answer_text(self, value: float) -> str:
        """A stored answer as a student reads it: the choice, or the number and its unit."""
        if self.kind == "choice":
            i = int(value)
            return self.choices[i] if 0 <= i < len(self.choices) else "?"
        return number_text(value, self.unit)

    def right(self, value: float | None) -> bool | None:
        """Whether a choice is the model's (None for a number: a guess is near, not right)."""
        if self.kind != "choice" or value is None:
            return None
        return int(value) == self.answer


def number_text(value: float | None, unit: str = "") -> str:
    """A number as the class reads it (in the reader's language): three significant figures,
    or a whole number.

    >>> number_text(12.0, "tokens"), number_text(0.012345), number_text(1234.5, "%")
    ('12 tokens', '0.0123', '1,234.5 %')
    """
    if value is None or not math.isfinite(value):
        return "—"
    if value == int(value) and abs(value) < 1e15:
        text = number(int(value), 0, grouping=True)
    elif abs(value) >= 100:
        text = number(value, 1, grouping=True)
    else:
        text = f"{value:.3g}".replace(".", separators()[0])
    return f"{text} {unit}".strip()


@dataclass(frozen=True)
class Question:
    """A question the class was asked: its id in the class, the snapshot, and whether the
    teacher has revealed the model's answer."""

    id: int
    snapshot: Snapshot
    revealed: bool = False


@dataclass(frozen=True)
class ClassInfo:
    """A class as everyone may see it (nothing here gives control of it)."""

    code: str
    pinned: Pinned
    step: int  # the teacher's current step, from 1
    question: int | None  # the current question's id, None at a step without one
    ended: bool
    revealed: bool  # the current question's answer is shown
    created: float  # seconds since the epoch
    expires: float
    version: int  # grows with every change the teacher makes: pages redraw when it moves
    title: str = ""  # the current step's title

    @property
    def phase(self) -> Phase:
        return "ended" if self.ended else "revealed" if self.revealed else "asking"


@dataclass(frozen=True)
class Student:
    """A student as the class knows them: an id kept in their browser, a nickname or none."""

    id: str
    nickname: str  # "" when none was given
    hidden: bool  # the teacher hid the nickname


@dataclass(frozen=True)
class Tally:
    """A question's answers, with no student's name: how many joined and answered, the
    count per choice (kind "choice") and the sorted guesses (kind "number").

    >>> t = Tally(Question(1, Snapshot(1, "t", "q", "choice", ("a", "b"), 1)), 3, 2, (0, 2))
    >>> t.right, t.share_right
    (2, 1.0)
    """

    question: Question
    joined: int
    answered: int
    counts: tuple[int, ...] = ()
    values: tuple[float, ...] = ()

    @property
    def right(self) -> int:
        s = self.question.snapshot
        return self.counts[s.answer] if s.kind == "choice" and s.answer is not None else 0

    @property
    def share_right(self) -> float | None:
        return self.right / self.answered if self.answered and self.counts else None


@dataclass(frozen=True)
class Results:
    """The class's results: every question asked, in order, and (only when the teacher
    asks) one row per student: a name (a nickname, or "student k") and their answers by
    question id."""

    tallies: tuple[Tally, ...]
    students: tuple[tuple[str, dict[int, float]], ...] = ()


def snapshot_json(s: Snapshot) -> str:
    """A snapshot as a store keeps it (JSON); ``snapshot_from_json`` reads it back."""
    return json.dumps(asdict(s))


def snapshot_from_json(text: str) -> Snapshot:
    """>>> s = Snapshot(1, "t", "q", "choice", ("a", "b"), 1)
    >>> snapshot_from_json(snapshot_json(s)) == s
    True
    """
    fields = json.loads(text)
    return Snapshot(**{**fields, "choices": tuple(fields["choices"])})


def tally_of(q: Question, joined: int, values: Iterable[float]) -> Tally:
    """Count a question's answers (any order): per choice, or the guesses sorted.

    >>> tally_of(Question(1, Snapshot(1, "t", "q", "choice", ("a", "b"), 1)), 3, [1, 0, 1]).counts
    (1, 2)
    """
    values = sorted(values)
    if q.snapshot.kind == "number":
        return Tally(q, joined, len(values), values=tuple(values))
    counts = [0] * len(q.snapshot.choices)
    for v in values:
        counts[int(v)] += 1
    return Tally(q, joined, len(values), counts=tuple(counts))


def student_rows(people: Iterable[Student], answers: Iterable[tuple[int, str, float]]
                 ) -> tuple[tuple[str, dict[int, float]], ...]:
    """One row per student in the order they joined: a shown nickname or "student k", and
    their answers by question id (``answers``: (question, student id, value)).

    >>> student_rows([Student("a" * 22, "Ada", False), Student("b" * 22, "x", True)],
    ...              [(1, "b" * 22, 0.0)])
    (('Ada', {}), ('student 2', {1: 0.0}))
    """
    people = list(people)
    by_id: dict[str, dict[int, float]] = {s.id: {} for s in people}
    for q, student, value in answers:
        if student in by_id:
            by_id[student][q] = value
    return tuple((s.nickname if s.nickname and not s.hidden else f"student {k}", by_id[s.id])
                 for k, s in enumerate(people, start=1))
