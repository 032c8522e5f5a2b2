"""A table's CSV saved by the browser itself: a button that holds the file's text.

It replaces ``st.download_button``, whose code a page fetched when the first one showed and
whose click reruns the page and fetches the file: with ``choice``, Attention loaded
0.11–0.17× of a bare page sooner (benchmarks/LOG.md, stop 34). The button is a component
(``download.js``, ``download.css``) that hands its text to the browser as a ``blob:`` file:
nothing is asked of the server, nothing reruns. A file over ``INLINE_MAX`` characters, and
every file in stock mode (``download`` off), gets Streamlit's button.
"""

from __future__ import annotations

import streamlit as st

from gptviz.app.speedups import stock
from gptviz.app.speedups.component import component

NAME = "gptviz.download"
INLINE_MAX = 256 * 1024  # characters of a file the button carries itself
HTML = ('<button type="button" class="gv-download"><svg viewBox="0 0 24 24" '
        'aria-hidden="true"><path d="M5 20h14v-2H5v2zM19 9h-4V3H9v6H5l7 7 7-7z"/></svg>'
        '<span class="gv-download-label"></span></button>')  # Material "download"


def download_text(label: str, text: str, name: str, key: str, mime: str = "text/csv",
                  icon: str = ":material/download:") -> None:
    """A button that saves ``text`` as the file ``name``; Streamlit's own button when the
    text is longer than ``INLINE_MAX`` or in stock mode (``icon`` is that button's)."""
    if len(text) > INLINE_MAX or stock.off("download"):
        st.download_button(label, text.encode("utf-8"), file_name=name, mime=mime,
                           icon=icon, key=key)
        return
    element = component(NAME, html=HTML, js="download.js", css="download.css")
    element(key=key, data={"label": label, "text": text, "name": name, "mime": mime})
