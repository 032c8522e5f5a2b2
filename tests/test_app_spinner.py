"""shared/spinner.said: Streamlit's cache, its spinner's text in the reader's language, one
store for every language."""

from __future__ import annotations

import streamlit as st

from gptviz.app.shared.spinner import said
from gptviz.i18n import translations, use


def recording(calls: list[dict]):
    """A stand-in for ``st.cache_data`` that notes the options each decoration was given."""
    def decorator(**options):
        calls.append(options)
        return lambda fn: fn
    return decorator


def test_the_spinner_says_the_message_in_each_language_decorated_once_per_language():
    calls: list[dict] = []
    fn = said(recording(calls), "Loading the model…", max_entries=3)(lambda x: x + 1)
    with use("es"):
        assert fn(1) == 2 and fn(2) == 3
    with use("zh"):
        fn(1)
    fn(1)  # English
    assert [c["show_spinner"] for c in calls] == [
        translations("es").gettext("Loading the model…"),
        translations("zh").gettext("Loading the model…"), "Loading the model…"]
    assert calls[0]["show_spinner"] == "Cargando el modelo…"
    assert all(c["max_entries"] == 3 for c in calls)


def test_every_language_reads_one_store_and_clear_empties_it():
    runs: list[int] = []

    @said(st.cache_data, "Encoding the corpus…", max_entries=4)
    def square(x: int) -> int:
        runs.append(x)
        return x * x

    square.clear()
    assert square(3) == 9
    with use("es"):
        assert square(3) == 9  # computed in English, read in Spanish
    with use("zh"):
        assert square(4) == 16
    assert square(4) == 16 and runs == [3, 4]
    square.clear()
    with use("es"):
        assert square(3) == 9
    assert runs == [3, 4, 3]


def test_two_messages_on_one_function_share_its_values():
    runs: list[int] = []

    def encode(x: int) -> int:
        runs.append(x)
        return -x

    corpus = said(st.cache_data, "Encoding the corpus…", max_entries=2)(encode)
    text = said(st.cache_data, "Encoding the text…", max_entries=2)(encode)
    corpus.clear()
    assert corpus(5) == -5 and text(5) == -5 and runs == [5]
