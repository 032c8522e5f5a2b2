"""The Lesson and the class in the reader's language (issues 41 and 42): the steps, their
questions and numbers in Spanish and Chinese, figures cached per language, the handout in
the language asked for, the class's language (the teacher's) on the students' Join page
unless a student picks another, and the results' CSV kept in its machine format."""

from __future__ import annotations

import numpy as np
import pytest

from gptviz import i18n
from gptviz.app.classroom.shared import class_store
from gptviz.app.lesson import questions as q
from gptviz.app.lesson.handout import lesson_handout
from gptviz.app.lesson.steps import build_step
from gptviz.app.shared import language
from gptviz.classroom import codes
from gptviz.classroom.records import Pinned, Snapshot
from tests.helpers import MODELS, ChoiceBox, app_test, downloads, figures, rerun, tables
from tests.test_app_classroom import data_folder  # noqa: F401 - the class store in tmp
from tests.test_app_lesson import _lesson, _tiny

LESSON = "app_pages/lesson.py"


def lesson(**query: str):
    at = app_test(model=MODELS[-1], **query)
    at.switch_page(LESSON)
    return rerun(at)


# ---- the lesson's texts --------------------------------------------------------------------

def test_questions_write_numbers_and_choices_as_the_language_does():
    with i18n.use("es"):
        ln = q.layernorm_variance(0.99999, 4.2, 128)
        ones = q.one_hot_ones(3, 23_552, 2)
    assert "(σ² = 4,200 antes)" in ln.text and "0,999990" in ln.why
    assert ln.choices == ("cerca de 0", "cerca de 1", "cerca de d = 128",
                          "la que tenía antes, 4,200")
    assert ln.choices[ln.answer] == "cerca de 1"
    assert ones.choices == ("2", "3", "23.552", "70.656") and "(23.552)" in ones.text
    with i18n.use("zh"):
        ffn = q.ffn_norm(2.0, 3.5, 0, "a")
        flat = q.flatter(0.2, 0.5, 2.0, 3.1)
    assert ffn.choices == ("变长", "变短") and "‖y‖ = 2.000" in ffn.why
    assert flat.choices == ("T = 0.2", "T = 2") and "H(P_2) = 3.100 nats" in flat.why


def test_counts_take_the_languages_plural_forms():
    one, two = _lesson(_tiny(), "abcab|abcab"), _lesson(_tiny(n_layer=2), "abcab|abcab")
    with i18n.use("es"):
        assert "una pila de 1 bloque idéntico;" in build_step(one, 6).narrative
        assert "una pila de 2 bloques idénticos;" in build_step(two, 6).narrative
    with i18n.use("zh"):
        assert "GPT 是 2 个相同的块叠成的" in build_step(two, 6).narrative


@pytest.mark.skipif(not MODELS, reason="no bundled models in assets/models")
@pytest.mark.parametrize(("lang", "title", "step", "said"), [
    ("es", "Lección: un prompt a través de un GPT", "Paso 1 de 14 · Texto → tokens",
     "Un GPT nunca lee letras."),
    ("zh", "课程：一个提示词走过 GPT", "第 1 步，共 14 步 · 文本 → token", "GPT 从不读字母。")])
def test_the_lesson_page_speaks_the_sessions_language(lang, title, step, said):
    at = lesson(lang=lang)
    assert at.title[0].value == title and step in [h.value for h in at.subheader]
    at.button(key="lesson_reveal").click()
    rerun(at)
    assert any(said in m.value for m in at.markdown)
    at.session_state["step"] = 14
    rerun(at)
    assert at.button(key="lesson_next").label == {"es": "Siguiente", "zh": "下一步"}[lang]


@pytest.mark.skipif(not MODELS, reason="no bundled models in assets/models")
def test_an_answer_revealed_in_one_language_stays_revealed_in_another():
    at = lesson(lang="es")
    (radio,) = at.radio
    spanish = radio.options
    radio.set_value(spanish[-1])
    at.button(key="lesson_reveal").click()
    rerun(at)
    verdict = [e.type for e in at._tree if e.type in ("success", "error")]
    ChoiceBox(at, language.PICKED + "@box").set_value(2)  # the sidebar's picker: Chinese
    rerun(at)
    assert at.session_state[language.KEY] == "zh" and not at.radio  # still revealed
    assert [e.type for e in at._tree if e.type in ("success", "error")] == verdict
    said = (at.success or at.error)[0].value
    assert "模型的答案" in said or "与模型的一致" in said  # said again, in Chinese


@pytest.mark.skipif(not MODELS, reason="no bundled models in assets/models")
def test_a_cached_figure_is_drawn_again_in_another_language():
    titles = {}
    for lang in ("en", "zh", "en"):  # one server cache, three sessions in turn
        at = lesson(lang=lang, step="10")
        (chain,) = [f for f in figures(at) if f["data"][0].get("name") == "‖x‖"]
        titles.setdefault(lang, set()).add(chain["layout"]["title"]["text"])
    assert len(titles["en"]) == 1 and next(iter(titles["en"])).startswith("‖x‖ of the token")
    assert next(iter(titles["zh"])).endswith("沿残差流的 ‖x‖")


def test_the_handout_is_written_in_the_language_asked_for():
    ls = _lesson(_tiny(n_layer=2), "abcab|abcab")
    page = lesson_handout(ls, "es")  # as the download's thread builds it: no session
    assert '<html lang="es">' in page and "<h1>Un GPT, paso a paso" in page
    assert "<h2>Paso 1 · Texto → tokens</h2>" in page and "Predice:" in page
    assert '<html lang="en">' in lesson_handout(ls)  # outside a session: the source's


# ---- the class's language --------------------------------------------------------------------

ONES = Snapshot(3, "Ids → filas one-hot", "¿Cuántos **unos**?", "choice", ("4", "5"), 1,
                why="Cinco.", key="ones")


def a_class(lang: str) -> tuple[str, str]:
    info, token = class_store().create(Pinned("m", "p", {"steps": 14}, lang), "teacher")
    class_store().open_step(info.code, token, ONES.step, ONES, title=ONES.title)
    return info.code, token


def join(code: str):
    at = rerun(app_test("join", code=code))
    at.button(key="class_join").click()
    return rerun(at)


def test_a_student_reads_the_class_in_its_language_unless_they_pick_another():
    code, token = a_class("zh")
    at = join(code)
    assert at.button(key="class_send_1").label == "发送"  # the class's language, not the browser's
    assert at.subheader[0].value == "Ids → filas one-hot"  # the question as the teacher asked it
    assert at.session_state[language.KEY] == "zh"
    box = ChoiceBox(at, "class_lang@box")  # the page's own picker (phones hide the sidebar)
    assert box.options == ["English", "Español", "中文"] and box.value == 2
    box.set_value(0)
    rerun(at)
    assert at.button(key="class_send_1").label == "Send"
    class_store().open_step(code, token, 4, None, title="Filas one-hot → filas de embedding")
    rerun(at)  # the teacher moves on: the student's pick stays
    assert "No question at this step: watch the projector." in [i.value for i in at.info]


def test_a_student_who_picked_before_joining_keeps_their_language():
    code, _ = a_class("es")
    at = rerun(app_test("join", code=code))
    assert at.title[0].value == "Join the class"
    ChoiceBox(at, "class_lang@box").set_value(2)
    rerun(at)
    assert at.title[0].value == "加入课堂"
    at.button(key="class_join").click()
    rerun(at)
    assert at.button(key="class_send_1").label == "发送"


@pytest.mark.skipif(not MODELS, reason="no bundled models in assets/models")
def test_the_class_takes_the_teachers_language_and_its_csv_stays_english():
    at = lesson(lang="es")
    at.button(key="class_start").click()
    rerun(at)
    code, token = at.session_state["class_teaching"]
    info = class_store().get(code)
    assert info.pinned.lang == "es" and info.title == "Texto → tokens"
    question = class_store().question(code, info.question).snapshot
    assert question.text.startswith("¿Cuántos tokens hace el tokenizador")
    s = codes.new_student_id()
    class_store().join(code, s, None, "phone")
    class_store().answer(code, s, info.question, question.answer, "phone")
    at.button(key="class_end").click()
    rerun(at)
    (shown,) = [t.value for t in tables(at) if "respondieron" in t.value.columns]
    assert list(shown.columns) == ["paso", "pregunta", "la respuesta del modelo",
                                   "respondieron", "la clase"]
    assert shown["respondieron"].tolist() == ["1 de 1"]
    (csv,) = [d["text"] for d in downloads(at) if d.get("name", "").endswith(".csv")]
    lines = csv.splitlines()
    assert lines[0] == "step,question,the model's answer,answered,the class"
    assert lines[1].endswith(",1 of 1,1 of 1 chose it")
    assert np.isfinite(float(lines[1].split(",")[0]))
