"""Who is asking, as the rate limits count clients: the connection's address, or behind a
trusted proxy (``GPTVIZ_TRUSTED_PROXIES``) the client it forwards (``gptviz.classroom.
forwarded``). "local" on this machine with no proxy, and in a bare script run."""

from __future__ import annotations

import streamlit as st

from gptviz.classroom.forwarded import client_address, trusted_networks

LOOPBACK = "127.0.0.1"  # st.context gives None for a loopback connection


def request_client() -> str:
    """This session's client address (see the module), for the rate limits."""
    try:
        peer = st.context.ip_address
        forwarded = st.context.headers.get_all("X-Forwarded-For")
    except Exception:  # no browser (a bare script run)
        return "local"
    peer = peer if isinstance(peer, str) and peer else LOOPBACK  # (a test's stand-in: none)
    found = client_address(peer, forwarded, trusted_networks())
    return "local" if found in (None, LOOPBACK, "::1") else found
