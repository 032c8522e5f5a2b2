"""A class session in AppTest: the teacher's controls in the Lesson (start, follow the
steps, reveal, a number to guess, end and results) and the students' Join page (a code,
a nickname, an answer, the reveal), on a store in a temporary data folder."""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pytest
import torch

from gptviz.app.classroom.figures import MODEL
from gptviz.app.classroom.shared import class_store
from gptviz.checkpoints.folder import bundled_models, load_checkpoint
from gptviz.classroom import codes
from gptviz.classroom.records import Pinned, Snapshot
from tests.helpers import MODELS, app_test, array_of, downloads, figures, rerun, tables

LESSON = "app_pages/lesson.py"
ONES = Snapshot(3, "Ids → one-hot rows", "How many **ones**?", "choice", ("4", "5", "100"), 1,
                why="Five ones, one per row.", key="ones")
GUESS = Snapshot(11, "Logits", "P of the top token, in %?", "number", value=41.5, low=0,
                 high=100, unit="%", why="It is 41.5 %.", key="top")


@pytest.fixture(autouse=True)
def data_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("GPTVIZ_DATA", str(tmp_path))
    monkeypatch.delenv("GPTVIZ_STORE", raising=False)
    yield
    class_store().close()


def everything(at) -> str:
    """All the text the page holds, visible or not (HTML, Markdown, captions, widgets)."""
    return "\n".join(str(getattr(e, "value", "")) + str(getattr(e, "label", "")) + repr(
        getattr(e, "proto", "")) for e in at._tree if e.type != "bidi_component")


def class_figure(at) -> dict:
    """The class's answers, as the projector draws them (the one plotly chart keyed so)."""
    (found,) = [json.loads(e.proto.spec) for e in at._tree
                if e.type == "plotly_chart" and "class-answers" in e.proto.id]
    return found


# ---- the students' page ------------------------------------------------------------------

def a_class(snapshot: Snapshot = ONES) -> tuple[str, str]:
    info, token = class_store().create(Pinned("m", "p", {"steps": 14}), "teacher")
    class_store().open_step(info.code, token, snapshot.step, snapshot)
    return info.code, token


def joined(code: str, nickname: str = ""):
    at = rerun(app_test("join", code=code.lower()))
    assert at.text_input(key="class_code_typed").value == code.lower()  # from the QR's link
    at.text_input(key="class_nickname").input(nickname)
    at.button(key="class_join").click()
    return rerun(at)


def test_a_student_joins_from_the_link_answers_and_changes_their_answer():
    code, token = a_class()
    at = joined(code, "Ada")
    assert [r.options for r in at.radio] == [["4", "5", "100"]] and not at.error
    assert "Ids → one-hot rows" in [h.value for h in at.subheader]
    at.radio[0].set_value(0)
    at.button(key="class_send_1").click()
    rerun(at)
    at.radio[0].set_value(1)
    at.button(key="class_send_1").click()
    rerun(at)
    assert "Sent: **5**" in at.success[0].value
    t = class_store().tally(code, 1)
    assert (t.joined, t.answered, t.counts) == (1, 1, (0, 1, 0))
    assert [s.nickname for s in class_store().students(code, token)] == ["Ada"]
    class_store().reveal(code, token)
    rerun(at)
    assert at.success[0].value == "Your answer, **5**, is the model's."
    assert at.caption[-1].value == "Five ones, one per row." and not at.radio  # closed


def test_a_wrong_answer_is_shown_beside_the_models_and_no_other_students():
    code, token = a_class()
    other = joined(code, "Bo")
    other.radio[0].set_value(2)
    other.button(key="class_send_1").click()
    rerun(other)
    at = joined(code)
    at.radio[0].set_value(0)
    at.button(key="class_send_1").click()
    rerun(at)
    class_store().reveal(code, token)
    rerun(at)
    assert at.error[0].value == "You said **4**; the model's answer is **5**."
    shown = everything(at)
    assert "100" not in shown.replace("How many", "") and "Bo" not in shown  # nobody else's
    assert not figures(at)  # no histogram of the class on a phone


def test_a_number_is_guessed_in_a_number_box():
    code, _ = a_class(GUESS)
    at = joined(code)
    (box,) = at.number_input
    assert box.label == "Your guess (%)" and box.value is None
    at.button(key="class_send_1").click()
    rerun(at)
    assert at.error[0].value == "Type a number first."
    at.number_input[0].set_value(37.5)
    at.button(key="class_send_1").click()
    rerun(at)
    assert class_store().tally(code, 1).values == (37.5,) and "37.5 %" in at.success[0].value


def test_wrong_codes_get_a_message_and_repeated_ones_are_slowed():
    code, _ = a_class()
    at = rerun(app_test("join", code="ZZZZZZ"))
    at.button(key="class_join").click()
    rerun(at)
    assert "No class has the code “ZZZZZZ”" in at.error[0].value
    assert at.text_input(key="class_nickname").max_chars == 24  # longer is cut, then checked
    at.text_input(key="class_code_typed").input("not a code at all")
    at.button(key="class_join").click()
    rerun(at)
    assert "No class has the code “not a code a" in at.error[0].value
    assert class_store().joined(code) == 0
    for _ in range(4):  # with the two above: five wrong codes, then this device waits
        at.text_input(key="class_code_typed").input("ACDEFG")
        at.button(key="class_join").click()
        rerun(at)
    assert "Too many wrong codes from this device: wait" in at.error[0].value
    at.text_input(key="class_code_typed").input(code)  # even the right code waits now
    at.button(key="class_join").click()
    rerun(at)
    assert "Too many wrong codes" in at.error[0].value and class_store().joined(code) == 0


def test_the_page_follows_the_teacher_and_says_when_the_class_ended():
    code, token = a_class()
    at = joined(code)
    class_store().open_step(code, token, 4, None, title="One-hot rows → embedding rows")
    rerun(at)
    assert at.subheader[0].value == "One-hot rows → embedding rows"
    assert "No question at this step" in at.info[0].value
    class_store().end(code, token)
    rerun(at)
    assert "ended the class" in at.success[0].value


# ---- the teacher's Lesson ----------------------------------------------------------------

def lesson(**query: str):
    at = app_test(model=MODELS[-1], **query)
    at.switch_page(LESSON)
    return rerun(at)


@pytest.mark.skipif(not MODELS, reason="no bundled models in assets/models")
def test_the_teacher_starts_drives_reveals_and_ends_a_class():
    at = lesson()
    at.button(key="class_start").click()
    rerun(at)
    code, token = at.session_state["class_teaching"]
    info = class_store().get(code)
    assert info.pinned.model == MODELS[-1] and info.pinned.prompt and info.step == 1
    page = everything(at)
    assert f'data-code="{code}"' in page and 'class="gv-qr" src="data:image/svg+xml' in page
    assert 'title="http://' in page and f'/join?code={code}"' in page  # the QR's link
    assert token not in page  # never shown, never in a link on the page
    students = [codes.new_student_id() for _ in range(3)]
    for s, nick in zip(students, ["Ada", "Bo", "<i>Cy</i>"], strict=True):
        class_store().join(code, s, nick, "phone")
    q = class_store().question(code, info.question)
    for s, choice in zip(students, [q.snapshot.answer, 0, q.snapshot.answer], strict=True):
        class_store().answer(code, s, q.id, choice, "phone")
    rerun(at)
    assert 'data-answered="3"' in everything(at)
    at.checkbox(key=f"class_hide_{students[2]}").check()  # the teacher hides a nickname
    rerun(at)
    assert [s.hidden for s in class_store().students(code, token)] == [False, False, True]
    at.button(key="lesson_reveal").click()  # the lesson's own Reveal reveals to the class
    rerun(at)
    assert class_store().get(code).phase == "revealed"
    bar = class_figure(at)["data"][0]
    assert list(array_of(bar["y"])) == list(class_store().tally(code, q.id).counts)
    assert bar["marker"]["color"][q.snapshot.answer] == MODEL  # the model's answer marked
    at.session_state["step"] = 2
    rerun(at)
    assert class_store().get(code).step == 2 and class_store().get(code).question is None
    at.button(key="class_end").click()
    rerun(at)
    assert class_store().get(code).phase == "ended"
    (summary,) = [t.value for t in tables(at) if "answered" in t.value.columns]
    assert summary["answered"].tolist() == ["3 of 3"]
    assert summary["the model's answer"].tolist() == [q.snapshot.model_text()]
    at.toggle(key="class_per_student").set_value(True)
    rerun(at)
    (per_student,) = [t.value for t in tables(at) if "student" in t.value.columns]
    assert per_student["student"].tolist() == ["Ada", "Bo", "student 3"]  # Cy's was hidden
    (csv,) = [d for d in downloads(at) if d.get("name") == f"gptviz-class-{code}-students.csv"]
    assert pd.read_csv(io.StringIO(csv["text"])).equals(per_student)  # the table, as a file
    assert token not in everything(at)


@pytest.mark.skipif(not MODELS, reason="no bundled models in assets/models")
def test_a_number_to_guess_hides_the_answer_and_shows_the_spread_on_the_reveal():
    at = lesson(step="11")
    at.button(key="class_start").click()
    rerun(at)
    code, token = at.session_state["class_teaching"]
    at.toggle(key="class_number_11").set_value(True)
    rerun(at)
    info = class_store().get(code)
    q = class_store().question(code, info.question)
    assert q.snapshot.kind == "number" and q.snapshot.unit == "%"
    logits = _logits(code)
    p = np.exp(logits - logits.max())
    assert q.snapshot.value == pytest.approx(100 * p.max() / p.sum(), abs=0.006)
    assert not figures(at) and not at.latex  # the answer waits for the reveal, text too
    assert "Guess first" in at.markdown[-1].value or any("Guess first" in m.value
                                                          for m in at.markdown)
    guesses = [10.0, 20.0, 20.0, 90.0]
    for g in guesses:
        s = codes.new_student_id()
        class_store().join(code, s, None, "phone")
        class_store().answer(code, s, q.id, g, "phone")
    at.button(key="lesson_reveal").click()  # R reveals the number too
    rerun(at)
    assert class_store().get(code).phase == "revealed" and at.latex
    fig = class_figure(at)
    assert int(sum(array_of(fig["data"][0]["y"]))) == len(guesses)
    lines = [s["x0"] for s in fig["layout"]["shapes"] if s["type"] == "line"]
    assert q.snapshot.value in lines and 20.0 in lines  # the model's value, the class median
    assert "class median 20" in json.dumps(fig["layout"]["title"])


def _logits(code: str) -> np.ndarray:
    """The model's last logits for the class's pinned model and prompt, recomputed."""
    pin = class_store().get(code).pinned
    ckpt = load_checkpoint(bundled_models()[pin.model])
    ids = ckpt.tokenizer.encode(pin.prompt)[-ckpt.config.context_length:]
    with torch.no_grad():
        return ckpt.model(ids)[0, -1].double().numpy()  # (|V|,)
