"""The Attention, Transformer block and Learning pages in Spanish and Chinese (issue 41):
every view runs, and none shows a sentence of their catalog (locale/*/LC_MESSAGES/explore.po)
in English; figures cached per language, so one session's language never reaches another's."""

from __future__ import annotations

import pytest

from gptviz.app.attention.view import VIEWS as ATTENTION
from gptviz.app.block.view import VIEWS as BLOCK
from gptviz.app.learning.view import VIEWS as LEARNING
from gptviz.i18n import use
from tests.helpers import app_test, area_catalog, figures, rerun

PAGES = {"attention": ATTENTION, "block": BLOCK, "learning": LEARNING}
TITLES = {"attention": "Attention", "block": "Transformer block", "learning": "Learning"}
SHOWN = ("markdown", "caption", "info", "warning", "error", "success", "title")


def english(lang: str) -> set[str]:
    """The pages' messages whose translation differs from the English (a term kept in
    English, like "token", could not tell a translated page from an untranslated one)."""
    own = area_catalog(lang, "gptviz/app/attention/", "gptviz/app/block/",
                       "gptviz/app/learning/", "gptviz/analysis/", "app_pages/")
    return {m for m, t in own.items() if "{" not in m and m != t}


def on_screen(at) -> list[str]:
    """The texts the page shows: its writing, metric and widget labels, figure titles."""
    out = [str(e.value) for kind in SHOWN for e in getattr(at, kind)]
    out += [m.label for m in at.metric]
    for kind in ("selectbox", "multiselect", "number_input", "text_input", "select_slider",
                 "radio", "button", "text_area", "slider"):
        out += [str(w.label) for w in getattr(at, kind)]
    for fig in figures(at):
        title = fig.get("layout", {}).get("title", {})
        out.append(str(title.get("text", "")) if isinstance(title, dict) else str(title))
    return out


@pytest.mark.parametrize("lang", ["es", "zh"])
@pytest.mark.parametrize("page", sorted(PAGES))
def test_every_view_speaks_the_language(page, lang):
    left = english(lang)
    with use(lang):
        from gptviz.i18n import _
        title = _(TITLES[page])
    assert title != TITLES[page]
    for view in PAGES[page]:
        at = app_test(page, timeout=300, lang=lang, view=view)
        at.session_state["view"] = view
        rerun(at)
        assert [t.value for t in at.title] == [title], view
        shown = on_screen(at)
        assert not [s for s in shown if s in left], (view, [s for s in shown if s in left])


def test_a_figure_cached_in_one_language_is_not_served_in_another():
    """The summed heads of one prompt (a figure kept in the shared store, per model) in es,
    then zh, then en: each session gets its own titles."""
    view = "Summed heads"
    titles = {}
    for lang in ("es", "zh", "en"):
        at = app_test("attention", timeout=300, lang=lang, view=view)
        at.session_state["view"] = view
        rerun(at)
        titles[lang] = [f["layout"]["title"]["text"] for f in figures(at)]
    assert titles == {
        "es": ["Σ sobre las 4 cabezas de cada capa (escala de color 0 … 4)"],
        "zh": ["每层 4 个头上的 Σ（色标 0 … 4）"],
        "en": ["Σ over the 4 heads of each layer (colour scale 0 … 4)"]}
