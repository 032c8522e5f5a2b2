"""The tabs that hold a page's views: one per view, only the open one run, its English name
in the link (``?view=``) whatever the reader's language."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import streamlit as st

from gptviz import i18n
from gptviz.i18n import _, current

VISIT = "gptviz_visit"  # counts arrivals on a page from another (set by the router)


def view_tabs(views: Mapping[str, Callable[..., None]], inputs: Mapping[str, Any],
              lazy: bool = True) -> None:
    """One tab per view of a page; each view is called with the inputs its parameters name.

    Lazy tabs run only the open view (its English name is ``?view=`` in the URL, so a link
    opens it in any language); the others cost nothing. ``views`` is the page's ``VIEWS``
    mapping, which the tests import too, e.g. ``{"All heads": overview, ...}`` with
    ``overview(picked, prompt, ...)``; its names are marked ``N_`` and shown translated.
    """
    labels = {name: _(name) for name in views}
    if lazy:
        page = "|".join(views)  # a page's views name it
        if all(label == name for name, label in labels.items()):  # English: bound to ?view=
            tabs = st.tabs(list(views), key="view", bind="query-params", on_change="rerun",
                           default=_return_view(page))
        else:
            tabs = _translated_tabs(labels, page)
        st.session_state.setdefault(OPEN_VIEWS, {})[page] = next(
            (name for name, tab in zip(views, tabs, strict=True) if tab.open), None)
    else:
        tabs = st.tabs(list(labels.values()))
    for tab, draw in zip(tabs, views.values(), strict=True):
        with tab:
            if not lazy or tab.open:
                draw(**{name: inputs[name] for name in inspect.signature(draw).parameters})


def _translated_tabs(labels: Mapping[str, str], page: str) -> Any:
    """Tabs labelled in the reader's language whose ``?view=`` stays the view's English
    name (a URL parameter is never translated; a lesson's link names the English view):
    the link's view opens first, written back when the reader picks another tab."""
    state, names = st.session_state, {label: name for name, label in labels.items()}
    fixed, visit, lang = state.setdefault(TRANSLATED_VIEWS, {}), state.get(VISIT, 0), current()
    before = fixed.get(page)
    if before is None or before[:2] != (visit, lang):  # a new visit, or a new language
        asked = st.query_params.get("view")
        asked = asked if asked in labels else names.get(asked)
        # the language changed on this page: keep the view that is open
        opened = state.setdefault(OPEN_VIEWS, {}).get(page) if before and before[0] == visit \
            else None
        fixed[page] = (visit, lang, asked or opened or _return_view(page))
    if state.get("view") in labels:  # an English name set from outside (a test, a link)
        state["view"] = labels[state["view"]]

    def picked() -> None:
        if (name := names.get(state.get("view"))) is not None:
            st.query_params["view"] = name

    return st.tabs(list(labels.values()), key="view", on_change=picked,
                   default=labels.get(fixed[page][2]))


OPEN_VIEWS, RETURN_VIEWS = "gv-open-views", "gv-return-views"  # session keys of view_tabs
TRANSLATED_VIEWS = "gv-translated-views"  # page -> (visit, language, its first view)


def _return_view(page: str) -> str | None:
    """The view open when this page was last left, for a return from another page (the
    URL's ?view= goes with the page switch; a link's ?view= still wins). Chosen on arrival
    and then kept while the page stays: a default that changed between reruns would make
    the tabs a new widget and drop the reader's choice."""
    state = st.session_state
    defaults, visit = state.setdefault(RETURN_VIEWS, {}), state.get(VISIT, 0)
    if page not in defaults or defaults[page][0] != visit:  # the first run of this visit
        defaults[page] = (visit, state.setdefault(OPEN_VIEWS, {}).get(page))
    return defaults[page][1]  # a fragment's rerun (no router run) keeps it too


def url_bound(key: str, options: Sequence[Any], english: Callable[[Any], str],
              multi: bool = False) -> dict[str, Any]:
    """Keyword arguments for a choice widget whose options show translated words, keeping
    ``?key=`` in English: Streamlit's binding writes the shown label into the link, so in
    English the widget is bound as before; in another language the link's English label is
    read into the widget here, and the pick written back in English (a link is never
    translated). ``english(option)`` is the label the link holds.

    Pass ``**url_bound(...)`` instead of ``bind="query-params"``; the widget's ``key`` is
    ``key``."""
    lang = current()
    if lang == i18n.SOURCE:
        return {"bind": "query-params"}
    state, mark = st.session_state, f"{key}@url-{lang}"
    by_label = {english(o): o for o in options}
    raw = tuple(st.query_params.get_all(key))
    if raw and raw != state.get(mark):  # a link, or the language just changed
        picked = [by_label[r] for r in raw if r in by_label]
        if picked:
            state[key] = picked if multi else picked[0]
    state[mark] = raw

    def write() -> None:
        value = state.get(key)
        shown = [english(o) for o in (value or [])] if multi else (
            [english(value)] if value is not None else [])
        st.query_params[key] = shown if multi else (shown[0] if shown else "")
        state[mark] = tuple(shown)

    return {"on_change": write}
