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

``serve_base_url(pages)`` has Streamlit's server put a short script (``SCRIPT``) into
that file as it sends it, before the app's code, when the address it answers is one of this
app's pages (its path below the server's own base path, ``server.baseUrlPath``, is a page's
name): the script then drops that last part of the browser's address and sets
``BACKEND_BASE_URL`` to the rest, unless a host has set it already. So an app under a base
path, or behind a proxy that strips its prefix, keeps its prefix; at the main page and at any
other address no script is added and the client probes as before. The same insertion also
carries what a page's head should ask for early (``heads``: the fonts its first view draws
with, ``fonts.py``), at the main page too. The router calls it on every
run; it patches once per process (the first page served after a server starts is still the
plain file). Nothing else the server sends is changed. The changed file gets its own ETag, is
revalidated against it (a browser holding the plain file gets the changed one) and is
always sent whole (no byte ranges); a HEAD request is answered for the plain file.
"""

from __future__ import annotations

import functools
import hashlib
import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

HANDLER = "_StreamlitStaticFiles"  # the class of Streamlit's own static file handler (1.67)
MARKER = b'<script type="module"'  # index.html's first module script: the app's code
_done = False
_lock = threading.Lock()

SCRIPT = b"""<script>(function () {
  var host = window.__streamlit || {}, path = location.pathname.replace(/\\/+$/, "");
  if (!host.BACKEND_BASE_URL) window.__streamlit = Object.assign({}, host,
    {BACKEND_BASE_URL: location.origin + path.slice(0, path.lastIndexOf("/") + 1)});
})();</script>"""  # sent only at a page's address: the address without the page's name


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


def inserting(send: Send, script: bytes, tag: bytes | None = None) -> Send:
    """An ASGI ``send`` that passes every message on, except that a 200 HTML reply is held
    until its last part and sent with ``script`` in it (``with_script``), its Content-Length
    set to match, its ETag marked ``tag`` (``version(script)``) and no byte ranges offered;
    a 304 keeps the marked ETag. A held reply that goes on in any other way (a server
    extension's message) is let through unchanged."""
    held: dict[str, Any] = {}
    parts: list[bytes] = []
    tag = tag or version(script)

    def marked(start: dict[str, Any], drop: tuple[bytes, ...] = ()) -> list:
        return [(k, tag_etag(v, tag) if k.lower() == b"etag" else v)
                for k, v in start.get("headers", []) if k.lower() not in drop]

    async def send_on(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            headers = {k.lower(): v for k, v in message.get("headers", [])}
            if message.get("status") == 200 and headers.get(b"content-type", b"").startswith(
                    b"text/html"):
                held["start"] = message
                return
            if message.get("status") == 304:  # "not modified": still the changed version
                message = {**message, "headers": marked(message)}
        elif message["type"] == "http.response.body" and "start" in held:
            parts.append(message.get("body", b""))
            if message.get("more_body"):
                return
            body = with_script(b"".join(parts), script)
            start = held.pop("start")
            headers = marked(start, drop=(b"content-length", b"accept-ranges"))
            await send({**start, "headers": [*headers,
                                             (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})
            return
        elif "start" in held:  # not a body: send the reply as it was
            await send(held.pop("start"))
            for part in parts:
                await send({"type": "http.response.body", "body": part, "more_body": True})
        await send(message)

    return send_on


def version(script: bytes) -> bytes:
    """The mark of a file changed by ``script`` in its ETag (``tag_etag``)."""
    return hashlib.sha1(script).hexdigest()[:8].encode()


def revalidation(headers: list[tuple[bytes, bytes]], tag: bytes) -> list[tuple[bytes, bytes]]:
    """A request's headers as the static handler should see them when the file it sends will
    be changed (marked ``tag``): no byte ranges; an ``If-None-Match`` keeps only the changed
    version's ETags, given back as the plain file's, so that an unchanged file is answered
    "not modified"; a browser holding the plain file (cached before, or sent before the
    router ran) gets the changed one in full, so ``If-Modified-Since`` goes too.

    >>> revalidation([(b"if-none-match", b'"a-t1", "b"'), (b"range", b"bytes=0-9")], b"t1")
    [(b'if-none-match', b'"a"')]
    >>> revalidation([(b"if-none-match", b'"a"'), (b"if-modified-since", b"Mon")], b"t1")
    []
    """
    out = []
    for k, v in headers:
        name = k.lower()
        if name == b"if-none-match":
            mine = [e.strip() for e in v.split(b",") if e.strip().endswith(b"-" + tag + b'"')]
            if mine:
                out.append((k, b", ".join(e[:-len(tag) - 2] + b'"' for e in mine)))
        elif name not in (b"range", b"if-range", b"if-modified-since"):
            out.append((k, v))
    return out


def tag_etag(etag: bytes, tag: bytes) -> bytes:
    """The ETag of the changed file: the plain file's with ``tag`` added inside the quotes.

    >>> tag_etag(b'"abc"', b"v1"), tag_etag(b'W/"abc"', b"v1")
    (b'"abc-v1"', b'W/"abc-v1"')
    """
    return etag[:-1] + b"-" + tag + b'"' if etag.endswith(b'"') else etag + b"-" + tag


def page_name(scope: dict[str, Any]) -> str:
    """The requested path below the server's base path, without its slashes: a page's name
    when the browser asked for a page (``attention``), ``""`` at the main page.

    >>> page_name({"path": "/course/attention/", "root_path": "/course"})
    'attention'
    >>> page_name({"path": "/attention", "root_path": ""}), page_name({"path": "/course"})
    ('attention', 'course')
    """
    path, root = scope.get("path", ""), scope.get("root_path", "")
    if root and path.startswith(root + "/"):
        path = path[len(root):]
    elif root and path == root:
        path = ""
    return path.strip("/")


def serve_base_url(pages: Iterable[str], heads: Mapping[str, bytes] | None = None) -> bool:
    """Have Streamlit's server send its ``index.html`` with ``SCRIPT`` in it at
    the address of one of ``pages``, and with ``heads[name]`` before that at the address of
    page ``name`` (``""``: the main page; ``fonts.preloads()``), the first time only (True
    then; False after, or where Starlette cannot be imported)."""
    global _done
    with _lock:
        if _done:
            return False
        _done = True
        try:
            from starlette.staticfiles import StaticFiles
        except ImportError:
            return False
        names = {p for p in pages if p}  # the main page's name is empty
        heads = dict(heads or {})
        inserts = {}  # page name -> (what its index.html gets, the mark of that version)
        for name in names | heads.keys():
            insert = heads.get(name, b"") + (SCRIPT if name in names else b"")
            if insert:
                inserts[name] = (insert, version(insert))
        original = StaticFiles.__call__
        original = getattr(original, "__wrapped__", original)  # never wrapped twice

        @functools.wraps(original)
        async def __call__(self, scope, receive, send):  # noqa: N807 (the method it wraps)
            found = inserts.get(page_name(scope))
            if found and type(self).__name__ == HANDLER and scope.get("type") == "http" \
                    and scope.get("method") == "GET":
                insert, tag = found
                scope = {**scope, "headers": revalidation(scope.get("headers", []), tag),
                         "extensions": {k: v for k, v in scope.get("extensions", {}).items()
                                        if k != "http.response.pathsend"}}
                send = inserting(send, insert, tag)
            await original(self, scope, receive, send)

        StaticFiles.__call__ = __call__
        return True
