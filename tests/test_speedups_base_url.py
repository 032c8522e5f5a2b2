"""The app's root written into the page, so a page opened at its own address connects at
once (gptviz/app/speedups/base_url.py): Streamlit's own static file handler, called as its
server calls it, and the script at the addresses a student or a host may use, in Chromium.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from starlette.staticfiles import StaticFiles
from streamlit.web.server.starlette.starlette_static_routes import (
    create_streamlit_static_handler,
)

from gptviz.app.speedups import base_url
from tests.helpers import run_alone, settle, visit

INDEX = (b'<!DOCTYPE html><html><head><script>window.prerenderReady = false</script>'
         b'<script type="module" crossorigin src="./static/js/index.js"></script></head>'
         b'<body><div id="root"></div></body></html>')
PAGES = ["", "lesson", "attention", "positional"]


@pytest.fixture
def patched(monkeypatch):
    """``serve_base_url`` applied to Starlette's own ``StaticFiles.__call__`` (unwrapped if
    an AppTest's run patched it already); the class has its former method back afterwards."""
    plain = getattr(StaticFiles.__call__, "__wrapped__", StaticFiles.__call__)
    monkeypatch.setattr(StaticFiles, "__call__", plain)  # an AppTest's run may have patched
    monkeypatch.setattr(base_url, "_done", False)
    assert base_url.serve_base_url(PAGES) is True
    assert base_url.serve_base_url(PAGES) is False  # once per process


def serve(tmp_path, files: dict[str, bytes]):
    for name, body in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(body)
    return create_streamlit_static_handler(str(tmp_path), None)


def fetch(app, path: str, method: str = "GET", headers: dict[str, str] | None = None,
          root_path: str = "", extensions: dict | None = None):
    """(status, headers, body) of one request, with the ASGI messages Starlette sends."""
    messages: list[dict] = []
    asked: list[bool] = []

    async def receive():  # the request, then nothing: the client stays connected
        if not asked:
            asked.append(True)
            return {"type": "http.request", "body": b"", "more_body": False}
        await asyncio.Event().wait()

    async def send(message):
        messages.append(message)

    scope = {"type": "http", "method": method, "path": path, "raw_path": path.encode(),
             "root_path": root_path, "query_string": b"", "scheme": "http",
             "http_version": "1.1", "extensions": extensions or {},
             "server": ("127.0.0.1", 8501), "client": ("127.0.0.1", 5000),
             "headers": [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]}
    run_alone(app(scope, receive, send))
    start = messages[0]  # a pathsend reply carries the file's path, not its bytes
    return (start["status"], {k.decode(): v.decode() for k, v in start["headers"]},
            b"".join(m.get("body", b"") for m in messages[1:]))


def test_a_page_address_gets_index_html_with_the_script(patched, tmp_path):
    app = serve(tmp_path, {"index.html": INDEX})
    plain_etag = fetch(app, "/")[1]["etag"]
    for path, root in (("/attention", ""), ("/course/lesson", "/course")):  # baseUrlPath
        status, headers, body = fetch(app, path, root_path=root)
        assert status == 200
        assert body == base_url.with_script(INDEX, base_url.SCRIPT)
        assert body.index(b"__streamlit") < body.index(b'<script type="module"')
        assert int(headers["content-length"]) == len(body) > len(INDEX)
        assert headers["etag"] != plain_etag and headers["etag"].endswith('"')
        assert "accept-ranges" not in headers


def test_the_main_page_and_other_addresses_get_the_plain_file(patched, tmp_path):
    """At the main page the client finds the server at once; under a base path named like
    a page (``baseUrlPath = "lesson"``) the main page is ``/lesson/``, which must not be
    taken for the Lesson page; an unknown address is left to Streamlit's probing."""
    app = serve(tmp_path, {"index.html": INDEX})
    for path, root in (("/", ""), ("/lesson", "/lesson"), ("/lesson/", "/lesson"),
                       ("/course/notapage", ""), ("/course/attention", "")):
        status, _, body = fetch(app, path, root_path=root)
        assert status in (200, 307) and b"__streamlit" not in body, path  # 307: add the "/"
        assert body == (INDEX if status == 200 else b""), path


def test_a_pages_head_goes_in_before_the_script_at_the_main_page_too(monkeypatch, tmp_path):
    """``heads`` (the fonts each page asks for early) go into the page named, the main page
    included; a page without one gets the script alone, an empty one changes nothing."""
    plain = getattr(StaticFiles.__call__, "__wrapped__", StaticFiles.__call__)
    monkeypatch.setattr(StaticFiles, "__call__", plain)
    monkeypatch.setattr(base_url, "_done", False)
    heads = {"": b"<link main>", "attention": b"<link a>", "positional": b""}
    assert base_url.serve_base_url(PAGES, heads) is True
    app = serve(tmp_path, {"index.html": INDEX})
    expected = {"/": b"<link main>", "/attention": b"<link a>" + base_url.SCRIPT,
                "/lesson": base_url.SCRIPT, "/positional": base_url.SCRIPT}
    for path, head in expected.items():
        status, headers, body = fetch(app, path)
        assert (status, body) == (200, base_url.with_script(INDEX, head)), path
        assert int(headers["content-length"]) == len(body)
    assert fetch(app, "/notapage")[2] == INDEX
    status, _, body = fetch(app, "/lesson/", root_path="/lesson")  # the main page, base path
    assert (status, body) == (200, base_url.with_script(INDEX, b"<link main>"))


def test_a_browser_revalidates_the_changed_file_and_never_keeps_the_plain_one(monkeypatch,
                                                                            tmp_path):
    """The changed main page is "not modified" only for its own ETag; a browser that cached
    the plain file (before this app, or the first page a server sent) is sent the changed
    one. (At a page's address Streamlit always sends the file whole: it is not a file.)"""
    plain_call = getattr(StaticFiles.__call__, "__wrapped__", StaticFiles.__call__)
    monkeypatch.setattr(StaticFiles, "__call__", plain_call)
    monkeypatch.setattr(base_url, "_done", False)
    base_url.serve_base_url(PAGES, {"": b"<link main>"})
    app = serve(tmp_path, {"index.html": INDEX})
    _, plain, _ = fetch(app, "/notapage")
    for path, head in (("/", b"<link main>"), ("/attention", base_url.SCRIPT)):
        changed = base_url.with_script(INDEX, head)
        _, headers, body = fetch(app, path)
        assert body == changed and headers["etag"] != plain["etag"]
        for old in ({"If-None-Match": plain["etag"]},
                    {"If-Modified-Since": plain["last-modified"]},
                    {"If-None-Match": f'W/{plain["etag"]}, {headers["etag"]}x'}):
            assert fetch(app, path, headers=old)[:3:2] == (200, changed), (path, old)
    etag = fetch(app, "/")[1]["etag"]
    status, again, body = fetch(app, "/", headers={"If-None-Match": etag})
    assert (status, body, again["etag"]) == (304, b"", etag)


def test_a_range_or_a_server_extension_still_gets_the_whole_changed_file(patched, tmp_path):
    app = serve(tmp_path, {"index.html": INDEX})
    changed = base_url.with_script(INDEX, base_url.SCRIPT)
    assert fetch(app, "/attention", headers={"Range": "bytes=0-9"})[:3:2] == (200, changed)
    pathsend = {"http.response.pathsend": {}}  # a server that sends files by their path
    assert fetch(app, "/attention", extensions=pathsend)[:3:2] == (200, changed)
    status, _, body = fetch(app, "/", extensions=pathsend)
    assert (status, body) == (200, b"")  # unchanged: Starlette sends the path, not bytes


def test_everything_else_it_serves_is_left_alone(patched, tmp_path):
    script = b"export const x = '<script type=\"module\"';"
    app = serve(tmp_path, {"index.html": INDEX, "static/js/a.js": script,
                           "page.html": b'<p><script type="module"></script></p>'})
    assert fetch(app, "/static/js/a.js")[2] == script
    _, headers, _ = fetch(app, "/attention", "HEAD")  # a HEAD is answered for the plain file
    assert int(headers["content-length"]) == len(INDEX)
    etag = fetch(app, "/")[1]["etag"]
    status, _, body = fetch(app, "/", headers={"If-None-Match": etag})
    assert (status, body) == (304, b"")  # revalidation still answers "not modified"
    other = StaticFiles(directory=str(tmp_path), html=True)  # not Streamlit's handler
    assert fetch(other, "/page.html")[2] == b'<p><script type="module"></script></p>'


def test_an_html_reply_in_several_parts_is_joined_once():
    sent: list[dict] = []

    async def send(message):
        sent.append(message)

    async def reply():
        on = base_url.inserting(send, b"<s/>")
        await on({"type": "http.response.start", "status": 200,
                  "headers": [(b"content-type", b"text/html"), (b"content-length", b"9")]})
        await on({"type": "http.response.body", "body": b"<script ", "more_body": True})
        await on({"type": "http.response.body", "body": b'type="module">'})

    run_alone(reply())
    assert [m["type"] for m in sent] == ["http.response.start", "http.response.body"]
    assert sent[1]["body"] == b'<s/><script type="module">'
    assert dict(sent[0]["headers"])[b"content-length"] == b"26"


def test_a_held_reply_that_goes_on_otherwise_is_sent_as_it_was():
    sent: list[dict] = []

    async def send(message):
        sent.append(message)

    start = {"type": "http.response.start", "status": 200,
             "headers": [(b"content-type", b"text/html"), (b"content-length", b"9")]}

    async def reply():
        on = base_url.inserting(send, b"<s/>")
        await on(start)
        await on({"type": "http.response.pathsend", "path": "/srv/index.html"})

    run_alone(reply())
    assert sent == [start, {"type": "http.response.pathsend", "path": "/srv/index.html"}]


def base_at(browser, address: str, host: dict | None = None):
    """``window.__streamlit`` after the script ran in a page at ``address`` (a made-up host,
    answered inside the browser: nothing is fetched)."""
    preset = f"<script>window.__streamlit = {json.dumps(host)};</script>" if host else ""
    html = preset + base_url.SCRIPT.decode()
    context = browser.new_context()
    try:
        context.route("**/*", lambda route: route.fulfill(body=html, content_type="text/html"))
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(address)
        assert not errors, errors
        return page.evaluate("window.__streamlit === undefined ? null : window.__streamlit")
    finally:
        context.close()


@pytest.mark.browser
def test_the_script_sets_the_address_without_the_pages_name(browser):
    """The server sends the script only at a page's address (tests above); there it drops
    the page's name, whatever comes before it, and leaves a host's own setting alone."""
    def base(address, host=None):
        return base_at(browser, address, host).get("BACKEND_BASE_URL")

    assert base("http://gptviz.test/attention") == "http://gptviz.test/"
    assert base("http://gptviz.test/attention/?prompt=a&view=All+heads") == "http://gptviz.test/"
    assert base("http://gptviz.test/~/+/lesson") == "http://gptviz.test/~/+/"  # behind a proxy
    assert base_at(browser, "http://gptviz.test/attention",  # a host that set it wins
                   {"BACKEND_BASE_URL": "http://elsewhere.test/app/", "LIGHT_THEME": 1}) == {
        "BACKEND_BASE_URL": "http://elsewhere.test/app/", "LIGHT_THEME": 1}
    assert base_at(browser, "http://gptviz.test/attention", {"LIGHT_THEME": 1}) == {
        "LIGHT_THEME": 1, "BACKEND_BASE_URL": "http://gptviz.test/"}  # and keeps the rest


@pytest.mark.browser
def test_a_page_opened_at_its_address_connects_without_probing(page, app_url):
    visit(page, app_url)  # a script has run in the server: its index.html has the script
    asked: list[str] = []
    page.on("request", lambda request: asked.append(request.url))
    failed: list[str] = []
    page.on("response", lambda r: failed.append(r.url) if r.status >= 400 else None)
    visit(page, f"{app_url}/learning")
    assert page.evaluate("window.__streamlit.BACKEND_BASE_URL") == f"{app_url}/"
    assert [u for u in asked if "/_stcore/health" in u] == [f"{app_url}/_stcore/health"]
    assert not failed, failed
    page.get_by_test_id("stSidebarNav").get_by_role("link", name="Attention").click()
    settle(page)
    assert page.url.split("?")[0] == f"{app_url}/attention"  # page addresses as before
    assert page.get_by_role("tab", name="All heads").count() == 1
