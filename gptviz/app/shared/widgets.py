"""Small Streamlit pieces every page uses: capped text, messages, CSV downloads, charts and
the tabs that hold a page's views."""

from __future__ import annotations

import contextlib
import html
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from gptviz.app.shared.chips import visible
from gptviz.app.shared.numbers import column_text
from gptviz.app.shared.presenter import legible, presenting
from gptviz.app.shared.ticks import thin_ticks
from gptviz.app.shared.views import VISIT, view_tabs  # noqa: F401 - the pages' import
from gptviz.app.speedups import heatcanvas, svgbox, svgfigure
from gptviz.app.speedups.download import download_text
from gptviz.app.speedups.formula_fit import fit_formulas
from gptviz.app.speedups.mount import numbers_by_language
from gptviz.app.speedups.prefetch import prefetch_charts
from gptviz.app.speedups.svgplot import SvgChart
from gptviz.i18n import _, number, separators

TEXT_LIMIT = 20_000  # characters a page analyses; longer input is cut, with a message
LINK_LIMIT = 1_000  # characters of a text box kept in the page's link (?prompt=…)
# st.session_state key of the page being run (set by the router). The same text box on two
# pages must be two widgets: the browser keeps one widget's state across pages, and a text
# that came from the link or from another page was lost on the way (an empty box).
PAGE = "gptviz_page"
SHOWN_DIMS = 12  # columns of a (tokens x dimensions) table on screen; its CSV has them all


def cap_text(text: str, limit: int = TEXT_LIMIT) -> str:
    """Return at most ``limit`` characters, saying so when the text was cut."""
    if len(text) > limit:
        st.warning(
            _("The text has {n} characters; only the first {limit} are used here. "
              "Paste a shorter passage to see all of it.").format(
                n=number(len(text), 0, grouping=True), limit=number(limit, 0, grouping=True)),
            icon=":material/content_cut:")
        return text[:limit]
    return text


def linked_text_area(label: str, key: str, default: str, **kwargs: Any) -> str:
    """A text box whose text is kept in the page's link (``?key=…``) while it is short.

    The text follows the student from page to page. The link opens the page on that text,
    so a teacher can share it. Longer texts stay out
    of the link (a 200,000-character prompt would make a 600 KB URL, which proxies and
    chat apps cut): the box keeps them, and a caption says the link does not.
    """
    if key not in st.session_state:  # not a widget's key: Streamlit keeps it across pages
        st.session_state[key] = st.query_params.get(key, default)
    box = box_key(key, st.session_state.get(PAGE, ""))
    if box not in st.session_state:
        st.session_state[box] = st.session_state[key]
    text = st.text_area(label, key=box, **kwargs) or ""
    st.session_state[key] = text
    if len(text) <= LINK_LIMIT:
        if st.query_params.get(key) != text:
            st.query_params[key] = text
    else:
        st.query_params.pop(key, None)
        st.caption(_("This text ({n} characters) is too long for the page's link, which keeps "
                     "up to {limit}: to share it, send the text itself.").format(
            n=number(len(text), 0, grouping=True), limit=number(LINK_LIMIT, 0, grouping=True)))
    return text


def set_linked_text(key: str, text: str) -> None:
    """Widget callback: put ``text`` in the linked text box ``key`` of this page."""
    st.session_state[key] = text
    st.session_state[box_key(key, st.session_state.get(PAGE, ""))] = text


def box_key(key: str, page: str = "") -> str:
    """The widget key of the linked text ``key`` on ``page`` (a URL path, "" for a page run
    alone, as in tests): one box per page (see PAGE), one text for them all (``key``).

    >>> box_key("prompt", "attention"), box_key("prompt")
    ('prompt@attention', 'prompt@')
    """
    return f"{key}@{page}"


def problem(message: str) -> None:
    """A bad-input message: what is wrong and what to do (never a traceback)."""
    st.error(message, icon=":material/error:")


# Display formulas wider than their column scroll sideways, with a scrollbar that shows (the
# stock one sat under the markdown box's clipped edge, so a long formula looked cut off).
# The 3 px pad holds the 2 px spacer KaTeX ends a subscript with, so a formula that fits
# gets no scrollbar.
FORMULA_CSS = ("<style>.st-key-gv-fit,.st-key-gv-prefetch{display:none}"  # empty elements
               '[data-testid="stTabs"] [role="tablist"]{flex-wrap:wrap;row-gap:.25rem}'
               ".stMarkdown .katex-display{overflow-x:auto;overflow-y:hidden;"
               "padding-bottom:2px;scrollbar-width:thin;scrollbar-color:#b8bcc6 transparent}"
               ".stMarkdown .katex-display>.katex{padding-right:3px}"
               ".stMarkdown .katex-display::-webkit-scrollbar{height:7px}"
               ".stMarkdown .katex-display::-webkit-scrollbar-thumb{background:#b8bcc6;"
               "border-radius:4px}"
               # the sidebar's model names wrap ("trained-mathematics-char (this se…" was cut)
               ".st-key-model button{height:auto;max-width:100%;border-radius:1rem}"
               ".st-key-model button p{white-space:normal;overflow-wrap:anywhere;"
               "text-align:left}</style>")


def page_style() -> None:
    """Styles every page shares (the formulas'), the script that fits wide formulas to
    their column (``formula_fit``) and the one that loads plotly.js once the tab is idle
    (``prefetch``); drawn once per run, by the router."""
    st.html(FORMULA_CSS)
    fit_formulas()
    prefetch_charts()


# st.code's look for plain text (the theme's monospace face, a light box, wrapped lines), and
# st.table's for a small table of plain text
TEXT_CSS = ("<style>.gv-text{font-family:'Source Code Pro',ui-monospace,monospace;"
            "font-size:.875rem;line-height:1.6;background:rgba(128,135,150,.1);"
            "border-radius:.5rem;padding:1rem 1.25rem;white-space:pre-wrap;"
            "overflow-wrap:anywhere}"
            ".gv-table{border-collapse:collapse;width:100%;font-size:.875rem}"
            ".gv-table th,.gv-table td{border:1px solid rgba(128,135,150,.25);"
            "padding:.35rem .75rem;text-align:left;white-space:pre-wrap}"
            ".gv-table th{font-weight:400;opacity:.7}.gv-table td.gv-num{text-align:right}"
            ".gv-scroll,.gv-wide{overflow:auto;scrollbar-width:thin;"  # a scrollbar
            "scrollbar-color:#b8bcc6 transparent}"  # that shows: more columns to the right
            ".gv-scroll th{position:sticky;top:0;"
            "background:var(--st-background-color,#fff)}"
            "</style>")


def text_block(text: str, container=st) -> None:
    """Plain text in a monospace box with its lines wrapped, as ``st.code(text,
    language=None, wrap_lines=True)`` shows it, but without the syntax highlighter that
    st.code makes a page fetch (1.5 MB of JavaScript, ~0.5 s of a fresh page's load).
    A ``<div>``, not a ``<pre>``: HTML drops a newline that opens a ``<pre>``. Control and
    format characters are named (``\\x1b``, ``⟨U+202E⟩``), as on the token chips."""
    container.html(f'{TEXT_CSS}<div class="gv-text">{html.escape(visible(text, False))}</div>')


def number_text(v: float, decimals: int = 4) -> str:
    """A float as a table shows it: ``decimals`` places, or 3 significant digits in
    scientific notation when that would show 0 for a non-zero value.

    >>> number_text(0.15634), number_text(-2e-7), number_text(0.0), number_text(float("nan"))
    ('0.1563', '-2.000e-07', '0.0000', 'NaN')
    """
    if v != v:
        return "NaN"
    if v != 0 and abs(v) < 0.5 * 10 ** -decimals:
        text = f"{v:.3e}"
    else:
        text = f"{v:.{decimals}f}"
    dec = separators()[0]  # the reader's decimal sign: 0,1563 in Spanish
    return text if dec == "." else text.replace(".", dec)


def _cell(v: Any) -> str:
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.number)):
        return f"<td>{html.escape(str(v))}</td>"
    if isinstance(v, (int, np.integer)):
        return f'<td class="gv-num">{int(v)}</td>'
    return f'<td class="gv-num" data-v="{float(v)!r}">{number_text(float(v))}</td>'


def plain_table(df: pd.DataFrame, container=st, *, height: int | None = None) -> None:
    """A table drawn as plain HTML, its cells shown exactly as they are: ``st.table`` reads
    each cell as Markdown (``$x$`` becomes a formula, ``*a*`` italics), and ``st.dataframe``
    makes the page fetch a data grid (~1.5 MB of JavaScript). Numbers are right-aligned,
    floats shown as ``number_text`` writes them and kept exactly in ``data-v`` (what tests
    read back); ``height`` (px) scrolls a long table under a header that stays in view."""
    head = "".join(f"<th>{html.escape(_(str(c)))}</th>" for c in df.columns)  # N_ headers
    rows = "".join("<tr>" + "".join(_cell(v) for v in row) + "</tr>"
                   for row in df.itertuples(index=False))
    table = (f'<table class="gv-table"><thead><tr>{head}</tr></thead>'
             f"<tbody>{rows}</tbody></table>")
    if height is not None:
        table = f'<div class="gv-scroll" style="max-height:{int(height)}px">{table}</div>'
    else:  # a table wider than its column scrolls sideways (it was cut through a column)
        table = f'<div class="gv-wide">{table}</div>'
    container.html(TEXT_CSS + table)


def dataframe(df: pd.DataFrame, container=st, column_config: dict | None = None,
              **kwargs: Any) -> None:
    """``data_grid`` with the column headers in the reader's language (headers marked ``N_``
    where the table is made; ``column_config`` keyed by the English headers). The table's
    CSV keeps the English headers."""
    config = {_(str(k)): v for k, v in (column_config or {}).items()}
    data_grid(df.rename(columns=lambda c: _(str(c))), container,
              column_config=config or None, **kwargs)


def data_grid(df: pd.DataFrame, container=st, column_config: dict | None = None,
              **kwargs: Any) -> None:
    """``st.dataframe`` with its numbers in the reader's language (0,1235 in Spanish): a
    NumberColumn's format ("%.4f", "localized", "percent") is written here (``column_text``)
    as the cells' display values, the grid keeping the numbers themselves (it sorts and
    copies them as numbers). A float column with no format of its own is written as
    ``plain_table`` writes it (``number_text``) in such a grid, and in every grid of a
    language whose decimal sign is not the point (Streamlit's default writes 0.1235)."""
    config, shown = dict(column_config or {}), {}
    for name, cc in config.items():
        kind = cc.get("type_config", {}) if isinstance(cc, dict) else {}
        write = column_text(kind["format"]) if kind.get("format") else None
        if write is not None and name in df.columns:  # the grid's format would win
            shown[name] = write
            config[name] = {**cc, "type_config": {k: v for k, v in kind.items()
                                                  if k != "format"}}
    if (shown or separators()[0] != ".") and df.columns.is_unique:
        shown |= {c: number_text for c in df.columns
                  if c not in shown and pd.api.types.is_float_dtype(df[c])}
    data = df.style.format(shown) if shown else df
    container.dataframe(data, column_config=config or None, **kwargs)


def csv_download(df: pd.DataFrame, filename: str, label: str | None = None) -> None:
    """A button that saves the table as ``filename`` (``download.download_text``): the
    file in a plain machine format (headers and numbers as the code writes them, "0.25"
    in every language), the button's ``label`` in the reader's."""
    download_text(label or _("Download CSV"), df.to_csv(index=False), filename,
                  key=f"csv-{filename}")


def chart(fig: go.Figure | SvgChart, key: str | None = None, container=st) -> None:
    """A chart at full width: an inline SVG chart (``svgplot``), a figure of heatmaps on a
    canvas (``heatcanvas``), both without a chart library to load (in stock mode both by
    ``st.plotly_chart``), or any other plotly figure with at most 32 token labels per axis.

    Do not pass a non-heatmap plotly figure shared through a cache: this changes its ticks.
    """
    if isinstance(fig, SvgChart) and presenting():  # plotly lays out 16-px text for a room
        plot(svgfigure.figure(fig), key=key, container=container)
    elif isinstance(fig, SvgChart):
        svgbox.draw(fig, key=key, container=container)
    else:
        plot(fig if heatcanvas.drawable(fig) else thin_ticks(fig), key=key, container=container)


def plot(fig: go.Figure, key: str | None = None, container=st, **kwargs: Any) -> None:
    """A plotly figure as it is, at full width: on a canvas when its traces are all
    heatmaps (``heatcanvas``: the page loads no chart library; stock mode: plotly.js), else
    by plotly.js.
    ``kwargs`` go to ``st.plotly_chart`` (e.g. ``on_select``)."""
    if presenting():
        fig = legible(fig)
    if heatcanvas.drawable(fig) and not kwargs:
        heatcanvas.draw(fig, key=key, container=container)
    else:  # numbers as the reader's language writes them (plotly's separators)
        with numbers_by_language(fig):
            container.plotly_chart(fig, width="stretch", key=key, **kwargs)


@contextlib.contextmanager
def on_demand(label: str, key: str, icon: str = ":material/table:") -> Iterator[bool]:
    """An expander whose content is drawn only while it is open; yields whether it is.

    Closed, it costs the page nothing (a hidden table still mounts its data grid and
    downloads the grid's code); opening it reruns the page with the content. Its state
    lives in ``st.session_state[key]``.
    """
    box = st.expander(label, icon=icon, key=key, on_change="rerun")
    with box:
        yield bool(box.open)
