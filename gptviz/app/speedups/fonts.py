"""The fonts a page's first view draws with, asked for in its ``index.html``.

A browser fetches a font when it first lays out text that needs it: on a fresh load, after
the app's code had drawn the page (KaTeX's faces are ``font-display: block``, so formulas
stayed invisible until then). ``preloads()`` gives each page's ``<link rel="preload">`` tags,
which ``base_url`` puts into its ``index.html``; the fonts alone took 0.11–0.13× of a bare
page off Attention in three A/B runs (benchmarks/LOG.md, stop 33). ``FONTS`` names each page's
faces by the stem of Streamlit's file (found with ``streamlit.file_util.get_static_dir``);
``tests/test_browser.py`` checks that every page uses exactly these. Checked against
Streamlit 1.67; elsewhere no preload, with one log line.
"""

from __future__ import annotations

import functools
from html import escape
from pathlib import Path

from gptviz.app.speedups import guard

STREAMLIT = ("1.67",)  # releases whose font files were checked
NAMES = ("streamlit.file_util:get_static_dir",)
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
    "join": (ICONS,),
}


@functools.cache
def media_file(stem: str) -> str | None:
    """The name of Streamlit's font file for ``stem`` (its build adds a hash), or None if
    this Streamlit has none."""
    from streamlit import file_util

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


def preloads() -> dict[str, bytes]:
    """What each page's head gets (``base_url.serve_base_url``'s ``heads``); nothing, with
    one log line, where this Streamlit is not one checked."""
    if not guard.fits("fonts", streamlit=STREAMLIT, names=NAMES):
        return {}
    return {page: preload(stems) for page, stems in FONTS.items()}
