"""Streamlit's caches with their spinner in the reader's language, shown only while a value
is computed.

``@st.cache_resource(show_spinner="…")`` takes its text once, at import, in no session's
language. ``with st.spinner(_("…")):`` around a cached call says it in the reader's language
but runs at every call, a hit too: each starts a timer thread and sends the browser one more
message to clear it (1–2 more per load of Tokenizers, Training and Generation; their load
times differed by less than a run's noise). ``said`` gives Streamlit's own spinner, on a
miss only, with the text looked up per language: one decorated function per language, all
of them one cache (Streamlit keys a function's cache on its module, name and source).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from gptviz import i18n

F = TypeVar("F", bound=Callable[..., Any])


def said(decorator: Callable[..., Any], message: str, **options: Any) -> Callable[[F], F]:
    """``decorator(**options)`` (``st.cache_resource`` or ``st.cache_data``) with its spinner
    saying ``message`` (an English source text, marked ``N_``) in the reader's language.
    Two ``said`` of one function with the same ``options`` share its values: a function
    computed under two messages (``Encoding the corpus…``, ``Encoding the text…``).
    The result's ``clear`` is the cache's.

    >>> import streamlit as st
    >>> @said(st.cache_data, "Counting…", max_entries=2)
    ... def double(x):
    ...     return 2 * x
    >>> double(21), double.clear() is None
    (42, True)
    """
    def wrap(fn: F) -> F:
        @functools.cache
        def in_language(lang: str) -> Callable[..., Any]:
            text = i18n.translations(lang).gettext(message)
            return decorator(show_spinner=text, **options)(fn)

        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            return in_language(i18n.current())(*args, **kwargs)

        call.clear = lambda *args, **kwargs: in_language(i18n.SOURCE).clear(  # type: ignore
            *args, **kwargs)
        return call  # type: ignore[return-value]

    return wrap
