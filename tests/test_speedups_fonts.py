"""The fonts each page asks for from its head (gptviz/app/speedups/fonts.py). That each page
uses exactly these is checked in Chromium, in tests/test_browser.py."""

from __future__ import annotations

import re
from pathlib import Path

from streamlit import file_util

from gptviz.app.speedups import fonts

MEDIA = Path(file_util.get_static_dir()) / "static" / "media"


def test_every_font_named_is_a_file_of_this_streamlit():
    for page, stems in fonts.FONTS.items():
        for stem in stems:
            name = fonts.media_file(stem)
            assert name is not None, (page, stem)
            assert (MEDIA / name).is_file() and name.startswith(stem + ".")
    assert fonts.media_file("KaTeX_Main") is None  # a stem is the whole name before the hash


def test_the_links_are_preloads_relative_to_the_page_as_streamlits_own():
    index = (Path(file_util.get_static_dir()) / "index.html").read_text()
    assert 'href="./static/media/SourceSansVF-Upright' in index  # Streamlit's own preload
    html = fonts.preload(fonts.FONTS["attention"]).decode()
    links = re.findall(r"<link [^>]+>", html)
    assert len(links) == len(fonts.FONTS["attention"]) and "".join(links) == html
    for link, stem in zip(links, fonts.FONTS["attention"], strict=True):
        assert link == (f'<link rel="preload" href="./static/media/{fonts.media_file(stem)}" '
                        'as="font" type="font/woff2" crossorigin>')


def test_every_page_has_its_fonts_and_the_icons():
    heads = fonts.preloads()
    assert heads.keys() == fonts.FONTS.keys()
    for page, head in heads.items():
        assert len(set(fonts.FONTS[page])) == len(fonts.FONTS[page]), page  # none twice
        assert head.count(b"<link") == len(fonts.FONTS[page]), page
        assert fonts.ICONS.encode() in head, page
