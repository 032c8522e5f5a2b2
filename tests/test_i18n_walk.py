"""Every page and view in Spanish and in Chinese shows no English sentence (issue 41).

An AppTest walk (the stock walk's pages, views and lesson steps) in each shipped language
collects every text a reader sees: Markdown, captions, titles, alerts, formulas, widget
labels and help, options, tabs, expanders, popovers, metrics, table headers, plotly
figures' titles, axis titles, legends and annotations, the SVG charts' and components'
words. The English to look for comes from the catalog machinery, not a hand list: the
words of every message the source marks (``gptviz.i18n.source_messages``), less the words
the language's own translations use (a Spanish "no", the "token" Chinese keeps). A run of
three such words in a row is English left untranslated: a string not wrapped, or wrapped
but translated before the session's language was known (a cache keyed without it).

Not counted: the text the model reads or writes (any run found in the bundled corpora),
token chips and code (``gv-chip``, ``gv-text``, ``st.code``), and the reviewed exemptions
of ``locale/EXEMPT.txt`` (Streamlit's own texts).
"""

from __future__ import annotations

import contextlib
import json
import re
from functools import cache

import pytest

from gptviz import i18n
from gptviz.app.speedups import fold
from gptviz.checkpoints.folder import bundled_models
from tests.helpers import ROOT, app_test, lesson_steps, rerun
from tests.test_app_stock import VIEWS

pytestmark = [pytest.mark.skipif(not bundled_models(), reason="no bundled models"),
              pytest.mark.slow]
WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*")
RUN = 2  # English words in a row that make a phrase left in English
TOKEN = re.compile(r"[·▁Ġ]\S+")  # a token shown with its visible leading space: model text
SKIP_KEYS = {"x", "y", "z", "customdata", "ids", "values", "hovertemplate", "ticktext",
             "tickvals", "text", "hovertext", "meta", "uid", "colorscale", "tokens", "csv",
             "js_content", "css_content", "key", "id", "href", "src", "data"}
TOKEN_HTML = re.compile(r'<(\w+)[^>]*class="[^"]*\bgv-(?:chip|text|tok)[^"]*"[^>]*>.*?</\1>',
                        re.S)
TAG = re.compile(r"<style[^>]*>.*?</style>|<[^>]+>", re.S)
IDENTIFIER = re.compile(r"^[a-z0-9_.@-]+$")  # a key or a name in a component's data
TEMPLATE = re.compile(r"%\{[^}]*\}")  # plotly's hover template fields
# the language pickers (the sidebar's, the Join page's): each language named in itself
PICKERS = ("gv_lang_picked@box", "class_lang@box")
TEX_COMMAND = re.compile(r"\\[A-Za-z]+")  # \implies, \underline: TeX, not English


@cache
def vocabulary(lang: str) -> frozenset[str]:
    """English words of the source's messages, less the words ``lang``'s translations use."""
    english: set[str] = set()
    for key in i18n.source_messages():
        for text in (key if isinstance(key, tuple) else (key,)):
            english.update(w.lower() for w in WORD.findall(text.split("\x04")[-1]))
    own: set[str] = set()
    for value in i18n.catalog_entries(lang).values():
        for text in (value if isinstance(value, tuple) else (value,)):
            own.update(w.lower() for w in WORD.findall(text))
    return frozenset(w for w in english - own if len(w) > 1)


@cache
def model_text() -> str:
    """What the bundled models read and write: a run found here is the model's text."""
    corpora = ROOT / "assets" / "corpora"
    text = " ".join(p.read_text(encoding="utf-8", errors="ignore")
                    for p in corpora.glob("*.txt"))
    return " ".join(WORD.findall(text)).lower()


@cache
def exempt() -> tuple[str, ...]:
    return tuple(i18n.exempt().get("streamlit", []))


def english_runs(text: str, lang: str) -> list[str]:
    """The runs of ``RUN`` or more English words in ``text`` that are not the model's."""
    for line in exempt():
        text = text.replace(line, " ")
    text = TOKEN.sub(" \0 ", TEX_COMMAND.sub(" \0 ", text))  # tokens, TeX: no part of a run
    vocab, found, run = vocabulary(lang), [], []
    for w in WORD.findall(text) + ["\0"]:  # "\0" ends the last run
        if w.lower() in vocab:
            run.append(w)
            continue
        if len(run) >= RUN:
            phrase = " ".join(run).lower()
            if phrase not in model_text():
                found.append(" ".join(run))
        run = []
    return found


def strings(value, key: str = "") -> list[str]:
    """The words of a component's JSON: labels, titles, texts (markup stripped)."""
    if key in SKIP_KEYS:
        return []
    if isinstance(value, str):
        return [] if IDENTIFIER.match(value) else [TAG.sub(" ", value)]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in strings(v, k)]
    if isinstance(value, list):
        return [s for v in value for s in strings(v, key)]
    return []


def figure_words(spec: dict) -> list[str]:
    """A plotly figure's words: titles, axis titles, legend, annotations, trace names and
    hover templates (not its data, tick labels or layout settings)."""
    def text(t) -> list[str]:
        t = t.get("text") if isinstance(t, dict) else t
        return [t] if isinstance(t, str) and t else []

    layout, out = spec.get("layout", {}), []
    out += text(layout.get("title"))
    for key, axis in layout.items():
        if "axis" in key and isinstance(axis, dict):
            out += text(axis.get("title"))
    out += text(layout.get("legend", {}).get("title"))
    out += [a["text"] for a in layout.get("annotations", []) if isinstance(a.get("text"), str)]
    for trace in spec.get("data", []):
        out += text(trace.get("name"))
        out += [TEMPLATE.sub(" ", h) for h in text(trace.get("hovertemplate"))]
    return [TAG.sub(" ", s) for s in out]


def seen_texts(at) -> list[tuple[str, str]]:
    """(where, text) of everything the page shows."""
    out = []
    for e in at._tree:
        proto = getattr(e, "proto", None)
        if proto is None or e.type in ("code", "exception"):
            continue
        if e.type == "plotly_chart":
            out += [("figure", s) for s in figure_words(json.loads(proto.spec))]
            continue
        if e.type == "bidi_component":
            if proto.id.endswith(PICKERS):
                continue
            raw = getattr(proto, "json", "") or ""
            with contextlib.suppress(ValueError):  # a component without JSON data
                out += [(proto.component_name, s) for s in strings(json.loads(raw))] if raw \
                    else []
            continue
        for field, value in proto.ListFields():
            if field.name == "value" and e.type in ("text_area", "text_input"):
                continue  # the reader's own text
            if field.name in ("body", "label", "help", "placeholder", "caption", "value") \
                    and isinstance(value, str):
                if field.name == "body" and e.type == "html":
                    value = TAG.sub(" ", TOKEN_HTML.sub(" ", value))
                out.append((f"{e.type}.{field.name}", value))
            elif field.name in ("options", "labels") and not isinstance(value, str):
                out += [(f"{e.type}.{field.name}", str(v)) for v in value]
    return out


@cache
def translated_whole(lang: str) -> frozenset[str]:
    """Every message of the source whose translation in ``lang`` differs from it: one of
    these shown whole (a one-word label: "Prompt") is English left on the page."""
    have = i18n.catalog_entries(lang)
    return frozenset(m for m in i18n.source_messages() if isinstance(m, str)
                     and isinstance(have.get(m), str) and have[m] != m and "{" not in m)


def check(at, where: str, lang: str, problems: list[str]) -> None:
    for kind, text in seen_texts(at):
        if text.strip() in translated_whole(lang):
            problems.append(f"{where} [{kind}]: {text.strip()!r} untranslated")
        for phrase in english_runs(text, lang):
            problems.append(f"{where} [{kind}]: {phrase!r} in {text[:120]!r}")


def router(page: str, lang: str):
    at = app_test(lang=lang)
    for name in fold.FOLDS:
        at.session_state[fold.reached_key(name)] = True
    at.switch_page(f"app_pages/{page}.py")
    return rerun(at)


@pytest.mark.parametrize("lang", ("es", "zh"))
def test_every_page_and_view_is_in_the_language(lang):
    # AppTest formats a select box's options again on this thread, outside the session's
    # script run: in the session's language too, as the browser shows what the run sent
    with i18n.use(lang):
        walk_all(lang)


def walk_all(lang: str) -> None:
    problems: list[str] = []
    for page, views in VIEWS.items():
        at = router(page, lang)
        for view in views:
            at.session_state["view"] = view
            rerun(at)
            check(at, f"{page} / {view}", lang, problems)
    for page in ("home", "training", "join"):
        check(router(page, lang), page, lang, problems)
    at = router("lesson", lang)
    for step in lesson_steps(at):
        check(at, f"lesson step {step}", lang, problems)
    unique = list(dict.fromkeys(problems))
    assert not unique, f"{len(unique)} English runs in {lang}:\n" + "\n".join(unique[:40])


def test_the_walk_finds_english():
    """The check itself: an English sentence of the source is found, its translation is not,
    and the model's text is left alone."""
    longest = max((m for m in i18n.source_messages() if isinstance(m, str)), key=len)
    with i18n.use("es"):
        translated = i18n._(longest)
    assert len(WORD.findall(longest)) >= RUN and english_runs(longest, "es"), longest
    assert not english_runs(f"{translated}: 0,25", "es")
    sentence = " ".join(model_text().split()[100:106])
    assert not english_runs(sentence, "es")
