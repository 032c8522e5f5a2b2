"""The teacher's side of a class, in the Lesson: start a class, drive it with the lesson's
own steps and Reveal, end it, and come back to it after a reload.

The teacher's credential lives in this session and in a cookie of this browser
(``browser.TEACHER``), never on screen or in the page's address; "Save the teacher link"
keeps a private link whose ``#teacher=`` part the Lesson turns back into that cookie.
Every change goes through the store with the credential, so no other session can make it.
"""

from __future__ import annotations

from dataclasses import replace
from urllib.parse import urlencode

import streamlit as st

from gptviz.app.classroom import browser, projector
from gptviz.app.classroom.questions import NUMBERS, class_question
from gptviz.app.classroom.shared import class_store, client
from gptviz.app.lesson import view
from gptviz.app.lesson.presenter import REVEAL
from gptviz.app.lesson.questions import md
from gptviz.app.lesson.run import Lesson, StepView
from gptviz.app.lesson.steps import TITLES, title
from gptviz.app.shared.presenter import Top
from gptviz.classroom.errors import ClassError
from gptviz.classroom.records import ClassInfo, Pinned, Snapshot
from gptviz.i18n import N_, _, current

CLASS = "class_teaching"  # st.session_state: (code, credential) of the class this session runs
TRIED = "class_cookie_tried"  # the browser's teacher cookie was tried (once per session)
MESSAGE = "class_message"  # st.session_state: what the last action said
HIDDEN_UNTIL_REVEAL = N_("*Guess first: the step's text, figure and formulas appear with the "
                         "answer.*")


def teaching() -> tuple[str, str] | None:
    """The class this session teaches: held in the session, else resumed from this
    browser's cookie (after a reload), once it proves to be the class's credential."""
    state = st.session_state
    if state.get(CLASS) is None and not state.get(TRIED):
        state[TRIED] = True
        found = browser.teacher_cookie()
        if found:
            try:
                info = class_store().check_teacher(*found)
            except ClassError as e:
                state[MESSAGE] = _("This browser's key to class {code} does not open it: "
                                   "{error}").format(code=found[0], error=e)
            else:
                state[CLASS] = (info.code, found[1])
                st.toast(_("Class {code} resumed.").format(code=info.code),
                         icon=":material/groups:")
    return state.get(CLASS)


def pinned(ls: Lesson) -> Pinned:
    """What the class pins of the teacher's lesson, and its language: the teacher's session
    language, which a student's page takes unless the student picks another."""
    lang = current()
    return Pinned(ls.picked.name, ls.prompt.text, {"layer": ls.layer, "head": ls.head,
                                                   "temperature": ls.temperature,
                                                   "steps": len(TITLES)}, lang)


def _start(pin: Pinned) -> None:
    try:
        info, token = class_store().create(pin, client())
    except ClassError as e:
        st.session_state[MESSAGE] = str(e)
        return
    st.session_state[CLASS] = (info.code, token)


def _act(action: str) -> None:
    """Reveal or end, with this session's credential."""
    code, token = st.session_state[CLASS]
    try:
        getattr(class_store(), action)(code, token)
    except ClassError as e:
        st.session_state[MESSAGE] = str(e)


def _forget() -> None:
    st.session_state[CLASS] = None


def _hide(student: str, key: str) -> None:
    code, token = st.session_state[CLASS]
    try:
        class_store().hide_nickname(code, token, student, bool(st.session_state[key]))
    except ClassError as e:
        st.session_state[MESSAGE] = str(e)


def _cookies(held: tuple[str, str] | None) -> None:
    ttl = int(class_store().limits.ttl_s)
    if held is not None:
        browser.keep("teacher", set_=[(browser.TEACHER, ".".join(held), ttl)],
                     adopt_teacher_age=ttl)
    else:
        browser.keep("teacher", clear=[browser.TEACHER] if browser.cookie(browser.TEACHER)
                     else [], adopt_teacher_age=ttl)


def drive(top: Top, ls: Lesson, step: int, sv: StepView) -> StepView:
    """The class's controls for the lesson at ``step``: "Start a class", or the class bar
    (how to join, the live count, the class's answers) with the class moved to this step.
    Returns the step as the lesson should draw it (a number to guess hides the answer)."""
    held = teaching()
    _cookies(held)
    if message := st.session_state.pop(MESSAGE, None):
        st.warning(message, icon=":material/groups:")
    if held is None:
        top.row.button(_("Start a class"), key="class_start", icon=":material/groups:",
                       on_click=_start, args=(pinned(ls),),
                       help=_("Students answer each question on their phones at /join; the "
                              "projector shows their answers beside the model's."))
        return sv
    code, token = held
    store = class_store()
    try:
        info = store.check_teacher(code, token)
        if info.ended:
            _ended(code, token)
            return sv
        # The question's texts (and the step's title) are stored as they read now, in the
        # teacher's language: the students' pages show them as the teacher asked them.
        snap = class_question(ls, step, sv, bool(st.session_state.get(f"class_number_{step}")))
        info = store.open_step(code, token, step, snap, pinned(ls), title(step))
        shown = sv.question is not None and view.revealed(ls, step, sv.question)[0]
        if snap is not None and snap.kind == "choice" and shown and not info.revealed:
            info = store.reveal(code, token)  # the lesson's own Reveal (or R) reveals it
    except ClassError as e:
        st.warning(_("Class {code}: {error}").format(code=code, error=e),
                   icon=":material/groups:")
        st.button(_("Leave this class"), key="class_leave", on_click=_forget)
        return sv
    _bar(info, token, snap, step)
    if snap is not None and snap.kind == "number":
        sv = replace(sv, question=None)
        if not info.revealed:
            sv = replace(sv, narrative=_(HIDDEN_UNTIL_REVEAL), figures=[], figure_widths=[],
                         formulas=[], caption="")
    elif snap is not None and info.revealed and not shown:
        sv = replace(sv, question=None)  # revealed to the class before this tab was reloaded
    return sv


def _bar(info: ClassInfo, token: str, snap: Snapshot | None, step: int) -> None:
    """The class bar above the step: how to join, the count or the answers, the controls."""
    st.html(projector.CSS)
    show = st.session_state.get("class_show_join", True)
    with st.container(border=True, key="class_bar"):
        join, middle, controls = st.columns([2.0, 2.6, 1.4] if show else [0.9, 3.7, 1.4],
                                            gap="medium", vertical_alignment="center")
        with join:
            if show:
                projector.join_card(info.code)
            else:
                st.html(f'<div class="gv-class-code" data-code="{info.code}">{info.code}</div>')
        with middle:
            if snap is not None and snap.kind == "number":
                st.markdown(_("**The class guesses:** {question}").format(question=snap.text))
            if snap is not None and info.revealed:
                projector.revealed_answers(info.code, info.question)
            else:
                projector.live_count(info.code, info.question)
        with controls, st.container(horizontal=True, gap="small"):
            _controls(info, token, snap, step)


def _controls(info: ClassInfo, token: str, snap: Snapshot | None, step: int) -> None:
    if step in NUMBERS and not info.revealed:
        st.toggle(_("Ask for a number"), key=f"class_number_{step}",
                  help=_("Students guess a number instead of choosing; the projector then "
                         "shows the spread of their guesses beside the model's value."))
    if snap is not None and snap.kind == "number" and not info.revealed:
        st.button(_("Reveal the answer"), key=REVEAL, icon=":material/visibility:",
                  type="primary", on_click=_act, args=("reveal",), help=_("Or press R."))
    with st.popover(_("Join"), icon=":material/qr_code_2:", help=_("The QR code, larger")):
        st.toggle(_("Show how to join in the bar"), value=True, key="class_show_join")
        projector.join_card(info.code, big=True)
    people = class_store().students(info.code, token)
    with st.popover(_("Students ({n})").format(n=len(people)), icon=":material/group:"):
        st.caption(_("Nicknames are shown to you only; hide one and it is hidden everywhere."))
        for k, s in enumerate(people, start=1):
            key = f"class_hide_{s.id}"
            st.checkbox(_("Hide “{name}”").format(name=md(s.nickname)) if s.nickname else
                        _("student {k}").format(k=k),
                        value=s.hidden, key=key, on_change=_hide, args=(s.id, key),
                        disabled=not s.nickname)
    query = urlencode({k: v for k, v in st.query_params.to_dict().items()})
    origin = (browser_origin() or "").rstrip("/")
    st.download_button(_("Teacher link"), key="class_link", icon=":material/key:",
                       data=f"{origin}/lesson?{query}#teacher={info.code}.{token}\n",
                       file_name=f"gptviz-class-{info.code}-teacher-link.txt",
                       mime="text/plain", on_click="ignore",
                       help=_("Save a private link that gives this class's controls back in "
                              "another browser. Keep it to yourself: it is never shown on "
                              "screen."))
    with st.popover(_("End"), icon=":material/stop_circle:", help=_("End the class")):
        st.markdown(_("Answers close and the projector shows the class's results."))
        st.button(_("End the class now"), key="class_end", type="primary", on_click=_act,
                  args=("end",))


def browser_origin() -> str | None:
    """The address the teacher's browser uses for this app (scheme, host, port, path)."""
    try:
        url = st.context.url
    except Exception:  # no browser (a bare script run)
        return None
    return url.split("?")[0].rsplit("/lesson", 1)[0] if isinstance(url, str) else None


def _ended(code: str, token: str) -> None:
    with st.container(border=True, key="class_bar"):
        st.subheader(_("Class {code} has ended: its results").format(code=code), anchor=False)
        per = st.toggle(_("Per student (nicknames only)"), key="class_per_student")
        projector.results_tables(class_store().results(code, token, per_student=per), code)
        st.button(_("Close the results"), key="class_close", on_click=_forget)
