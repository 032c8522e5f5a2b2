"""What a class keeps in the browser: the student's id and the teacher's key, as cookies.

A cookie outlives a reload and a phone that sleeps; the server reads it when the page
connects (``st.context.cookies``). It is written by a tiny ``st.components.v2`` script
(``browser.js``): Streamlit can read cookies but not set them. The teacher's key lives
only there and in the teacher's session, never in the page's address: the teacher's
private link carries it after a ``#``, which browsers do not send to the server.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import streamlit as st

from gptviz.classroom import codes

STUDENT = "gptviz_student"  # cookie: the student's id
TEACHER = "gptviz_teacher"  # cookie: "CODE.TOKEN", the teacher's key to one class
STUDENT_AGE_S = 24 * 3600
_STUDENT_KEY = "class_student_id"  # st.session_state: the id this session uses
HIDE_CSS = '<style>[class*="st-key-gv-cookies-"]{display:none}</style>'  # nothing to see


@functools.cache
def _component() -> Callable[..., Any]:
    js = Path(__file__).with_name("browser.js").read_text(encoding="utf-8")
    return st.components.v2.component("gptviz.class_cookies", html="<span></span>", js=js)


def keep(key: str, set_: list[tuple[str, str, int]] = (), clear: list[str] = (),
         adopt_teacher_age: int = 0) -> None:
    """Write (``set_``: name, value, max-age s) and delete (``clear``) cookies; with
    ``adopt_teacher_age``, turn a ``#teacher=`` link into the teacher's cookie."""
    data = {"set": [list(c) for c in set_], "clear": list(clear)}
    if adopt_teacher_age:
        data.update(adopt=TEACHER, adoptAge=int(adopt_teacher_age))
    st.html(HIDE_CSS)
    with st.container(key=f"gv-cookies-{key}"):
        _component()(key=key, data=data)


def cookie(name: str) -> str | None:
    """A cookie the browser sent when the page connected, or None."""
    try:
        value = st.context.cookies.get(name)
    except Exception:  # no browser (a bare script run)
        return None
    return value if isinstance(value, str) else None


def student_id() -> str:
    """This browser's student id: from its cookie, else a new one that the cookie keeps."""
    state = st.session_state
    if _STUDENT_KEY not in state:
        found = cookie(STUDENT)
        state[_STUDENT_KEY] = found if codes.valid_id(found) else codes.new_student_id()
    sid = state[_STUDENT_KEY]
    if cookie(STUDENT) != sid:
        keep("student-id", set_=[(STUDENT, sid, STUDENT_AGE_S)])
    return sid


def teacher_cookie() -> tuple[str, str] | None:
    """The (code, credential) this browser keeps for a class it teaches, if any."""
    raw = cookie(TEACHER)
    if not raw or "." not in raw:
        return None
    code, _, token = raw.partition(".")
    return (code, token) if codes.normalize_code(code) and codes.valid_id(token) else None
