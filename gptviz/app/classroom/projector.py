"""What the projector shows of a class: how to join (code, address, QR code), how many have
answered (live), the class's answers beside the model's once revealed, and at the end the
results per question (per student only when the teacher asks, by nickname)."""

from __future__ import annotations

import html
from collections.abc import Callable

import pandas as pd
import streamlit as st

from gptviz.app.classroom.address import SOURCES, join_address, qr_image
from gptviz.app.classroom.figures import answers_figure, spread
from gptviz.app.classroom.shared import POLL_S, class_store
from gptviz.app.lesson.view import plain
from gptviz.app.shared.widgets import csv_download, plain_table, plot
from gptviz.classroom.errors import ClassError
from gptviz.classroom.records import Results, Tally, number_text
from gptviz.i18n import N_, _

# The results' texts, marked here: shown translated, written to the CSV in English (a CSV
# keeps its machine format).
COLUMNS = (N_("step"), N_("question"), N_("the model's answer"), N_("answered"),
           N_("the class"))
ANSWERED, CHOSE = N_("{answered} of {joined}"), N_("{right} of {answered} chose it")
NO_ANSWERS, NO_GUESSES = N_("no answers"), N_("no guesses")
MEDIAN = N_("median {median} (middle half {q1} – {q3})")
STUDENT, QUESTION_COLUMN = N_("student"), N_("step {step} (q{id})")

QR_PX, BIG_QR_PX = 150, 420
CSS = """<style>
.st-key-class_bar{gap:.4rem;padding:.6rem .8rem}
.gv-join{display:flex;gap:.9rem;align-items:center}
.gv-join-big{flex-direction:column}
.gv-class-code{font-size:2.1rem;font-weight:700;letter-spacing:.18em;line-height:1.1}
.gv-join-big .gv-class-code{font-size:3.2rem}
.gv-class-how{font-size:.85rem;opacity:.7;line-height:1.3;margin-top:.2rem}
.gv-class-count{font-size:2.4rem;font-weight:700;line-height:1.1}
.gv-class-count small{font-size:1.1rem;font-weight:400;opacity:.75}
.gv-class-url{font-size:.95rem;overflow-wrap:anywhere}
</style>"""


def join_card(code: str, big: bool = False) -> None:
    """The QR code of the students' link beside the code and the address (and where the
    address came from, so the teacher can check it)."""
    where = join_address(code)
    qr = qr_image(where.url, BIG_QR_PX if big else QR_PX) if where.url else ""
    said = _("Scan the code, or open this address and type the code. The address is "
             "{source}.").format(source=_(SOURCES[where.source]))
    how = (f'<div class="gv-class-url">{html.escape(where.base)}/join</div>'
           f'<div class="gv-class-how">{html.escape(said)}</div>') if where.url else ""
    st.html(f'<div class="gv-join{" gv-join-big" if big else ""}">{qr}<div>'
            f'<div class="gv-class-code" data-code="{code}">{code}</div>{how}</div></div>')
    if where.warning:
        st.warning(where.warning, icon=":material/wifi_off:")


@st.fragment(run_every=POLL_S)
def live_count(code: str, question: int | None) -> None:
    """How many have answered the current question (or joined, at a step without one),
    asked of the store every ``POLL_S`` seconds."""
    store = class_store()
    try:
        if question is None:
            joined = store.joined(code)
            small = html.escape(_("joined · no question at this step"))
            st.html(f'<div class="gv-class-count" data-answered="" data-joined="{joined}">'
                    f"{joined} <small>{small}</small></div>")
            return
        t = store.tally(code, question)
    except ClassError as e:
        st.warning(str(e), icon=":material/error:")
        return
    small = html.escape(_("of {joined} answered").format(joined=t.joined))
    st.html(f'<div class="gv-class-count" data-answered="{t.answered}" '
            f'data-joined="{t.joined}">{t.answered} <small>{small}</small></div>')
    st.progress(t.answered / t.joined if t.joined else 0.0)


def revealed_answers(code: str, question: int) -> None:
    """The class's answers beside the model's (answers are closed: drawn once)."""
    try:
        t = class_store().tally(code, question)
    except ClassError as e:
        st.warning(str(e), icon=":material/error:")
        return
    plot(answers_figure(t), key=f"class-answers-{question}")


def _summary(t: Tally, tr: Callable[[str], str] = _) -> str:
    s = t.question.snapshot
    if s.kind == "choice":
        return tr(CHOSE).format(right=t.right, answered=t.answered) if t.answered else \
            tr(NO_ANSWERS)
    if not t.values:
        return tr(NO_GUESSES)
    median, q1, q3 = spread(t.values)
    return tr(MEDIAN).format(median=number_text(median, s.unit), q1=number_text(q1),
                             q3=number_text(q3, s.unit))


def per_question(r: Results, tr: Callable[[str], str] = _) -> pd.DataFrame:
    """The results, a row per question: in the reader's language (``tr`` = ``_``), or in
    English for the CSV (``tr`` = ``str``). The questions are as the teacher asked them."""
    return pd.DataFrame(dict(zip(map(tr, COLUMNS), [
        [t.question.snapshot.step for t in r.tallies],
        [plain(t.question.snapshot.text) for t in r.tallies],
        [t.question.snapshot.model_text() for t in r.tallies],
        [tr(ANSWERED).format(answered=t.answered, joined=t.joined) for t in r.tallies],
        [_summary(t, tr) for t in r.tallies]], strict=True)))


def results_tables(r: Results, code: str) -> None:
    """One row per question; then, if asked for, one row per student (nicknames only)."""
    if not r.tallies:
        st.info(_("The class answered no question."), icon=":material/info:")
        return
    plain_table(per_question(r))
    csv_download(per_question(r, str), f"gptviz-class-{code}.csv",
                 _("Download the results (CSV)"))
    if r.students:
        plain_table(per_student(r), height=420)
        csv_download(per_student(r, str), f"gptviz-class-{code}-students.csv",
                     _("Download each student's answers (CSV)"))


def per_student(r: Results, tr: Callable[[str], str] = _) -> pd.DataFrame:
    """One row per student (nickname), one column per question: the answer, ✓ or ✗. Headers
    in the reader's language, or English for the CSV (``tr`` = ``str``)."""
    rows = []
    for name, answers in r.students:
        row = {tr(STUDENT): name}
        for t in r.tallies:
            s, v = t.question.snapshot, answers.get(t.question.id)
            mark = {True: " ✓", False: " ✗", None: ""}[s.right(v)]
            row[tr(QUESTION_COLUMN).format(step=s.step, id=t.question.id)] = (
                "—" if v is None else s.answer_text(v) + mark)
        rows.append(row)
    return pd.DataFrame(rows)
