"""The address students type or scan: a setting, else the request's own host when it is
not this machine's loopback (a LAN address, or Community Cloud's), else this machine's
LAN address.

The LAN address is the one the system would send from on the local network. It is found
by connecting a UDP socket, which only asks the routing table: no packet leaves.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
from urllib.parse import urlencode, urlsplit, urlunsplit

JOIN_PATH = "join"  # the students' page
URL_ENV = "GPTVIZ_JOIN_URL"  # the setting: the address students use, e.g. http://10.0.0.5:8501
LOOPBACK_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost", ""}


def is_loopback(host: str | None) -> bool:
    """>>> is_loopback("127.0.0.1"), is_loopback("localhost"), is_loopback("10.1.2.3")
    (True, True, False)
    """
    if host is None or host.lower() in LOOPBACK_NAMES:
        return True
    with contextlib.suppress(ValueError):
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    return False


def lan_address() -> str | None:
    """This machine's address on its local network (e.g. "192.168.1.20"), or None when
    it has none but loopback."""
    for probe in ("10.255.255.255", "192.168.255.255"):  # routing only: nothing is sent
        with contextlib.suppress(OSError), socket.socket(socket.AF_INET,
                                                         socket.SOCK_DGRAM) as s:
            s.connect((probe, 9))
            found = s.getsockname()[0]
            if not is_loopback(found) and found != "0.0.0.0":
                return found
    with contextlib.suppress(OSError):
        for *_, addr in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET):
            if not is_loopback(addr[0]):
                return addr[0]
    return None


def base_url(setting: str | None, request_url: str | None, port: int, path: str = ""
             ) -> tuple[str | None, str]:
    """The app's base address for students and where it came from ("setting", "request",
    "lan"), or None when there is none (only loopback).

    >>> base_url("http://class.local:8501/", None, 8501)
    ('http://class.local:8501', 'setting')
    >>> base_url(None, "https://gptviz.streamlit.app/lesson", 8501)
    ('https://gptviz.streamlit.app', 'request')
    >>> base_url(None, "http://192.168.1.20:8501/lesson", 8501, "gv")
    ('http://192.168.1.20:8501/gv', 'request')
    """
    prefix = "/" + path.strip("/") if path.strip("/") else ""
    if setting and setting.strip():
        return setting.strip().rstrip("/"), "setting"
    if request_url:
        parts = urlsplit(request_url)
        if parts.scheme in ("http", "https") and not is_loopback(parts.hostname):
            return urlunsplit((parts.scheme, parts.netloc, prefix, "", "")), "request"
    lan = lan_address()
    return (f"http://{lan}:{port}{prefix}" if lan else None), "lan"


def join_url(base: str, code: str) -> str:
    """>>> join_url("http://10.0.0.5:8501", "ACDE3F")
    'http://10.0.0.5:8501/join?code=ACDE3F'
    """
    return f"{base.rstrip('/')}/{JOIN_PATH}?{urlencode({'code': code})}"
