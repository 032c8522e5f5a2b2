"""Pure builders for showing tokens: coloured HTML chips and tables.

Whitespace is made visible (``·`` for a space, ``→`` for a tab, ``↵`` for a
newline), control characters are shown by name, and a token holding only part
of a UTF-8 character is shown as its bytes, e.g. ``‹e2 80›``.
"""

from __future__ import annotations

import html
import unicodedata

import pandas as pd

from gptviz.i18n import N_, _, ngettext, number
from gptviz.tokenizers.base import TokenInfo

# Pastel fills, cycled by position so that neighbouring tokens always differ.
PALETTE = ("#c8e6ff", "#ffe0b3", "#d4f5c9", "#f9d0e8", "#e3dbff", "#fff3a8", "#c9f2ee", "#ffd6cc")
SPECIAL_FILL, UNKNOWN_FILL = "#3d4452", "#ff8a80"
_VISIBLE = {" ": "·", "\t": "→", "\n": "↵", "\r": "␍"}
_BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u2028\u2029")

CHIP_CSS = """
<style>
.gv-chips{display:flex;flex-wrap:wrap;gap:3px 2px;font-family:ui-monospace,SFMono-Regular,Menlo,
monospace;font-size:15px;line-height:1.15;align-items:flex-start}
.gv-chip{display:inline-flex;flex-direction:column;align-items:center;border-radius:5px;
padding:2px 4px 1px;color:#1d2129;white-space:pre;cursor:default}
.gv-chip small{font-size:10px;color:#4d5565;margin-top:1px}
.gv-chip.special{color:#fff}.gv-chip.special small{color:#d6dae3}
.gv-chip.partial{border:1.5px dashed #6b7280}
.gv-break{flex-basis:100%;height:0}
</style>
"""


class Shown(str):
    """A label that is display text already, e.g. "head 0" or "3: ·the": ``axis_labels``
    keeps it as it is. Only a token's own whitespace is made visible; a space the page
    writes between a position and a token, or in "head 0", stays a space (made visible, it
    would read "head·0"). Like ``markupsafe.Markup``, the type says the text is ready.

    ``visible`` returns it as it is; ``token_label`` makes one.

    >>> visible(Shown("head 0")), visible("head 0")
    ('head 0', 'head·0')
    """


def visible(s: str, whitespace: bool = True) -> str:
    """Make whitespace and control characters visible. With ``whitespace=False``, for
    running text, spaces, line breaks and the joiners of emoji and scripts stay; control
    characters and direction overrides are named (a U+202E turned the rest around).

    >>> visible("a b\\n\\x00"), visible("a b\\n\\u202e\\u200d", whitespace=False)
    ('a·b↵\\\\x00', 'a b\\n⟨U+202E⟩\\u200d')
    """
    if isinstance(s, Shown):
        return s
    out = []
    for ch in s:
        if ch in _VISIBLE:
            out.append(_VISIBLE[ch] if whitespace else ch)
        elif ord(ch) < 32 or 0x7F <= ord(ch) < 0xA0:
            out.append(f"\\x{ord(ch):02x}")  # NUL and other control characters
        elif not whitespace and ch not in _BIDI:
            out.append(ch)
        elif unicodedata.category(ch) in ("Cf", "Zl", "Zp") or ch == "\u00a0":
            out.append(f"⟨U+{ord(ch):04X}⟩")  # zero-width joiners, direction marks, …
        else:
            out.append(ch)
    return "".join(out)


def hex_bytes(data: bytes) -> str:
    """Bytes as two-digit hex, space-separated.

    >>> hex_bytes(b"\\xe2\\x80")
    'e2 80'
    """
    return " ".join(f"{b:02x}" for b in data)


def token_label(tok: TokenInfo) -> Shown:
    """What a chip shows: the visible string, or the bytes of a partial token. It is
    display text (``Shown``): an axis or a table that makes labels visible keeps it as it
    is, so the space between two bytes does not become "·".

    >>> token_label(TokenInfo(7, " a", b" a", (0, 2))), token_label(
    ...     TokenInfo(9, "", b"\\xe2\\x80", (0, 1), partial=True))
    ('·a', '‹e2 80›')
    """
    if tok.partial:
        return Shown(f"‹{hex_bytes(tok.bytes)}›")
    return Shown(visible(tok.string) if tok.string else "∅")


def chip(label: str, under: object, fill: str, tip: str, classes: str = "") -> str:
    """One chip: ``label`` over a small ``under`` (an id, a position, a weight), ``tip`` on hover.

    >>> chip("a<b", 7, "#fff", "id 7", "special")[-42:]
    'title="id 7">a&lt;b<small>7</small></span>'
    """
    cls = " ".join(["gv-chip", *classes.split()])
    return (f'<span class="{cls}" style="background:{fill}" title="{html.escape(tip)}">'
            f"{html.escape(label)}<small>{html.escape(str(under))}</small></span>")


def token_chip(tok: TokenInfo, pos: int, tip: str, classes: str = "") -> str:
    """A token's chip: its label over its id, dark if special, red if unknown, else pastel."""
    special = tok.special and not tok.unknown
    fill = (UNKNOWN_FILL if tok.unknown else SPECIAL_FILL if special
            else PALETTE[pos % len(PALETTE)])
    return chip(token_label(tok), tok.id, fill, tip, ("special " if special else "") + classes)


def token_chips_html(tokens: list[TokenInfo], text: str = "", max_tokens: int = 2000) -> str:
    """HTML chips with the id under each token; hovering shows id, bytes, source text.

    A newline inside a token also breaks the line of chips, so the layout
    follows the text.
    """
    parts = [CHIP_CSS, '<div class="gv-chips">']
    for pos, tok in enumerate(tokens[:max_tokens]):
        source = text[tok.span[0]:tok.span[1]]
        tip = (_("position {pos} · id {id} · bytes [{bytes}] · token {token}").format(
            pos=pos, id=tok.id, bytes=hex_bytes(tok.bytes),
            token=token_label(tok) if tok.partial else repr(tok.string))  # never "�"
            + (_(" · from {source}").format(source=repr(source)) if source != tok.string
               else ""))
        parts.append(token_chip(tok, pos, tip, "partial" if tok.partial else ""))
        if "\n" in tok.string and not tok.special:
            parts.append('<span class="gv-break"></span>')
    parts.append("</div>")
    return "".join(parts)


def token_table(tokens: list[TokenInfo], text: str) -> pd.DataFrame:
    """One row per token: position, id, token, bytes, character span, source text."""
    return pd.DataFrame({
        "position": range(len(tokens)),
        N_("id"): [t.id for t in tokens],
        N_("token"): [token_label(t) for t in tokens],
        N_("bytes"): [hex_bytes(t.bytes) for t in tokens],
        N_("chars"): [f"{t.span[0]}–{t.span[1]}" for t in tokens],
        N_("source text"): [visible(text[t.span[0]:t.span[1]]) for t in tokens],
        N_("kind"): [N_("unknown") if t.unknown else N_("special") if t.special else
                     N_("partial UTF-8") if t.partial else "" for t in tokens],
    })


def show_bytes(data: bytes) -> str:
    """Visible text when ``data`` is whole UTF-8, else its bytes.

    >>> show_bytes(b" a"), show_bytes(b"\\xe2\\x80")
    ('·a', '‹e2 80›')
    """
    try:
        return visible(data.decode("utf-8"))
    except UnicodeDecodeError:
        return f"‹{hex_bytes(data)}›"


def merges_table(trace, id_to_bytes) -> pd.DataFrame:
    """The BPE merge table: rank, the pair (ids and strings), count, new id and token."""
    def show(idx: int) -> str:
        return show_bytes(id_to_bytes(idx))

    return pd.DataFrame({
        N_("rank"): [m.rank for m in trace],
        N_("pair (ids)"): [f"{m.pair[0]} + {m.pair[1]}" for m in trace],
        N_("pair"): [f"{show(m.pair[0])} + {show(m.pair[1])}" for m in trace],
        N_("count"): [m.count for m in trace],
        N_("new id"): [m.new_id for m in trace],
        N_("new token"): [show(m.new_id) for m in trace],
    })


CROP_CSS = """
<style>
.gv-dropped{opacity:.38;text-decoration:line-through}
.gv-cut{font:600 12px 'Source Sans',ui-sans-serif,system-ui,sans-serif;
color:#b42318;margin:4px 0 3px}
</style>
"""


def prompt_chips_html(tokens: list[TokenInfo], text: str, dropped: int = 0,
                      max_tokens: int = 600) -> str:
    """Chips for ``tokens``; the first ``dropped`` are faded, then a ✂ line, then the kept ones.

    Kept tokens are numbered from position 0, as the model numbers them.

    >>> from gptviz.tokenizers.base import TokenInfo
    >>> t = [TokenInfo(i, c, c.encode(), (i, i + 1)) for i, c in enumerate("abc")]
    >>> html = prompt_chips_html(t, "abc", dropped=1); html.count('class="gv-chip"')
    3
    >>> "✂" in html
    True
    """
    if not dropped:
        return token_chips_html(tokens, text, max_tokens=max_tokens)
    cut, kept = tokens[:dropped], tokens[dropped:]
    shown_cut = cut[-max(1, max_tokens // 4):]  # the cut tokens nearest the window
    skipped = len(cut) - len(shown_cut)
    head = ('<div class="gv-cut">' + html.escape(ngettext(
        "… {n} earlier token not drawn", "… {n} earlier tokens not drawn", skipped).format(
            n=number(skipped, 0, grouping=True))) + "</div>" if skipped else "")
    cut_line = _("✂ cut here: the {cut} tokens above do not fit the context window; the model "
                 "reads the {kept} below (positions 0 to {last})").format(
        cut=number(len(cut), 0, grouping=True), kept=number(len(kept), 0, grouping=True),
        last=len(kept) - 1)
    return (CROP_CSS + head
            + f'<div class="gv-dropped">{token_chips_html(shown_cut, text, max_tokens)}</div>'
            + f'<div class="gv-cut">{html.escape(cut_line)}</div>'
            + token_chips_html(kept, text, max_tokens=max_tokens))
