"""Every input a class takes, checked and bounded: nicknames, numeric guesses, the
questions and settings a teacher's lesson sends. Each check returns the clean value or
raises ``BadInput`` with a message that says what to do."""

from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import replace

from gptviz.classroom.errors import BadInput
from gptviz.classroom.records import KINDS, Pinned, Snapshot
from gptviz.i18n import N_, _, ngettext, number, separators

NICKNAME_CHARS = 24  # a nickname's most characters
TEXT_CHARS = 4000  # a question's text or its "why"
TITLE_CHARS = 200
CHOICE_CHARS = 300
MAX_CHOICES = 12
PROMPT_CHARS = 20_000  # the pinned prompt (the app's own prompt box holds less)
NAME_CHARS = 200  # a model's name, a setting's text
MAX_SETTINGS = 20
NUMBER_CHARS = 40  # a typed number
_SPACES = re.compile(r"\s+")


def clean_nickname(raw: object) -> str:
    """A nickname as plain text: control and format characters dropped (markup is kept as
    text; pages show it escaped), spaces collapsed, at most ``NICKNAME_CHARS`` characters.
    None or blank is no nickname ("").

    >>> clean_nickname("  Ada\\u200b  L.\\n"), clean_nickname(None), clean_nickname("<b>x</b>")
    ('Ada L.', '', '<b>x</b>')
    """
    if raw is None:
        return ""
    if not isinstance(raw, str):
        raise BadInput(_("A nickname is text."))
    if len(raw) > 10 * NICKNAME_CHARS:  # before any work on it
        raise BadInput(_("A nickname has at most {most} characters; choose a shorter one, or "
                         "leave it empty.").format(most=NICKNAME_CHARS))
    text = "".join(c for c in raw if unicodedata.category(c)[0] != "C" or c in " \t\n")
    text = _SPACES.sub(" ", text).strip()
    if len(text) > NICKNAME_CHARS:
        raise BadInput(_("A nickname has at most {most} characters; “{text}…” has {n}. Choose a "
                         "shorter one, or leave it empty.").format(
                             most=NICKNAME_CHARS, text=text[:30], n=len(text)))
    return text


def parse_number(raw: object, low: float, high: float) -> float:
    """A guessed number, from a number box or typed text ("41.5", "41,5", "41.5 %"), that
    lies in [low, high].

    >>> parse_number("41,5 %", 0, 100), parse_number(3, 0, 10)
    (41.5, 3.0)
    >>> parse_number("nan", 0, 1)
    Traceback (most recent call last):
    ...
    gptviz.classroom.errors.BadInput: “nan” is not a number: type digits, such as 42 or 0.5.
    """
    if isinstance(raw, bool) or raw is None:
        raise BadInput(_("Type a number first, such as 42 or 0.5."))
    if isinstance(raw, int | float):
        value = float(raw)
        shown = repr(raw)
    elif isinstance(raw, str):
        shown = raw.strip()[:NUMBER_CHARS]
        if len(raw) > NUMBER_CHARS:
            raise BadInput(_("A number has at most {most} characters.").format(most=NUMBER_CHARS))
        text = raw.strip().removesuffix("%").strip().replace(" ", "").replace("\u202f", "")
        if text.count(",") == 1 and "." not in text:
            text = text.replace(",", ".")  # a decimal comma
        if not re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", text):
            raise BadInput(_("“{shown}” is not a number: type digits, such as 42 or 0.5.").format(
            shown=shown))
        value = float(text)
    else:
        raise BadInput(_("A guess is a number, such as 42 or 0.5."))
    if not math.isfinite(value):
        raise BadInput(_("“{shown}” is not a number: type digits, such as 42 or 0.5.").format(
            shown=shown))
    if not low <= value <= high:
        raise BadInput(_("{value} is outside what this question allows: give a number from {low} "
                         "to {high}.").format(value=_g(value), low=_g(low), high=_g(high)))
    return value


def _g(x: float) -> str:
    """``x`` as ``{:g}`` writes it, with the reader's decimal sign."""
    return f"{x:g}".replace(".", separators()[0])


def _text(value: object, what: str, most: int, empty_ok: bool = False) -> str:
    if not isinstance(value, str):
        raise BadInput(_("{what} must be text.").format(what=_(what)))
    if len(value) > most:
        raise BadInput(_("{what} has at most {most} characters (this one has {n}).").format(
            what=_(what), most=number(most, 0, grouping=True),
            n=number(len(value), 0, grouping=True)))
    if not empty_ok and not value.strip():
        raise BadInput(_("{what} is empty.").format(what=_(what)))
    return value


def _finite(value: object, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) \
            or not math.isfinite(float(value)):
        raise BadInput(_("{what} must be a finite number.").format(what=_(what)))
    return float(value)


def check_step(step: object, title: object) -> tuple[int, str]:
    """A step's number (1 to 1000) and title, bounded.

    >>> check_step(3, "Ids")
    (3, 'Ids')
    """
    if isinstance(step, bool) or not isinstance(step, int) or not 1 <= step <= 1000:
        raise BadInput(_("A step is a whole number from 1 to 1000."))
    return step, _text(title, N_("A step's title"), TITLE_CHARS, empty_ok=True)


def check_snapshot(s: Snapshot) -> Snapshot:
    """A question as the store may keep it: bounded texts, a choice's answer among its
    choices, a number's value inside its range."""
    check_step(s.step, s.title)
    _text(s.text, N_("A question"), TEXT_CHARS)
    _text(s.why, N_("A question's explanation"), TEXT_CHARS, empty_ok=True)
    _text(s.unit, N_("A number's unit"), 20, empty_ok=True)
    _text(s.key, N_("A question's key"), 64, empty_ok=True)
    if s.kind not in KINDS:
        raise BadInput(_("A question is a choice or a number, not {kind}.").format(
            kind=repr(s.kind)))
    if s.kind == "choice":
        if not 2 <= len(s.choices) <= MAX_CHOICES:
            raise BadInput(_("A question has 2 to {most} choices.").format(most=MAX_CHOICES))
        for c in s.choices:
            _text(c, N_("A choice"), CHOICE_CHARS)
        if not isinstance(s.answer, int) or not 0 <= s.answer < len(s.choices):
            raise BadInput(_("The model's answer must be one of the choices."))
        return replace(s, choices=tuple(s.choices), value=None)
    value, low, high = (_finite(v, what) for v, what in (
        (s.value, N_("The model's number")), (s.low, N_("The lowest guess")),
        (s.high, N_("The highest guess"))))
    if not low < high or not low <= value <= high:
        raise BadInput(_("The model's number must lie between the lowest and highest guess."))
    return replace(s, choices=(), answer=None, value=value, low=low, high=high)


def check_pinned(p: Pinned) -> Pinned:
    """The model, prompt and settings a class pins, bounded."""
    _text(p.model, N_("The model's name"), NAME_CHARS)
    _text(p.prompt, N_("The prompt"), PROMPT_CHARS, empty_ok=True)
    _text(p.lang, N_("The language"), 16)
    if not isinstance(p.settings, dict) or len(p.settings) > MAX_SETTINGS:
        raise BadInput(_("A class pins at most {most} settings.").format(most=MAX_SETTINGS))
    for k, v in p.settings.items():
        _text(k, N_("A setting's name"), 40)
        if isinstance(v, str):
            _text(v, N_("A setting"), NAME_CHARS, empty_ok=True)
        else:
            _finite(v, _("The setting {name}").format(name=k))
    return p


def answer_value(s: Snapshot, raw: object) -> float:
    """An answer as a store keeps it: a choice's index, or a number in the question's range.

    >>> answer_value(Snapshot(1, "t", "q", "choice", ("a", "b"), 1), 1)
    1.0
    """
    if s.kind == "number":
        return parse_number(raw, s.low, s.high)
    if isinstance(raw, bool) or not isinstance(raw, int | float) \
            or not (math.isfinite(raw) and raw == int(raw) and 0 <= raw < len(s.choices)):
        raise BadInput(ngettext("Pick one of the {n} choice.", "Pick one of the {n} choices.",
                                len(s.choices)).format(n=len(s.choices)))
    return float(int(raw))
