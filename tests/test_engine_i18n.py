"""The engine's messages a reader meets (a class's refusals, a model's settings, a refused
corpus) come in the reader's language, looked up when raised; the English stays as it was."""

from __future__ import annotations

import pytest

from gptviz import i18n
from gptviz.classroom import codes
from gptviz.classroom.errors import BadInput, NotFound, RateLimited, wait_text
from gptviz.classroom.inputs import parse_number
from gptviz.classroom.records import Pinned, number_text
from gptviz.classroom.sqlite import SQLiteStore
from gptviz.classroom.store import Limits
from gptviz.data import CorpusError, decode_text
from gptviz.model.config import GPTConfig

PIN = Pinned("mathematics-char", "two even numbers", {"layer": 0})


def message(call) -> str:
    with pytest.raises(Exception) as raised:
        call()
    return str(raised.value)


@pytest.fixture
def store(tmp_path):
    s = SQLiteStore(tmp_path / "classes.sqlite3", Limits(join_failures=1))
    yield s
    s.close()


def test_a_wrong_code_and_its_wait_in_each_language(store):
    student = codes.new_student_id()
    said = {}
    for lang in ("en", "es", "zh"):
        with i18n.use(lang):
            said[lang] = message(lambda lang=lang: store.join("ZZZZZZ", student, "", f"c-{lang}"))
    assert said["en"] == ("No class has the code “ZZZZZZ” now. Check it on the projector "
                          "(letters and digits, as shown), or ask your teacher.")
    assert said["es"].startswith("Ahora ninguna clase tiene el código «ZZZZZZ»")
    assert said["zh"].startswith("现在没有加入码为“ZZZZZZ”的课堂")
    with i18n.use("es"), pytest.raises(RateLimited) as again:
        store.join("ZZZZZZ", student, "", "c-es")
    assert str(again.value).startswith("Demasiados códigos erróneos desde este dispositivo")
    with pytest.raises(NotFound):  # the English store's own message is still English
        store.join("ZZZZZZ", student, "", "c-other")


def test_waits_and_numbers_follow_the_language():
    assert (wait_text(1), wait_text(61), number_text(1234.5, "%")) == (
        "1 second", "2 minutes", "1,234.5 %")
    with i18n.use("es"):
        assert (wait_text(1), wait_text(61), number_text(1234.5, "%"),
                number_text(0.0125)) == ("1 segundo", "2 minutos", "1234,5 %", "0,0125")
    with i18n.use("zh"):
        assert (wait_text(30), number_text(12345.0)) == ("30 秒", "12,345")


def test_bad_inputs_settings_and_corpora_in_spanish_and_chinese():
    with i18n.use("es"):
        assert message(lambda: parse_number("abc", 0, 1)) == (
            "«abc» no es un número: escribe cifras, como 42 o 0,5.")
        assert message(lambda: parse_number(2.5, 0, 1)) == (
            "2,5 está fuera de lo que admite esta pregunta: da un número de 0 a 1.")
        assert "d_model (10) debe ser divisible por n_head (3)" in message(
            lambda: GPTConfig(vocab_size=5, context_length=4, d_model=10, n_layer=1, n_head=3))
        assert message(lambda: decode_text(b"")) == (
            "el archivo subido está vacío: elige un archivo que tenga algo de texto.")
    with i18n.use("zh"):
        assert message(lambda: decode_text(b"a\x00b", "x.txt")) == (
            "x.txt 含有 NUL 字节，看起来是二进制文件：请上传纯文本。")
        with pytest.raises(BadInput) as bad:
            parse_number(None, 0, 1)
        assert str(bad.value) == "请先输入一个数字，例如 42 或 0.5。"
    assert message(lambda: decode_text(b"")) == (
        "the upload is empty: choose a file with some text in it.")
    with pytest.raises(CorpusError):
        decode_text(b"\xff\xfe\xfa")
