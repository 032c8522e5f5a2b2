"""A table's CSV saved by the browser itself: a button that holds the file's text.

``st.download_button`` draws a button whose code (two JavaScript files) is fetched when the
first one shows, and whose click reruns the page and fetches the file from the server. On
the Attention page with a 128-token prompt its button arrives after the head grid, and its
code was fetched after everything else (BENCHMARKS.md, stop 34). The tables' CSV files are
small, so this button is a ``st.components.v2`` component (the machinery the page's heatmaps
already load) that carries the text and, on a click, hands it to the browser as a file
(a ``blob:`` address made in the page: nothing is asked of the server, nothing reruns).
A file larger than ``INLINE_MAX`` would travel with every rerun of the page; it keeps
Streamlit's button, which sends the file only when clicked.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import streamlit as st

NAME = "gptviz.download"
INLINE_MAX = 256 * 1024  # characters of a file the button carries itself
_HTML = ('<button type="button" class="gv-download"><svg viewBox="0 0 24 24" '
         'aria-hidden="true"><path d="M5 20h14v-2H5v2zM19 9h-4V3H9v6H5l7 7 7-7z"/></svg>'
         '<span class="gv-download-label"></span></button>')  # Material "download"
_CSS = """
.gv-download{font:inherit;font-family:var(--st-font);font-size:1rem;line-height:1.6;
display:inline-flex;align-items:center;gap:.5rem;padding:.25rem .75rem;min-height:2.5rem;
border-radius:var(--st-base-radius,.5rem);cursor:pointer;color:var(--st-text-color);
background:var(--st-background-color);border:1px solid var(--st-border-color,#d5dae5)}
.gv-download svg{width:1.125rem;height:1.125rem;fill:currentColor}
.gv-download:hover{border-color:var(--st-primary-color);color:var(--st-primary-color)}
.gv-download:focus-visible{outline:2px solid var(--st-primary-color);outline-offset:2px}
"""
_JS = """
export default function(component) {
  const { parentElement, data } = component;
  const button = parentElement.querySelector("button");
  button.querySelector(".gv-download-label").textContent = data.label;
  button.onclick = () => {
    const url = URL.createObjectURL(new Blob([data.text], {type: data.mime}));
    const link = Object.assign(document.createElement("a"),
                               {href: url, download: data.name, hidden: true});
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60000);
  };
}
"""


@functools.cache
def _component() -> Callable[..., Any]:
    return st.components.v2.component(NAME, html=_HTML, css=_CSS, js=_JS,
                                      isolate_styles=False)


def download_text(label: str, text: str, name: str, key: str, mime: str = "text/csv",
                  icon: str = ":material/download:") -> None:
    """A button that saves ``text`` as the file ``name``; Streamlit's own button when the
    text is longer than ``INLINE_MAX`` (``icon`` is that button's)."""
    if len(text) > INLINE_MAX:
        st.download_button(label, text.encode("utf-8"), file_name=name, mime=mime,
                           icon=icon, key=key)
        return
    _component()(key=key, data={"label": label, "text": text, "name": name, "mime": mime})
