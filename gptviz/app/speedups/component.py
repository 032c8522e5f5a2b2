"""The one factory for the app's ``st.components.v2`` elements: inline HTML, with its
JavaScript and CSS read from ``.js`` and ``.css`` files beside the module that draws it.

The files are read when an element is first registered (once per process), so they are
what the browser runs: ``node --check`` checks the JavaScript (``tests/test_speedups_js.py``
and ``.ci/run``). Each ``.js`` file is an ES module whose default export Streamlit calls
with the element (its ``parentElement``, ``data``, ``setStateValue``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import streamlit as st

HERE = Path(__file__).resolve().parent


def source(files: str | tuple[str, ...], folder: Path = HERE) -> str:
    """The text of ``files`` (one name or several, joined in order) in ``folder``.

    >>> "export default" in source("fold.js")
    True
    """
    names = (files,) if isinstance(files, str) else files
    return "\n".join((folder / name).read_text("utf-8") for name in names)


@functools.cache
def component(name: str, *, html: str = "<span></span>", js: str | tuple[str, ...] = (),
              css: str | tuple[str, ...] = (), folder: Path = HERE,
              isolate_styles: bool = False) -> Callable[..., Any]:
    """The element ``name``, registered once: ``html`` as given, ``js`` and ``css`` the
    files of those names in ``folder`` (this wing's by default). Styles are not isolated
    unless asked: the elements take the theme's fonts and colours from the page."""
    return st.components.v2.component(
        name, html=html, js=source(js, folder) if js else None,
        css=source(css, folder) if css else None, isolate_styles=isolate_styles)
