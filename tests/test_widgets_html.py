"""Plain text and small tables drawn as HTML (widgets.text_block, widgets.plain_table): the
text on screen is the text given, character for character."""

from __future__ import annotations

import html
import re

import pandas as pd

from gptviz.app.shared.widgets import plain_table, text_block


class Capture:
    """A stand-in for ``st``: keeps what ``.html`` was given."""

    def __init__(self) -> None:
        self.shown: list[str] = []

    def html(self, body: str) -> None:
        self.shown.append(body)


def test_text_block_keeps_leading_newlines_and_escapes():
    box = Capture()
    text = "\n\n<b>x</b> & $y$\n  indented\ttab"
    text_block(text, box)
    body = box.shown[0]
    assert "<pre" not in body  # HTML drops the newline that opens a <pre>
    inner = re.search(r'<div class="gv-text">(.*)</div>', body, re.S).group(1)
    assert html.unescape(inner) == text and "<b>" not in inner


def test_plain_table_shows_markdown_and_latex_characters_as_they_are():
    box = Capture()
    cells = ["$x$", "*a*", "_b_", "<i>", "a|b", "\\(y\\)"]
    plain_table(pd.DataFrame({"token": cells, "count": range(len(cells))}), box)
    body = box.shown[0]
    got = [html.unescape(c) for c in re.findall(r"<td>(.*?)</td>", body)]
    assert got == cells
    assert re.findall(r'<td class="gv-num">(\d+)</td>', body) == [str(i) for i in range(6)]
    assert re.findall(r"<th>(.*?)</th>", body) == ["token", "count"]
