"""What the projector shows of a class: how to join (code, address, QR code), how many have
answered (live), the class's answers beside the model's once revealed, and at the end the
results per question (per student only when the teacher asks, by nickname)."""

from __future__ import annotations

import html

import pandas as pd
import streamlit as st

from gptviz.app.classroom.address import SOURCES, join_address, qr_image
from gptviz.app.classroom.figures import answers_figure, spread
from gptviz.app.classroom.shared import POLL_S, class_store
from gptviz.app.lesson.view import plain
from gptviz.app.shared.widgets import csv_download, plain_table, plot
from gptviz.classroom.errors import ClassError
from gptviz.classroom.records import Results, Tally, number_text

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
    how = (f'<div class="gv-class-url">{html.escape(where.base)}/join</div>'
           f'<div class="gv-class-how">Scan the code, or open this address and type the code. '
           f"The address is {SOURCES[where.source]}.</div>") if where.url else ""
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
            st.html(f'<div class="gv-class-count" data-answered="" data-joined="{joined}">'
                    f"{joined} <small>joined · no question at this step</small></div>")
            return
        t = store.tally(code, question)
    except ClassError as e:
        st.warning(str(e), icon=":material/error:")
        return
    st.html(f'<div class="gv-class-count" data-answered="{t.answered}" '
            f'data-joined="{t.joined}">{t.answered} <small>of {t.joined} answered</small></div>')
    st.progress(t.answered / t.joined if t.joined else 0.0)


def revealed_answers(code: str, question: int) -> None:
    """The class's answers beside the model's (answers are closed: drawn once)."""
    try:
        t = class_store().tally(code, question)
    except ClassError as e:
        st.warning(str(e), icon=":material/error:")
        return
    plot(answers_figure(t), key=f"class-answers-{question}")


def _summary(t: Tally) -> str:
    s = t.question.snapshot
    if s.kind == "choice":
        return f"{t.right} of {t.answered} chose it" if t.answered else "no answers"
    if not t.values:
        return "no guesses"
    median, q1, q3 = spread(t.values)
    return (f"median {number_text(median, s.unit)} (middle half {number_text(q1)} – "
            f"{number_text(q3, s.unit)})")


def results_tables(r: Results, code: str) -> None:
    """One row per question; then, if asked for, one row per student (nicknames only)."""
    if not r.tallies:
        st.info("The class answered no question.", icon=":material/info:")
        return
    per_question = pd.DataFrame({
        "step": [t.question.snapshot.step for t in r.tallies],
        "question": [plain(t.question.snapshot.text) for t in r.tallies],
        "the model's answer": [t.question.snapshot.model_text() for t in r.tallies],
        "answered": [f"{t.answered} of {t.joined}" for t in r.tallies],
        "the class": [_summary(t) for t in r.tallies]})
    plain_table(per_question)
    csv_download(per_question, f"gptviz-class-{code}.csv", "Download the results (CSV)")
    if r.students:
        rows = []
        for name, answers in r.students:
            row = {"student": name}
            for t in r.tallies:
                s, v = t.question.snapshot, answers.get(t.question.id)
                mark = {True: " ✓", False: " ✗", None: ""}[s.right(v)]
                row[f"step {s.step} (q{t.question.id})"] = "—" if v is None else \
                    s.answer_text(v) + mark
            rows.append(row)
        plain_table(pd.DataFrame(rows), height=420)
