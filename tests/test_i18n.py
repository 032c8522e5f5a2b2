"""The catalogs and the session's language (issue 41).

Catalog checks read every ``.po`` file through Babel and the source through
``pybabel extract``'s own machinery (``gptviz.i18n.source_messages``): every message the
source marks has a translation that is not fuzzy in every shipped language, keeps its
placeholders and its math, and the translated formulas still parse in KaTeX. Runtime checks
run the app: two sessions in two languages at once, the link's ``?lang=``, the browser's
language, a missing message, a language a teacher adds that is written right to left.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from babel.messages.pofile import read_po

from gptviz import i18n
from gptviz.app.shared import language
from tests.helpers import ChoiceBox, app_test, rerun, run_alone

SHIPPED = ("es", "zh")
PLACEHOLDER = re.compile(r"\{[A-Za-z_][A-Za-z0-9_]*(?:![rsa])?(?::[^{}]*)?\}|%\([a-z_]+\)[sd]")
MATH = re.compile(r"\$[^$]+\$")


def forms(value) -> tuple[str, ...]:
    return value if isinstance(value, tuple) else (value,)


def english(key) -> tuple[str, ...]:
    """The English of a catalog id: (message,) or (singular, plural), context dropped."""
    return tuple(k.split("\x04")[-1] for k in forms(key))


@pytest.fixture(scope="module")
def wanted():
    return i18n.source_messages()


@pytest.mark.parametrize("lang", SHIPPED)
def test_every_message_of_the_source_is_translated(lang, wanted):
    have = i18n.catalog_entries(lang)
    missing = {m: wanted[m][0] for m in wanted if m not in have}
    assert not missing, f"{len(missing)} messages without a translation in {lang}: " \
        f"{list(missing.items())[:10]} (python scripts/i18n_coverage.py --missing {lang})"


@pytest.mark.parametrize("lang", SHIPPED)
def test_no_fuzzy_or_empty_entry_ships(lang):
    for po in (i18n.LOCALE_DIR / lang / "LC_MESSAGES").glob("*.po"):
        with po.open("rb") as f:
            catalog = read_po(f, locale=lang)
        bad = [m.id for m in catalog if m.id and (m.fuzzy or not all(forms(m.string)))]
        assert not bad, f"{po.name}: fuzzy or empty {bad[:10]}"


@pytest.mark.parametrize("lang", SHIPPED)
def test_translations_keep_placeholders_and_math(lang):
    for po in (i18n.LOCALE_DIR / lang / "LC_MESSAGES").glob("*.po"):
        with po.open("rb") as f:
            catalog = read_po(f, locale=lang)
        for m in catalog:
            if not m.id:
                continue
            ids = forms(m.id)
            want = sorted(set(PLACEHOLDER.findall(ids[-1])) | set(PLACEHOLDER.findall(ids[0])))
            for text in forms(m.string):
                got = sorted(set(PLACEHOLDER.findall(text)))
                # a plural's one-form language may drop {n} ("一个"), never add or rename one
                assert set(got) <= set(want) and (len(forms(m.string)) == 1 and
                                                  len(ids) == 2 or got == want), \
                    f"{po.name}: {m.id!r} → {text!r}: placeholders {got} ≠ {want}"
                assert len(MATH.findall(text)) == len(MATH.findall(ids[0])), \
                    f"{po.name}: {m.id!r} → {text!r}: inline math $…$ changed"
                assert text.count("`") == ids[0].count("`"), f"{po.name}: {text!r}: code marks"


def test_spanish_has_its_plural_forms_and_chinese_one():
    with i18n.use("es"):
        es = i18n.translations("es")
    assert es.ngettext("x", "xs", 1) == "x"  # unknown: the English
    for lang, n in (("es", 3), ("zh", 1)):
        po = i18n.LOCALE_DIR / lang / "LC_MESSAGES" / "gptviz.po"
        with po.open("rb") as f:
            assert read_po(f, locale=lang).num_plurals == n


def _formulas(text: str) -> list[str]:
    """The TeX of a message: its inline math ``$…$``, or the whole message where it is a
    formula's fragment (a backslash command outside any ``$``), placeholders filled."""
    filled = PLACEHOLDER.sub("1", text)
    maths = [m[1:-1] for m in MATH.findall(filled)]
    if not maths and "\\" in filled:
        maths = [filled]
    return maths


def _katex_formulas(lang: str) -> list[tuple[str, str]]:
    """(English TeX, translated TeX) of every message set in KaTeX, pair by pair."""
    out = []
    for key, value in i18n.catalog_entries(lang).items():
        for source, text in zip(english(key), forms(value), strict=False):
            for pair in zip(_formulas(source), _formulas(text), strict=False):
                out.append(pair)
    return out


@pytest.mark.parametrize("lang", SHIPPED)
def test_translated_formulas_parse_in_katex(lang):
    from tests.test_tex import katex_errors

    pairs = _katex_formulas(lang)
    assert pairs, "no message holds a formula: the check would check nothing"
    broken_english = {f for f, _ in katex_errors([e for e, _ in pairs])}
    translated = [t for e, t in pairs if e not in broken_english]  # formulas in English
    errors = katex_errors(translated)
    assert not errors, errors[:5]


# ---- the session's language ---------------------------------------------------------------

def test_numbers_follow_the_language():
    with i18n.use("es"):
        assert i18n.number(0.25, 2) == "0,25" and i18n.separators() == (",", ".")
        assert i18n.number(12345.5, 1, grouping=True) == "12.345,5"
    with i18n.use("zh"):
        assert i18n.number(0.25, 2) == "0.25"
    assert i18n.number(0.25, 2) == "0.25"


def test_a_message_missing_from_a_catalog_is_the_english():
    with i18n.use("es"):
        assert i18n._("a sentence no catalog has") == "a sentence no catalog has"
        assert i18n._("Attention") == "Atención"
    with i18n.use("xx"):  # no such catalog
        assert i18n._("Attention") == "Attention"


def test_known_languages_from_links_and_browsers():
    assert i18n.known("es-MX") == "es" and i18n.known("zh-CN") == "zh"
    assert i18n.known("zh_Hans_CN") == "zh" and i18n.known("fr") is None
    assert i18n.known("../../etc") is None and i18n.known(None) is None
    assert i18n.available()[:1] == ["en"] and set(SHIPPED) <= set(i18n.available())


def test_the_browser_language_is_the_default(monkeypatch):
    class Context:
        locale = "es-AR"

    monkeypatch.setattr(language.st, "context", Context())
    assert language.browser_language() == "es"
    Context.locale = "fr-FR"
    assert language.browser_language() == "en"


BOX = language.PICKED + "@box"  # the picker's choice box (speedups/choice.py)


def picker(at) -> ChoiceBox:
    return ChoiceBox(at, BOX)


def titles(at) -> list[str]:
    """The picker's label: the one word every page shows in the session's language."""
    return [picker(at).data["label"]]


def labels(run) -> set[str]:
    """Labels of widgets and of the choice boxes (their data's "label")."""
    import json

    out = {str(e.label) for _, (_, e) in run.elements.items() if getattr(e, "label", "")}
    for _, (kind, e) in run.elements.items():
        if kind == "bidi_component" and getattr(e, "json", ""):
            data = json.loads(e.json)
            if isinstance(data, dict) and isinstance(data.get("label"), str):
                out.add(data["label"])
    return out


def test_two_sessions_in_two_languages_at_once():
    """Two browsers' sessions on one server, in es and zh, run their pages at the same
    moment (Streamlit's websocket protocol, as benchmarks/server/crowd.py speaks it): each
    sees only its own language, run after run."""
    import asyncio

    from benchmarks.common import Server
    from benchmarks.server.streamlit_client import ProtocolSession

    async def session(ws: str, lang: str) -> list[set[str]]:
        s = ProtocolSession(ws, timeout_s=120)
        await s.connect()
        try:
            seen = []
            for page in ("", "positional", ""):
                run = await s.open(page, f"lang={lang}")
                assert run.status == "ok" and not run.exceptions, (lang, page, run.status)
                seen.append(labels(run))
            return seen
        finally:
            await s.close()

    async def both(ws: str):
        return await asyncio.gather(session(ws, "es"), session(ws, "zh"))

    server = Server(log="i18n-two-sessions")
    try:
        es, zh = run_alone(both(server.ws))
    finally:
        server.stop()
    for runs, own, other in ((es, "Idioma", "语言"), (zh, "语言", "Idioma")):
        for seen in runs:
            assert own in seen and other not in seen and "Language" not in seen, seen


def test_the_link_and_the_picker_choose_the_language():
    at = rerun(app_test(None, lang="es"))
    assert titles(at) == ["Idioma"] and at.query_params[language.PARAM] == "es"
    box = picker(at)
    assert box.options == ["English", "Español", "中文"] and box.value == 1
    box.set_value(2)
    rerun(at)
    assert titles(at) == ["语言"] and at.query_params[language.PARAM] == "zh"
    at = rerun(app_test(None, lang="xx"))  # a language we lack: English, no error
    assert titles(at) == ["Language"] and language.PARAM not in at.query_params


def test_presenter_mode_has_its_own_picker():
    at = rerun(app_test("positional", lang="zh", presenter="true"))
    box = picker(at)
    assert box.value == 2 and box.data["label"] == "语言"  # in the title row's popover
    at = rerun(app_test(None, lang="zh", presenter="true"))  # the router: one picker only
    assert len([e for e in at._tree if e.type == "bidi_component"
                and e.proto.id.endswith(BOX)]) == 1


@pytest.fixture
def arabic(tmp_path, monkeypatch):
    """A small catalog a teacher adds for a right-to-left language."""
    for lang in SHIPPED:
        shutil.copytree(i18n.LOCALE_DIR / lang, tmp_path / lang)
    folder = tmp_path / "ar" / "LC_MESSAGES"
    folder.mkdir(parents=True)
    (folder / "gptviz.po").write_text(
        'msgid ""\nmsgstr ""\n"Language: ar\\n"\n"Content-Type: text/plain; charset=utf-8\\n"\n'
        '"Plural-Forms: nplurals=6; plural=(n==0 ? 0 : n==1 ? 1 : n==2 ? 2 : n%100>=3 && '
        'n%100<=10 ? 3 : n%100>=11 && n%100<=99 ? 4 : 5);\\n"\n\n'
        'msgid "Language"\nmsgstr "اللغة"\n\nmsgid "Attention"\nmsgstr "الانتباه"\n',
        encoding="utf-8")
    monkeypatch.setattr(i18n, "LOCALE_DIR", tmp_path)
    i18n.translations.cache_clear()
    yield Path(tmp_path)
    i18n.translations.cache_clear()


def test_a_right_to_left_language_a_teacher_adds_lays_out(arabic):
    at = rerun(app_test(None, lang="ar"))
    assert titles(at) == ["اللغة"]
    assert "العربية" in picker(at).options  # named in itself
    styles = [e.proto.body for e in at._tree if e.type == "html"]
    assert any("direction:rtl" in s for s in styles)
    with i18n.use("ar"):
        assert i18n._("Attention") == "الانتباه" and i18n._("Lesson") == "Lesson"
    at = rerun(app_test(None, lang="es"))  # a left-to-right language: no such style
    assert not any("direction:rtl" in e.proto.body for e in at._tree if e.type == "html")
