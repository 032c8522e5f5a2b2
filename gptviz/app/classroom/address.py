"""The join address on the projector: from the setting (``GPTVIZ_JOIN_URL``, or
``streamlit run app.py -- --join-url URL``), else the address the teacher's browser used
when it is not this machine's loopback (a LAN address, or Community Cloud's host), else
this machine's LAN address; and its QR code, made here by ``segno`` (nothing is fetched).
"""

from __future__ import annotations

import html
import os
import sys
from dataclasses import dataclass

import segno
import streamlit as st

from gptviz.classroom.network import URL_ENV, base_url, is_loopback, join_url
from gptviz.i18n import N_, _

FLAG = "--join-url"
SOURCES = {"setting": N_("from the setting GPTVIZ_JOIN_URL (or --join-url)"),
           "request": N_("the address this browser uses"),
           "lan": N_("this machine's address on the local network")}  # shown translated


@dataclass(frozen=True)
class JoinAddress:
    url: str | None  # the students' link with the code; None: no address to give
    base: str | None
    source: str  # a key of SOURCES
    warning: str = ""  # what stops students reaching it, if anything


def _setting() -> str | None:
    args = sys.argv[1:]
    for i, arg in enumerate(args):
        if arg == FLAG and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(FLAG + "="):
            return arg.split("=", 1)[1]
    return os.environ.get(URL_ENV)


def _request_url() -> str | None:
    try:
        url = st.context.url
    except Exception:  # no browser (a bare script run)
        return None
    return url if isinstance(url, str) else None


def join_address(code: str) -> JoinAddress:
    """Where students join this class, and how that address was found."""
    base, source = base_url(_setting(), _request_url(), int(st.get_option("server.port")),
                            st.get_option("server.baseUrlPath") or "")
    if base is None:
        return JoinAddress(None, None, source, _(
            "This machine has no network address but its own: connect it to the room's "
            "network (Wi-Fi), or set {setting} to the address students can reach.").format(
            setting=URL_ENV))
    warning = ""
    if source == "lan" and is_loopback(st.get_option("server.address") or "0.0.0.0"):
        warning = _("Phones cannot reach this server: it listens on this machine only. "
                    "Restart it with `--server.address 0.0.0.0`.")
    return JoinAddress(join_url(base, code), base, source, warning)


def qr_image(url: str, px: int) -> str:
    """The QR code of ``url`` as an ``<img>`` of SVG (a data URI: the page's HTML keeps
    images, not inline SVG), ``px`` wide, black on white with its quiet zone."""
    uri = segno.make(url, error="m").svg_data_uri(scale=4, border=3, dark="#000",
                                                  light="#fff")
    return (f'<img class="gv-qr" src="{uri}" width="{int(px)}" height="{int(px)}" '
            f'alt="{html.escape(_("QR code of {url}").format(url=url))}" '
            f'title="{html.escape(url)}">')
