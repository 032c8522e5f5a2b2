"""Presenter mode on every page: a projector first, a wide screen second.

``?presenter=true`` (or the toggle in each page's title row) hides the sidebar, folds the
page's introduction and notes into a "?" popover and the prompt into a "Prompt" popover,
and sets chart text to at least ``CHART_FONT_PX`` so a room can read it; the mode is kept
for the session and written into every page's link. The keyboard (``presenter_keys.js``):
← / → move between a page's views or the lesson's steps, N takes the next token, R reveals,
? lists the keys. The figure then starts in the first screen of a 1024×768, 1280×720 or
1280×800 projector (tests/test_browser_presenter.py).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import streamlit as st

from gptviz.app.shared import language
from gptviz.app.speedups.component import component
from gptviz.app.speedups.history import one_entry_per_view
from gptviz.i18n import _

PRESENTER = "presenter"  # the toggle's key and URL parameter
SPELLINGS = {"1": "true", "yes": "true", "on": "true", "0": "false", "no": "false",
             "off": "false"}
CHART_FONT_PX = 16  # chart text in presenter mode: axis titles and tick labels at least this
KEYS = dict(next="lesson_next", prev="lesson_prev", reveal="lesson_reveal", step="gen_next")

# Always: wide formulas scroll inside their own box, never the page; the title row stays
# one line where it can.
BASE_CSS = """<style>
.stMainBlockContainer [data-testid="stMarkdownContainer"] .katex-display{overflow-x:auto;
overflow-y:hidden;padding:2px 0}
.st-key-gv_top h1{padding:0}
.st-key-gv_top{row-gap:.25rem}
#gv-keys-help{position:fixed;inset:0;z-index:1000100;display:flex;align-items:center;
justify-content:center;background:rgba(20,22,30,.45)}
#gv-keys-help .gv-keys-card{background:var(--st-background-color,#fff);color:inherit;
border-radius:.75rem;padding:1.25rem 1.75rem;font-size:1.2rem;box-shadow:0 8px 30px #0004}
#gv-keys-help td{padding:.3rem .8rem}
#gv-keys-help kbd{font:inherit;font-weight:600;border:1px solid #b8bcc6;border-radius:.3rem;
padding:0 .45rem;background:rgba(128,135,150,.12)}
#gv-keys-help small{opacity:.7}
</style>"""
PRESENTER_CSS = """<style>
[data-testid="stSidebar"],[data-testid="stSidebarCollapsedControl"],
[data-testid="stExpandSidebarButton"],[data-testid="stSidebarNav"]{display:none !important}
.stMainBlockContainer{max-width:none;padding:3.25rem 2rem 0}
.st-key-gv_top h1{font-size:1.6rem}
.stMainBlockContainer .gv-chips{font-size:21px}
.stMainBlockContainer .gv-chip small{font-size:12px}
.stMainBlockContainer [data-testid="stMarkdownContainer"] p,
.stMainBlockContainer [data-testid="stMarkdownContainer"] li{font-size:1.2rem;line-height:1.45}
.stMainBlockContainer .katex-display .katex{font-size:1.3em}
.stMainBlockContainer [data-testid="stCaptionContainer"] p{font-size:1.05rem}
.stMainBlockContainer [data-testid="stTab"] p{font-size:1.15rem}
.stMainBlockContainer .gv-topk{zoom:1.25}
</style>"""


def _help_texts() -> dict[str, Any]:
    return {"title": _("Keyboard shortcuts"),
            "close": _("Press ? or Esc, or click, to close."),
            "rows": [["→ / ←", _("next / previous view, or lesson step")],
                     ["N", _("Next token (Generation)")],
                     ["R", _("reveal the answer (Lesson)")],
                     ["?", _("show or hide this list")]]}


def _keys() -> Callable[..., Any]:
    return component("gptviz.keys", js="presenter_keys.js", folder=Path(__file__).parent)


def presenting() -> bool:
    """Whether presenter mode is on for this session (the link's ``?presenter=`` the first
    time a page asks, the toggle after that)."""
    state = st.session_state
    if PRESENTER not in state:
        raw = str(st.query_params.get(PRESENTER, "")).lower()
        state[PRESENTER] = SPELLINGS.get(raw, raw) == "true"
    return bool(state[PRESENTER])


def presenter_toggle() -> bool:
    """The toggle, the URL parameter that keeps it in the page's link, the page's style for
    the mode, and the keyboard; returns whether presenter mode is on.

    The URL is written from here, not by Streamlit's binding: the binding reads true / false
    only and dropped ``presenter=1`` from the address, so a reload left presenter mode."""
    presenting()
    on = st.toggle(_("Presenter mode"), key=PRESENTER,
                   help=_("For a projector: no sidebar, the introduction folded under ?, "
                          "larger type. Keys: → ← views and steps, N next token, R reveal, ? "
                          "all keys."))
    if on:
        st.query_params[PRESENTER] = "true"
    else:
        st.query_params.pop(PRESENTER, None)  # off is the default: no parameter
    st.html(BASE_CSS + (PRESENTER_CSS if on else ""))
    _keys()(key="gv_keys", data=dict(KEYS, presenter=bool(on), texts=_help_texts()))
    one_entry_per_view()
    return bool(on)


@dataclass
class Top:
    """A page's title row: whether presenter mode is on, and the row itself (pages put
    their prompt's popover in it)."""

    presenter: bool
    row: Any

    @contextlib.contextmanager
    def folded(self, label: str, icon: str | None = None) -> Iterator[None]:
        """What presenter mode folds into a popover of the title row; shown in place
        otherwise."""
        if self.presenter:
            with self.row.popover(label, icon=icon):
                yield
        else:
            yield


def page_top(title: str, intro: str | None = None, latex: str | None = None,
             notes: Callable[[], None] | None = None, short: str | None = None) -> Top:
    """The title row (title, presenter toggle) and the page's introduction: in place, or
    in presenter mode folded into a "?" popover beside the title (and the title ``short``,
    so the row's buttons stay on one line)."""
    row = st.container(horizontal=True, vertical_alignment="center", key="gv_top")
    row.title(short if short and presenting() else title, anchor=False)
    with row:
        on = presenter_toggle()
    if on:  # the sidebar's language picker is hidden: the title row folds one (its code)
        from gptviz.i18n import current

        with row.popover(current().upper(), icon=":material/translate:"):
            language.picker()
    top = Top(on, row)
    if intro or latex or notes:
        with top.folded("?"):
            if intro:
                st.markdown(intro)
            if latex:
                st.latex(latex)
            if notes:
                notes()
    return top


def link_params() -> dict[str, str]:
    """Query parameters that a link to another page carries to keep the reader's mode."""
    return ({PRESENTER: "true"} if presenting() else {}) | language.link_params()


def legible(fig: Any) -> Any:
    """A copy of a plotly figure whose text is at least ``CHART_FONT_PX`` (axis titles, tick
    labels, legend, annotations), for presenter mode, its token ticks thinned again for
    that size (``ticks.thin_ticks``); the figure given is not changed (it may be shared
    through a cache)."""
    import plotly.graph_objects as go

    from gptviz.app.shared.ticks import thin_ticks

    out = go.Figure(fig)
    px = CHART_FONT_PX
    size = out.layout.font.size or 12
    out.update_layout(font_size=max(size, px), legend_font_size=px)
    for axis in list(out.select_xaxes()) + list(out.select_yaxes()):
        axis.tickfont.size = max(axis.tickfont.size or 0, px)
        axis.title.font.size = max(axis.title.font.size or 0, px)
    for note in out.layout.annotations or ():
        note.font.size = max(note.font.size or 0, px - 2)
    if out.layout.title.text:
        out.layout.title.font.size = max(out.layout.title.font.size or 0, px + 2)
    return thin_ticks(out)
