"""The lesson's part of presenter mode (``gptviz.app.shared.presenter``): its settings box,
which presenter mode hides, and the Previous / Next buttons that → and ← press."""

from __future__ import annotations

import streamlit as st

from gptviz.app.shared.presenter import KEYS
from gptviz.i18n import _

CONTROLS = "lesson_controls"  # the container of the settings presenter mode hides
REVEAL = KEYS["reveal"]  # the Reveal button's key (R presses it)
HIDE_CONTROLS_CSS = f"<style>.st-key-{CONTROLS}{{display:none !important}}</style>"


def nav_buttons(step: int, n_steps: int, key: str = "step") -> None:
    """Previous (←) and Next (→), each a callback on ``st.session_state[key]``."""
    def go(delta: int) -> None:
        st.session_state[key] = min(max(int(st.session_state.get(key, 1)) + delta, 1), n_steps)

    row = st.container(horizontal=True, horizontal_alignment="right", width="content")
    # no icons: the shortcut's own hint already draws the arrow ("→ Next →" with both)
    row.button(_("Previous"), key=KEYS["prev"], shortcut="Left",
               on_click=go, args=(-1,), disabled=step <= 1)
    row.button(_("Next"), key=KEYS["next"], shortcut="Right",
               on_click=go, args=(1,), disabled=step >= n_steps, type="primary")
