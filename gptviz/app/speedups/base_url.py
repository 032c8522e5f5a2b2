"""A page opened at its own address connects at once: the app's root written into the page.

Opened at a page's address (``/attention``), Streamlit's client (1.67) does not know where
the app's root is: it asks ``/attention/_stcore/health``, gets a 404, waits 100 ms and only
then asks the root. With ``base_url.js`` in ``index.html`` (it sets
``window.__streamlit.BACKEND_BASE_URL``, which Streamlit's client reads), every page but Home
opens its websocket 115–155 ms earlier (benchmarks/LOG.md, stop 32). ``serve_base_url`` wraps
Starlette's ``StaticFiles.__call__`` for Streamlit's own static handler (the class
``_StreamlitStaticFiles`` made by ``create_streamlit_static_handler``); the same insertion
carries each page's font preloads (``fonts``). Checked against Streamlit 1.67; elsewhere off.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from gptviz.app.speedups import guard

HANDLER = "_StreamlitStaticFiles"  # the class of Streamlit's own static file handler (1.67)
STREAMLIT = ("1.67",)  # releases whose static handler and client were checked
ROUTES = "streamlit.web.server.starlette.starlette_static_routes"
NAMES = (f"{ROUTES}:create_streamlit_static_handler", "streamlit.file_util:get_static_dir",
         "starlette.staticfiles:StaticFiles.__call__")
MARKER = b'<script type="module"'  # index.html's first module script: the app's code
_done = False
_lock = threading.Lock()

# sent only at a page's address: the address without the page's name (base_url.js, without
# its comment lines)
SCRIPT = b"<script>" + b"".join(
    line for line in (Path(__file__).parent / "base_url.js").read_bytes().splitlines(True)
    if not line.startswith(b"//")).strip() + b"</script>"


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


def fits() -> bool:
    """Whether this Streamlit is one checked, with the names the patch touches, and its
    static handler is still a ``StaticFiles`` of class ``HANDLER`` (else one log line)."""
    if not guard.fits("base_url", streamlit=STREAMLIT, names=NAMES):
        return False
    from starlette.staticfiles import StaticFiles
    from streamlit import file_util

    routes = importlib.import_module(ROUTES)
    try:
        handler = routes.create_streamlit_static_handler(file_util.get_static_dir(), None)
    except Exception as exc:  # any failure: the patch stays off
        return guard.switch_off("base_url", f"Streamlit's static handler: {exc!r}")
    if not isinstance(handler, StaticFiles) or type(handler).__name__ != HANDLER:
        return guard.switch_off("base_url", f"Streamlit's static handler is a "
                                            f"{type(handler).__name__}, not {HANDLER}")
    return True


def serve_base_url(pages: Iterable[str], heads: Mapping[str, bytes] | None = None) -> bool:
    """Have Streamlit's server send its ``index.html`` with ``SCRIPT`` in it at
    the address of one of ``pages``, and with ``heads[name]`` before that at the address of
    page ``name`` (``""``: the main page; ``fonts.preloads()``), the first time only (True
    then; False after, or, with one log line, where this Streamlit is not one it fits)."""
    global _done
    with _lock:
        if _done:
            return False
        _done = True
        if not fits():
            return False
        from starlette.staticfiles import StaticFiles

        names = {p for p in pages if p}  # the main page's name is empty
        heads = dict(heads or {})
        inserts = {}  # page name -> (what its index.html gets, the mark of that version)
        for name in names | heads.keys():
            insert = heads.get(name, b"") + (SCRIPT if name in names else b"")
            if insert:
                inserts[name] = (insert, version(insert))
        if not inserts:
            return False
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
