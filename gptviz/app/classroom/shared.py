"""What the teacher's and the students' pages share: the one store of this server process,
who is asking (for the rate limits), and the refresh interval of live views."""

from __future__ import annotations

import os

import streamlit as st

from gptviz.app.serving.client import request_client
from gptviz.classroom.paths import DATA_ENV
from gptviz.classroom.store import ClassStore
from gptviz.classroom.stores import STORE_ENV, open_store

POLL_S = 1.0  # the projector's live count asks the store this often
FOLLOW_S = 1.5  # a student's page asks whether the class changed this often: it follows the
# teacher within FOLLOW_S plus one redraw, and 100 phones cost 67 small reruns a second


@st.cache_resource(show_spinner=False)
def _store(url: str, data: str) -> ClassStore:
    return open_store(url)


def class_store() -> ClassStore:
    """The server's class store (one per process, shared by every session; thread-safe)."""
    return _store(os.environ.get(STORE_ENV, ""), os.environ.get(DATA_ENV, ""))


def client() -> str:
    """Who is asking, for the rate limits: the connection's address, or behind the lecture
    hall's proxy (trusted by ``GPTVIZ_TRUSTED_PROXIES``) the client address it forwards
    (``serving.client.request_client``); "local" on this machine."""
    return request_client()
