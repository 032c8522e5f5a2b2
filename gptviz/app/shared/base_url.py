"""A page opened at its own address connects at once: the app's root written into the page.

Opened at a page's address (``/attention``, a shared link, a refresh), Streamlit's client
(1.67) does not know where the app's root is. It asks ``/attention/_stcore/health`` first,
gets a 404, waits 100 ms (its shortest retry) and only then asks ``/_stcore/health``
and opens the websocket. Every page but Home paid this on every fresh load: ~130 ms on a
loopback server, measured in ``benchmarks/pages.py``; across a network, the 100 ms and two
more round trips. Streamlit's client takes the server's address from
``window.__streamlit.BACKEND_BASE_URL`` when the page sets it (Streamlit's pull request
11378, for hosts that serve ``index.html`` themselves; 11537 names this 404 as what the
setting could fix), but its own server serves ``index.html`` as a static file.

``serve_base_url(pages)`` has Streamlit's server put a short script (``base_script``) into
that file as it sends it, before the app's code: at a page of this app, the script strips
the page's name off the address and sets ``BACKEND_BASE_URL`` to the rest, unless a host has
set it already. Only this app's page names are stripped, so an app served under a path
prefix or behind a proxy keeps its prefix; at any other address nothing is set and the
client probes as before. The router calls it on every run; it patches once per process
(the first page served after a server starts is still the plain file). Nothing else the
server sends is changed, and if Streamlit's files or server change shape, nothing is done.
"""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

HANDLER = "_StreamlitStaticFiles"  # the class of Streamlit's own static file handler (1.67)
MARKER = b'<script type="module"'  # index.html's first module script: the app's code
_done = False
_lock = threading.Lock()

_SCRIPT = """<script>(function () {
  try {
    var pages = %s, host = window.__streamlit || {};
    var path = location.pathname.replace(/\\/+$/, ""), cut = path.lastIndexOf("/");
    if (host.BACKEND_BASE_URL || pages.indexOf(decodeURIComponent(path.slice(cut + 1))) < 0)
      return;
    window.__streamlit = Object.assign({}, host,
      {BACKEND_BASE_URL: location.origin + path.slice(0, cut + 1)});
  } catch (e) {}  /* an odd address: Streamlit probes for the server as before */
})();</script>"""


def base_script(pages: Iterable[str]) -> bytes:
    """The script that sets the app's root address at a page's address, for the given page
    names (``st.Page.url_path``; the main page's empty name is left out).

    >>> b'["attention"]' in base_script(["", "attention"])
    True
    """
    names = sorted({p for p in pages if p})
    return (_SCRIPT % json.dumps(names).replace("<", "\\u003c")).encode()


def with_script(html: bytes, script: bytes) -> bytes:
    """``html`` with ``script`` just before its first module script; unchanged without one.

    >>> with_script(b'<head><script type="module" src="a.js"></script>', b"<s/>")
    b'<head><s/><script type="module" src="a.js"></script>'
    >>> with_script(b"<p>no app here</p>", b"<s/>")
    b'<p>no app here</p>'
    """
    at = html.find(MARKER)
    return html if at < 0 else html[:at] + script + html[at:]


Send = Callable[[dict[str, Any]], Awaitable[None]]


def inserting(send: Send, script: bytes) -> Send:
    """An ASGI ``send`` that passes every message on, except that a 200 HTML reply is held
    until its last part and sent with ``script`` in it (``with_script``) and its
    Content-Length set to match."""
    held: dict[str, Any] = {}
    parts: list[bytes] = []

    async def send_on(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            headers = {k.lower(): v for k, v in message.get("headers", [])}
            if message.get("status") == 200 and headers.get(b"content-type", b"").startswith(
                    b"text/html"):
                held["start"] = message
                return
        elif message["type"] == "http.response.body" and "start" in held:
            parts.append(message.get("body", b""))
            if message.get("more_body"):
                return
            body = with_script(b"".join(parts), script)
            start = held.pop("start")
            headers = [(k, v) for k, v in start.get("headers", [])
                       if k.lower() != b"content-length"]
            await send({**start, "headers": [*headers,
                                             (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})
            return
        await send(message)

    return send_on


def serve_base_url(pages: Iterable[str]) -> bool:
    """Have Streamlit's server send its ``index.html`` with ``base_script(pages)`` in it, the
    first time only (True then; False after, or where Starlette cannot be imported)."""
    global _done
    with _lock:
        if _done:
            return False
        _done = True
        try:
            from starlette.staticfiles import StaticFiles
        except ImportError:
            return False
        script, original = base_script(pages), StaticFiles.__call__
        original = getattr(original, "__wrapped__", original)  # never wrapped twice

        @functools.wraps(original)
        async def __call__(self, scope, receive, send):  # noqa: N807 (the method it wraps)
            if type(self).__name__ == HANDLER and scope.get("type") == "http" \
                    and scope.get("method") == "GET":
                send = inserting(send, script)
            await original(self, scope, receive, send)

        StaticFiles.__call__ = __call__
        return True
