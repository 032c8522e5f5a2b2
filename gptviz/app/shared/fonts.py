"""The fonts a page's first view draws with, asked for in its ``index.html``.

A browser fetches a font only when it first lays out text that needs it. On a fresh load of
a page that was after the app's code had drawn the page, 0.4–1.2 s in: Streamlit's icon
font (375 kB, the sidebar's icons), its italic and monospace faces, and KaTeX's faces, which
are ``font-display: block`` (a formula's text is invisible until its font has come). When
each arrived, the text that uses it was laid out and painted again. Asked for from the
page's head instead, as Streamlit asks for its upright text face, they arrive while the
app's code loads, before the page is laid out (measured with ``benchmarks/pages.py``:
BENCHMARKS.md, "stop 33").

``FONTS`` names each page's faces by the stem of Streamlit's file (``KaTeX_Size2-Regular``
for ``static/media/KaTeX_Size2-Regular.<hash>.woff2``): those its first view uses with the
default model, no more (a preloaded font left unused is a wasted fetch and a console
warning), counting what is drawn below a fold (``fold``) when the reader scrolls there.
``tests/test_browser.py`` loads every page, scrolls it down, and checks both ways: no font
is fetched that was not preloaded, and every preloaded one is in use.
"""

from __future__ import annotations

import functools
from html import escape
from pathlib import Path

from streamlit import file_util

ICONS = "MaterialSymbols-Rounded"  # the sidebar's page icons, on every page
TEX = ("KaTeX_Main-Regular", "KaTeX_Math-Italic")  # any formula: letters and digits
SIZE = ("KaTeX_Size1-Regular", "KaTeX_Size2-Regular")  # \big, \Big, \sum, \frac delimiters
FONTS: dict[str, tuple[str, ...]] = {  # url path of a page ("" the main page) -> stems
    "": (ICONS, *TEX, "SourceCodeVF-Upright"),
    "lesson": (ICONS, *TEX, "SourceSansVF-Italic"),
    "tokenizers": (ICONS, *TEX, "KaTeX_AMS-Regular", "KaTeX_Size1-Regular",
                   "SourceCodeVF-Upright"),
    "embeddings": (ICONS, *TEX, "KaTeX_AMS-Regular", "KaTeX_Size1-Regular"),
    "positional": (ICONS, *TEX, *SIZE, "SourceSansVF-Italic"),
    "attention": (ICONS, *TEX, *SIZE, "KaTeX_Size4-Regular"),
    "block": (ICONS, *TEX, "KaTeX_AMS-Regular", "KaTeX_Size1-Regular"),
    "generation": (ICONS, *TEX, *SIZE, "KaTeX_Size4-Regular", "KaTeX_AMS-Regular",
                   "SourceCodeVF-Upright", "SourceSansVF-Italic"),
    "training": (ICONS, *TEX, "KaTeX_Size2-Regular", "SourceCodeVF-Upright"),
    "learning": (ICONS, *TEX, *SIZE),
}


@functools.cache
def media_file(stem: str) -> str | None:
    """The name of Streamlit's font file for ``stem`` (its build adds a hash), or None if
    this Streamlit has none."""
    folder = Path(file_util.get_static_dir()) / "static" / "media"
    found = sorted(p.name for p in folder.glob(f"{stem}.*woff2")
                   if p.name.split(".")[0] == stem)
    return found[0] if found else None


def preload(stems: tuple[str, ...]) -> bytes:
    """``<link rel="preload">`` tags for these fonts, with addresses relative to the page
    as Streamlit writes its own (``./static/...``: right under a base path too); a stem
    this Streamlit does not have is left out.

    >>> preload(("KaTeX_Main-Regular", "no-such-font")).count(b"<link")
    1
    """
    files = [f for f in map(media_file, stems) if f]
    return "".join(f'<link rel="preload" href="./static/media/{escape(f)}" as="font" '
                   'type="font/woff2" crossorigin>' for f in files).encode()


@functools.cache
def preloads() -> dict[str, bytes]:
    """What each page's head gets (``base_url.serve_base_url``'s ``heads``)."""
    return {page: preload(stems) for page, stems in FONTS.items()}
