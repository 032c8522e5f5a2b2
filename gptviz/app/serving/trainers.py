"""The server-wide trainer slots: every page that trains (the Training page, the Positional
page's live retrain) draws from the same few, so a class cannot start more runs at once
than the server can carry."""

from __future__ import annotations

import os

import streamlit as st

from gptviz.train.slots import TrainerSlots


@st.cache_resource(show_spinner=False)
def trainer_slots() -> TrainerSlots:
    """The server-wide limit on concurrent trainers (GPTVIZ_MAX_TRAINERS, default 1)."""
    return TrainerSlots(max(1, int(os.environ.get("GPTVIZ_MAX_TRAINERS", "1"))))
