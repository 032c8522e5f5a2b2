"""The session's language: from the link (``?lang=es``), else the picker, else the browser
(``st.context.locale``), else English; kept in the session and written into every page's
link. ``gptviz.i18n`` looks every message up in it (``install`` registers the resolver).

Right-to-left languages (a catalog a teacher adds, e.g. ``ar``, ``he``, ``fa``) turn the
page's text right to left; formulas, token chips, code and charts keep their own direction.
"""

from __future__ import annotations

import streamlit as st

from gptviz import i18n
from gptviz.app.speedups import choice
from gptviz.app.speedups.session import in_script_run
from gptviz.i18n import _

PARAM = "lang"  # the URL parameter
KEY = "gv_lang"  # the session's key (a page's own widget may be keyed "lang")
PICKED = "gv_lang_picked"  # the picker's key
LINK_SEEN = "gv_lang_link"  # the link's ?lang= as the session last saw it
RTL = {"ar", "he", "fa", "ur", "ps", "yi", "dv", "ckb", "sd", "ug"}
# Each language named in itself, as a picker shows it; a catalog a teacher adds and that is
# not here is named by Babel's locale data.
NAMES = {"en": "English", "es": "Español", "zh": "中文"}
RTL_CSS = """<style>
.stMainBlockContainer [data-testid="stMarkdownContainer"],
.stMainBlockContainer [data-testid="stCaptionContainer"],
[data-testid="stSidebar"] [data-testid="stMarkdownContainer"],
.stMainBlockContainer h1,.stMainBlockContainer h2,.stMainBlockContainer h3,
[data-testid="stWidgetLabel"],[data-testid="stAlertContentInfo"],
[data-testid="stAlertContentWarning"],[data-testid="stAlertContentError"]
{direction:rtl;text-align:right}
.stMainBlockContainer .katex,.stMainBlockContainer .gv-chips,.stMainBlockContainer pre,
.stMainBlockContainer .gv-text{direction:ltr;unicode-bidi:isolate}
</style>"""


def _session_language() -> str | None:
    """The resolver ``gptviz.i18n`` asks: the language of the session this thread runs
    (settled by ``choose`` the first time, when a page runs without the router), or None
    outside a session's script run."""
    if not in_script_run():
        return None
    try:
        lang = st.session_state.get(KEY)
        return lang if lang else choose()
    except Exception:  # a session being torn down  # noqa: BLE001
        return None


def install() -> None:
    """Look messages up in the session's language from now on (once per process)."""
    i18n.set_resolver(_session_language)


def name(lang: str) -> str:
    """``lang`` named in itself (``Español``)."""
    if lang in NAMES:
        return NAMES[lang]
    try:
        from babel import Locale

        return Locale.parse(lang).get_display_name(lang).capitalize()
    except Exception:  # noqa: BLE001 - an unknown code is shown as it is
        return lang


def browser_language() -> str:
    """The browser's language if we have a catalog for it, else English."""
    try:
        locale = st.context.locale
    except Exception:  # noqa: BLE001 - no browser (a script, a test)
        locale = None
    return i18n.known(locale) or i18n.SOURCE


def choose() -> str:
    """The session's language, settled before anything is written: a link's ``?lang=`` that
    names a language we have, when the session first sees that link; else what the session
    had (the picker's); else the browser's. A link naming a language we lack falls back,
    with no error."""
    state = st.session_state
    raw = st.query_params.get(PARAM)
    asked = i18n.known(raw)
    if asked and raw != state.get(LINK_SEEN):  # a link opened (or typed): it decides
        state[KEY] = asked
    elif not i18n.known(state.get(KEY)):
        state[KEY] = browser_language()
    state[LINK_SEEN] = raw
    lang = state[KEY]
    _write_link(lang)
    return lang


def _write_link(lang: str) -> None:
    """``?lang=`` in the address when it differs from what the browser would give."""
    if lang != browser_language():
        if st.query_params.get(PARAM) != lang:
            st.query_params[PARAM] = lang
    elif PARAM in st.query_params:
        del st.query_params[PARAM]
    st.session_state[LINK_SEEN] = st.query_params.get(PARAM)


def picker(compact: bool = False) -> None:
    """A choice of every language with a catalog (the browser's own ``<select>``, see
    ``speedups/choice.py``); ``compact``: its label hidden (a title row's). A pick reruns
    the page in the language picked, navigation included."""
    langs = i18n.available()
    current = i18n.current()  # settles the session's language if nothing has yet
    if st.session_state.get(PICKED) not in langs:
        st.session_state[PICKED] = current if current in langs else i18n.SOURCE
    picked = choice.select("" if compact else _("Language"), langs, key=PICKED,
                           format_func=name)
    if picked != current:
        st.session_state[KEY] = picked
        _write_link(picked)
        st.rerun()


def style() -> None:
    """The page's direction for a right-to-left language (nothing otherwise)."""
    if st.session_state.get(KEY, i18n.SOURCE).split("_")[0] in RTL:
        st.html(RTL_CSS)


def link_params() -> dict[str, str]:
    """``?lang=`` for a link to another page, when the language is not the browser's."""
    lang = st.session_state.get(KEY, i18n.SOURCE)
    return {PARAM: lang} if lang != browser_language() else {}


install()  # every page imports this module (its title row does): from then on, messages
# are looked up in the language of the session being served
