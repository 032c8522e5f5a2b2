"""The students' Join page, made for a phone: type the code (or arrive from the QR code's
link), an optional nickname, then the teacher's current step and its question, "Send",
and after the reveal their answer beside the model's. The page follows the teacher's step: a
timer asks the store every ``FOLLOW_S`` seconds whether anything changed, and only then is
the page drawn again. It never shows another student's answer.
"""

from __future__ import annotations

import streamlit as st

from gptviz.app.classroom import browser
from gptviz.app.classroom.shared import FOLLOW_S, class_store, client
from gptviz.app.lesson.questions import md
from gptviz.classroom.codes import normalize_code
from gptviz.classroom.errors import ClassError, NotFound
from gptviz.classroom.inputs import NICKNAME_CHARS
from gptviz.classroom.records import Question

JOINED = "class_joined"  # st.session_state: the code this session joined
NOTE = "class_note"  # st.session_state: what the last Send said, by question
PHONE_CSS = """<style>
[data-testid="stSidebar"],[data-testid="stSidebarCollapsedControl"],
[data-testid="stExpandSidebarButton"],[data-testid="stSidebarNav"]{display:none !important}
.stMainBlockContainer{max-width:34rem;padding:2.5rem 1rem 3rem}
.stMainBlockContainer [data-testid="stMarkdownContainer"] p{font-size:1.08rem;line-height:1.5}
.st-key-class_question [role="radiogroup"] label{padding:.35rem 0}
.st-key-class_question [role="radiogroup"] p{font-size:1.15rem}
</style>"""


def join_page() -> None:
    """The whole page: the join form, or the class this browser joined."""
    st.html(PHONE_CSS)
    sid = browser.student_id()
    code = st.session_state.get(JOINED)
    raw = st.query_params.get("code")
    if code is None and raw and (found := normalize_code(raw)):
        try:
            if class_store().is_member(found, sid):
                code = st.session_state[JOINED] = found  # a reload, or a phone that slept
        except ClassError as e:  # the store out of reach (paused): try again by itself
            st.warning(str(e), icon=":material/pause_circle:")
            _watch(found, None)
            return
    if code is None:
        _form(raw, sid)
    else:
        _watch(code, _show(code, sid))


def _join(sid: str) -> None:
    state = st.session_state
    try:
        info = class_store().join(state.get("class_code_typed", ""), sid,
                                  state.get("class_nickname") or None, client())
    except ClassError as e:
        state[NOTE] = ("error", str(e))
        return
    state[JOINED] = info.code
    st.query_params["code"] = info.code  # a reload comes back to the class


def _form(raw: str | None, sid: str) -> None:
    st.title("Join the class", anchor=False)
    if "class_code_typed" not in st.session_state and raw:
        st.session_state["class_code_typed"] = str(raw)[:64]
    st.text_input("The code on the projector", key="class_code_typed", max_chars=64,
                  placeholder="e.g. ACD3FG")
    st.text_input("A nickname (optional)", key="class_nickname", max_chars=NICKNAME_CHARS,
                  placeholder="none", help="Shown only if your teacher lists the answers by "
                                            "nickname. No real name needed.")
    st.button("Join", key="class_join", type="primary", width="stretch", on_click=_join,
              args=(sid,), icon=":material/login:")
    kind, text = st.session_state.pop(NOTE, (None, None))
    if kind == "error":
        st.error(text, icon=":material/error:")
    st.caption("You answer the teacher's questions from here. The projector shows the "
               "class's answers counted together, never who chose what, unless your teacher "
               "lists them by nickname (then without a nickname you are “student 3”).")


def _send(code: str, sid: str, q: Question, key: str) -> None:
    value = st.session_state.get(key)
    notes = st.session_state.setdefault(NOTE + "s", {})
    if value is None:
        notes[q.id] = ("error", "Choose an answer first." if q.snapshot.kind == "choice" else
                       "Type a number first.")
        return
    try:
        stored = class_store().answer(code, sid, q.id, value, client())
    except ClassError as e:
        notes[q.id] = ("error", str(e))
        return
    notes[q.id] = ("ok", f"Sent: **{md(q.snapshot.answer_text(stored))}**. You can change it "
                         "until the teacher reveals the answer.")


@st.fragment
def _show(code: str, sid: str) -> int | None:
    """The teacher's current step, its question and this student's answer; returns the
    class's version drawn (None when the class is gone). A fragment: choosing and sending
    redraw this part only."""
    try:
        return _class(code, sid)
    except NotFound:
        st.warning(f"Class {code} has ended or expired. Thank you for taking part!",
                   icon=":material/event_busy:")
        if st.button("Join another class", key="class_again"):
            _leave()
            st.rerun(scope="app")  # the form is outside this fragment
    except ClassError as e:  # e.g. the class store out of reach: the class is paused, and
        st.warning(str(e), icon=":material/pause_circle:")  # _watch redraws once it is back
    return None


def _class(code: str, sid: str) -> int:
    """The class's step and question as this student sees them; the version drawn."""
    store = class_store()
    info = store.get(code)
    steps = info.pinned.settings.get("steps")
    st.caption(f"Class {code} · step {info.step}{f' of {steps}' if steps else ''}")
    st.subheader(info.title or f"Step {info.step}", anchor=False)
    if info.ended:
        st.success("The teacher has ended the class. Thank you for taking part!",
                   icon=":material/celebration:")
    elif info.question is None:
        st.info("No question at this step: watch the projector.", icon=":material/tv:")
    else:
        q = store.question(code, info.question)
        mine = store.my_answer(code, sid, q.id)
        if q.revealed:
            _outcome(q, mine)
        else:
            _ask(code, sid, q, mine)
    return info.version


@st.fragment(run_every=FOLLOW_S)
def _watch(code: str, drawn: int | None) -> None:
    """Every ``FOLLOW_S`` seconds, one read of the store: when the teacher has changed the
    class since the page was drawn (a step, a reveal, the end), the page is drawn again.
    It draws nothing itself, so a tick costs the server one small query."""
    try:
        now = class_store().get(code).version
    except ClassError:
        now = None
    if now != drawn:
        st.rerun(scope="app")


def _leave() -> None:
    st.session_state[JOINED] = None
    st.query_params.pop("code", None)


def _ask(code: str, sid: str, q: Question, mine: float | None) -> None:
    s = q.snapshot
    with st.container(key="class_question"):
        st.markdown(s.text)
        key = f"class_answer_{code}_{q.id}"
        if s.kind == "choice":
            st.radio("Your answer", list(range(len(s.choices))), key=key,
                     index=None if mine is None else int(mine),
                     format_func=lambda i: md(s.choices[i]), label_visibility="collapsed")
        else:
            whole = s.value is not None and float(s.value).is_integer() and s.high > 1000
            st.number_input(f"Your guess{f' ({s.unit})' if s.unit else ''}", key=key,
                            min_value=int(s.low) if whole else s.low,
                            max_value=int(s.high) if whole else s.high,
                            value=None if mine is None else (int(mine) if whole else mine),
                            step=1 if whole else 0.1, placeholder="a number")
        st.button("Send", key=f"class_send_{q.id}", type="primary", width="stretch",
                  icon=":material/send:", on_click=_send, args=(code, sid, q, key))
    kind, text = st.session_state.get(NOTE + "s", {}).get(q.id, (None, None))
    if kind == "error":
        st.error(text, icon=":material/error:")
    elif mine is not None:
        st.success(text or f"Sent: **{md(s.answer_text(mine))}**.",
                   icon=":material/check:")


def _outcome(q: Question, mine: float | None) -> None:
    """Their answer beside the model's, and the short why."""
    s = q.snapshot
    model = md(s.model_text())
    st.markdown(s.text)
    if mine is None:
        st.info(f"You did not answer. The model's answer: **{model}**.",
                icon=":material/visibility:")
    elif s.kind == "number":
        st.info(f"Your guess: **{md(s.answer_text(mine))}** · the model's: **{model}**.",
                icon=":material/straighten:")
    elif s.right(mine):
        st.success(f"Your answer, **{model}**, is the model's.", icon=":material/check_circle:")
    else:
        st.error(f"You said **{md(s.answer_text(mine))}**; the model's answer is **{model}**.",
                 icon=":material/cancel:")
    st.caption(s.why)
