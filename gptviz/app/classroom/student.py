"""The students' Join page, made for a phone: type the code (or arrive from the QR code's
link), an optional nickname, then the teacher's current step and its question, "Send",
and after the reveal their answer beside the model's. The page follows the teacher's step: a
timer asks the store every ``FOLLOW_S`` seconds whether anything changed, and only then is
the page drawn again. It never shows another student's answer.

The page speaks the class's language (the teacher's, ``Pinned.lang``) unless the student
picks another with the page's own language picker (phones hide the sidebar's); the
question itself is shown as the teacher's lesson wrote it.
"""

from __future__ import annotations

import streamlit as st

from gptviz import i18n
from gptviz.app.classroom import browser
from gptviz.app.classroom.shared import FOLLOW_S, class_store, client
from gptviz.app.lesson.questions import md
from gptviz.app.shared import language
from gptviz.app.speedups import choice
from gptviz.classroom.codes import normalize_code
from gptviz.classroom.errors import ClassError, NotFound
from gptviz.classroom.inputs import NICKNAME_CHARS
from gptviz.classroom.records import Question
from gptviz.i18n import _

JOINED = "class_joined"  # st.session_state: the code this session joined
NOTE = "class_note"  # st.session_state: what the last Send said, by question
LANG = "class_lang"  # the page's language picker (its widget key)
OWN_LANG = "class_lang_own"  # st.session_state: the student picked the page's language
APPLIED = "class_lang_applied"  # st.session_state: the class's language last applied
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
    if code is not None:
        _class_language(code)
    _language_picker()
    if code is None:
        _form(raw, sid)
    else:
        _watch(code, _show(code, sid))


def _set_language(lang: str) -> None:
    st.session_state[language.KEY] = lang
    language._write_link(lang)  # the link's ?lang= too, as the sidebar's picker does


def _class_language(code: str) -> None:
    """The page in the class's language, unless the student picked one (here, or in the
    sidebar since the class's was applied)."""
    state = st.session_state
    applied = state.get(APPLIED)
    if applied is not None and state.get(language.KEY) != applied:
        state[OWN_LANG] = True  # changed by the student after the class's was applied
    if state.get(OWN_LANG):
        return
    try:
        lang = i18n.known(class_store().get(code).pinned.lang)
    except ClassError:
        return  # the page says what became of the class
    if lang:
        state[APPLIED] = lang
        if state.get(language.KEY) != lang:
            _set_language(lang)
            state[LANG] = lang  # the page's picker shows it (it is drawn after this)


def _language_picker() -> None:
    """A language picker on the page itself (a phone hides the sidebar's): a pick is the
    student's own, kept over the class's, and reruns the page in it."""
    langs, now = i18n.available(), i18n.current()
    if st.session_state.get(LANG) not in langs:
        st.session_state[LANG] = now if now in langs else i18n.SOURCE
    with st.container(horizontal=True, horizontal_alignment="right", key="class_lang_row"):
        picked = choice.select(_("Language"), langs, key=LANG, format_func=language.name)
    if picked != now:
        st.session_state[OWN_LANG] = True
        _set_language(picked)
        st.rerun()


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
    st.title(_("Join the class"), anchor=False)
    if "class_code_typed" not in st.session_state and raw:
        st.session_state["class_code_typed"] = str(raw)[:64]
    st.text_input(_("The code on the projector"), key="class_code_typed", max_chars=64,
                  placeholder=_("e.g. {code}").format(code="ACD3FG"))
    st.text_input(_("A nickname (optional)"), key="class_nickname", max_chars=NICKNAME_CHARS,
                  placeholder=_("none"), help=_("Shown only if your teacher lists the answers "
                                                "by nickname. No real name needed."))
    st.button(_("Join"), key="class_join", type="primary", width="stretch", on_click=_join,
              args=(sid,), icon=":material/login:")
    kind, text = st.session_state.pop(NOTE, (None, None))
    if kind == "error":
        st.error(text, icon=":material/error:")
    st.caption(_("You answer the teacher's questions from here. The projector shows the "
                 "class's answers counted together, never who chose what, unless your teacher "
                 "lists them by nickname (then without a nickname you are “student 3”)."))


def _send(code: str, sid: str, q: Question, key: str) -> None:
    value = st.session_state.get(key)
    notes = st.session_state.setdefault(NOTE + "s", {})
    if value is None:
        notes[q.id] = ("error", _("Choose an answer first.") if q.snapshot.kind == "choice"
                       else _("Type a number first."))
        return
    try:
        stored = class_store().answer(code, sid, q.id, value, client())
    except ClassError as e:
        notes[q.id] = ("error", str(e))
        return
    notes[q.id] = ("ok", _("Sent: **{answer}**. You can change it until the teacher reveals "
                           "the answer.").format(answer=md(q.snapshot.answer_text(stored))))


@st.fragment
def _show(code: str, sid: str) -> int | None:
    """The teacher's current step, its question and this student's answer; returns the
    class's version drawn (None when the class is gone). A fragment: choosing and sending
    redraw this part only."""
    try:
        return _class(code, sid)
    except NotFound:
        st.warning(_("Class {code} has ended or expired. Thank you for taking part!").format(
            code=code), icon=":material/event_busy:")
        if st.button(_("Join another class"), key="class_again"):
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
    st.caption((_("Class {code} · step {step} of {steps}") if steps else
                _("Class {code} · step {step}")).format(code=code, step=info.step, steps=steps))
    st.subheader(info.title or _("Step {step}").format(step=info.step), anchor=False)
    if info.ended:
        st.success(_("The teacher has ended the class. Thank you for taking part!"),
                   icon=":material/celebration:")
    elif info.question is None:
        st.info(_("No question at this step: watch the projector."), icon=":material/tv:")
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
            st.radio(_("Your answer"), list(range(len(s.choices))), key=key,
                     index=None if mine is None else int(mine),
                     format_func=lambda i: md(s.choices[i]), label_visibility="collapsed")
        else:
            whole = s.value is not None and float(s.value).is_integer() and s.high > 1000
            st.number_input(_("Your guess ({unit})").format(unit=s.unit) if s.unit else
                            _("Your guess"), key=key,
                            min_value=int(s.low) if whole else s.low,
                            max_value=int(s.high) if whole else s.high,
                            value=None if mine is None else (int(mine) if whole else mine),
                            step=1 if whole else 0.1, placeholder=_("a number"))
        st.button(_("Send"), key=f"class_send_{q.id}", type="primary", width="stretch",
                  icon=":material/send:", on_click=_send, args=(code, sid, q, key))
    kind, text = st.session_state.get(NOTE + "s", {}).get(q.id, (None, None))
    if kind == "error":
        st.error(text, icon=":material/error:")
    elif mine is not None:
        st.success(text or _("Sent: **{answer}**.").format(answer=md(s.answer_text(mine))),
                   icon=":material/check:")


def _outcome(q: Question, mine: float | None) -> None:
    """Their answer beside the model's, and the short why."""
    s = q.snapshot
    model = md(s.model_text())
    st.markdown(s.text)
    if mine is None:
        st.info(_("You did not answer. The model's answer: **{model}**.").format(model=model),
                icon=":material/visibility:")
    elif s.kind == "number":
        st.info(_("Your guess: **{guess}** · the model's: **{model}**.").format(
            guess=md(s.answer_text(mine)), model=model), icon=":material/straighten:")
    elif s.right(mine):
        st.success(_("Your answer, **{model}**, is the model's.").format(model=model),
                   icon=":material/check_circle:")
    else:
        st.error(_("You said **{answer}**; the model's answer is **{model}**.").format(
            answer=md(s.answer_text(mine)), model=model), icon=":material/cancel:")
    st.caption(s.why)
