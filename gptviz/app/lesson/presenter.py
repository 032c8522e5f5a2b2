"""Presenter mode and the keyboard: what a teacher needs in front of a projector.

``?presenter=true`` hides the sidebar and the lesson's settings and sets larger type, for a
1280 × 720 screen with no horizontal scrolling. → and ← are the Next and Previous
buttons' own shortcuts (``st.button(shortcut=…)``). Streamlit keeps R for itself (rerun)
and refuses it as a button shortcut, so a small component listens for R and presses the
Reveal button (``reveal_key.js``); on a page without that button R keeps its usual
meaning.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from gptviz.app.speedups.component import component

PRESENTER = "presenter"  # the toggle's key and URL parameter
SPELLINGS = {"1": "true", "yes": "true", "on": "true", "0": "false", "no": "false",
             "off": "false"}
CONTROLS = "lesson_controls"  # the container of the settings presenter mode hides
REVEAL = "lesson_reveal"  # the Reveal button's key (R presses it)

# Always: wide formulas scroll inside their own box, never the page.
LESSON_CSS = """<style>
.stMainBlockContainer [data-testid="stMarkdownContainer"] .katex-display{overflow-x:auto;
overflow-y:hidden;padding:2px 0}
</style>"""
PRESENTER_CSS = f"""<style>
[data-testid="stSidebar"],[data-testid="stSidebarCollapsedControl"],
[data-testid="stExpandSidebarButton"],.st-key-{CONTROLS}{{display:none !important}}
.stMainBlockContainer{{max-width:none;padding:3.75rem 2rem 3rem}}
.stMainBlockContainer .gv-chips{{font-size:21px}}
.stMainBlockContainer .gv-chip small{{font-size:12px}}
.stMainBlockContainer [data-testid="stMarkdownContainer"] p,
.stMainBlockContainer [data-testid="stMarkdownContainer"] li{{font-size:1.3rem;line-height:1.5}}
.stMainBlockContainer .katex-display .katex{{font-size:1.3em}}
.stMainBlockContainer [data-testid="stCaptionContainer"] p{{font-size:1.05rem}}
.stMainBlockContainer h1{{font-size:1.6rem;padding:0}}
</style>"""


def presenter_toggle() -> bool:
    """The toggle (``?presenter=true``; 1, yes and on are read as true, 0, no and off as
    false), and the page's style for its state.

    The URL is written from here, not by Streamlit's binding: the binding reads true / false
    only and dropped ``presenter=1`` from the address, so a reload left presenter mode."""
    if PRESENTER not in st.session_state:  # the page's first run: the link says
        raw = str(st.query_params.get(PRESENTER, "")).lower()
        st.session_state[PRESENTER] = SPELLINGS.get(raw, raw) == "true"
    on = st.toggle("Presenter mode", key=PRESENTER,
                   help="For a projector: no sidebar or settings, larger type. Keys: → next, "
                        "← previous, R reveal.")
    if on:
        st.query_params[PRESENTER] = "true"
    else:
        st.query_params.pop(PRESENTER, None)  # off is the default: no parameter
    st.html(LESSON_CSS + (PRESENTER_CSS if on else ""))
    component("gptviz.reveal_key", js="reveal_key.js", folder=Path(__file__).parent,
              isolate_styles=True)(key="gv_reveal_listener",
                                   data={"button": f".st-key-{REVEAL} button"})
    return bool(on)


def nav_buttons(step: int, n_steps: int, key: str = "step") -> None:
    """Previous (←) and Next (→), each a callback on ``st.session_state[key]``."""
    def go(delta: int) -> None:
        st.session_state[key] = min(max(int(st.session_state.get(key, 1)) + delta, 1), n_steps)

    row = st.container(horizontal=True, horizontal_alignment="right", width="content")
    # no icons: the shortcut's own hint already draws the arrow ("→ Next →" with both)
    row.button("Previous", key="lesson_prev", shortcut="Left",
               on_click=go, args=(-1,), disabled=step <= 1)
    row.button("Next", key="lesson_next", shortcut="Right",
               on_click=go, args=(1,), disabled=step >= n_steps, type="primary")
