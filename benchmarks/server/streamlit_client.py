"""A Streamlit session without a browser: the websocket protocol the frontend speaks.

A ``ProtocolSession`` is one browser tab as the server sees it: a websocket on
``/_stcore/stream`` sending ``BackMsg.rerun_script`` (query string, page, widget states)
and receiving ``ForwardMsg``s (deltas, navigation, script_finished). Between those it
does what the frontend does, and nothing more:

- widget states: one ``WidgetState`` per widget on the page, all sent with every rerun.
  Text boxes hold what the server shows or sets, or what was typed; a ``st.components.v2``
  component's state is JSON (``{"clicks": 3}`` for the app's "Next token"). Other widgets
  are left out, so the server keeps their last values, as the frontend would send back;
- the forward-message cache: elements the server marks ``cacheable`` are kept by hash
  and their hashes sent back, so the server may answer with ``ref_hash`` references;
- pages: ``st.navigation`` sends each page's ``page_script_hash``; a page switch is a
  rerun with that hash (and the URL path as ``page_name``), like a click in the sidebar.

Behind a proxy (a lecture hall, ``deploy/serve.py``) a session keeps cookies as a browser
does for one site (``cookies={}``): it first asks for the page itself (as a browser loads the
HTML before the script opens its websocket), keeps what ``Set-Cookie`` sets (the proxy's
``SERVERID``, which replica it is on), and sends them with the websocket's handshake and
again when it reconnects (``reconnect``: the page's websocket lost, as a browser's after a
replica dies). ``replicas`` lists the replica that answered each request (the proxy's
``X-Gptviz-Replica`` header), in order.

Like a browser, a session answers the server's pings but sends none of its own (a busy
server's late pong would otherwise close it).

A run has finished when ``script_finished`` arrives with any status but "finished early
for a rerun". ``Run`` keeps, per delta path, the last element drawn there: what the page
shows once the run is over. ``Server`` (``streamlit run`` on a free loopback port) is
``benchmarks.common.Server``, named here for the sessions' users."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
import urllib.request
from dataclasses import dataclass, field
from html import unescape

import websockets
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState

from benchmarks.common import Server

__all__ = ["ProtocolSession", "Run", "Server", "differences", "html_text"]

EARLY = ForwardMsg.FINISHED_EARLY_FOR_RERUN
TEXT_WIDGETS = ("text_area", "text_input")
# Element kinds whose text is what a student reads; everything else is a widget, a layout
# block or a figure (figures are compared by their JSON, see ``Run.fingerprint``).
TEXT_KINDS = {"markdown": "body", "heading": "body", "alert": "body", "code": "code_text",
              "text": "body", "html": "body", "exception": "message"}


def html_text(html: str) -> str:
    """The visible text of an HTML fragment: ``html_text('<style>p{}</style><b>a</b>&lt;')``
    is 'a <'."""
    text = re.sub(r"<(style|script)\b.*?</\1>|<[^>]+>", " ", html, flags=re.S | re.I)
    return " ".join(unescape(text).split())


@dataclass
class Run:
    """One script run: what it drew (by delta path), how long it took, how it ended."""

    page: str
    seconds: float = 0.0
    elements: dict[tuple[int, ...], tuple[str, object]] = field(default_factory=dict)
    fragments: dict[tuple[int, ...], str] = field(default_factory=dict)  # path -> fragment id
    kept: dict[tuple[int, ...], tuple[str, object]] = field(default_factory=dict)  # not rerun
    drawn: set[tuple[int, ...]] = field(default_factory=set)  # paths drawn since it started
    status: str = "running"  # "ok", "compile error", "timeout", "page not found", "closed"

    def texts(self, kind: str) -> list[str]:
        """The text of every element of ``kind`` (e.g. "markdown"), in page order."""
        return [_text_of(k, e) for _, (k, e) in sorted(self.elements.items()) if k == kind]

    @property
    def exceptions(self) -> list[str]:
        return self.texts("exception")

    def fingerprint(self) -> dict[str, str]:
        """What the student was shown, by delta path: the text of every text element and
        metric, the JSON of every figure (plotly's, or a component's data). Widgets, toasts,
        spinners and progress bars (which may differ with timing) are left out."""
        shown = {}
        for path, (kind, element) in sorted(self.elements.items()):
            if kind in TEXT_KINDS:
                text = _text_of(kind, element)
            elif kind == "plotly_chart":
                text = element.spec
            elif kind == "bidi_component":  # a heatmap, a CSV file, a choice
                text = element.json
            elif kind == "metric":
                text = f"{element.label}: {element.body} ({element.delta})"
            else:
                continue
            shown[".".join(map(str, path))] = f"{kind}: {text}"
        return shown


def _text_of(kind: str, element: object) -> str:
    text = getattr(element, TEXT_KINDS.get(kind, "body"), "")
    return html_text(text) if kind == "html" else str(text)


class ProtocolSession:
    """A websocket session with a running app: ``await s.open(page, query)`` runs a page,
    ``await s.click(run, component, label)`` clicks a counting component,
    ``await s.type_text(run, key, text)`` types into a text box, ``await s.choose(run, key,
    string_value="5")`` sets a keyed widget, ``await s.press(run, key)`` presses a keyed button,
    ``await s.close()``.

    ``timeout_s`` bounds each run; a run that does not finish in time has status "timeout".
    """

    def __init__(self, base_ws: str, timeout_s: float = 60.0,
                 cookies: dict[str, str] | None = None, headers: dict[str, str] | None = None
                 ) -> None:
        self.base_ws = base_ws
        self.url = f"{base_ws}/_stcore/stream"
        self.timeout_s = timeout_s
        self.ws = None
        self.pages: dict[str, str] = {}  # url path ("" is the default page) -> script hash
        self.widgets: dict[str, WidgetState] = {}
        self.cache: dict[str, ForwardMsg] = {}
        self.query = ""
        self.timers: dict[str, float] = {}  # fragment id -> seconds: st.fragment(run_every=)
        self.page = ""
        self.cookies = cookies  # None: no cookies at all (one server, no proxy)
        self.headers = headers or {}  # sent with every request
        self.replicas: list[str] = []  # the replica of each request, where a proxy says it

    async def connect(self) -> None:
        if self.cookies is not None:
            await asyncio.to_thread(self._get_page)
        self.ws = await websockets.connect(self.url, subprotocols=["streamlit"],
                                           max_size=None, open_timeout=self.timeout_s,
                                           additional_headers=self._headers(),
                                           ping_interval=None)  # a browser sends none
        self._keep(self.ws.response.headers)

    async def reconnect(self, tries: int = 10, wait_s: float = 0.5) -> Run:
        """The websocket again after it was lost (with the cookies kept), then the page
        again with the widget states the session holds, as the frontend does: it tries
        again after ``wait_s`` s while the server refuses (at most ``tries`` times)."""
        with contextlib.suppress(Exception):
            await self.ws.close()
        self.cache.clear()  # a new server session knows none of the old hashes
        for attempt in range(tries):
            try:
                await self.connect()
                break
            except (OSError, websockets.InvalidHandshake):
                if attempt == tries - 1:
                    raise
                await asyncio.sleep(wait_s)
        return await self._rerun()

    def _headers(self) -> dict[str, str]:
        cookie = "; ".join(f"{k}={v}" for k, v in (self.cookies or {}).items())
        return {**self.headers, **({"Cookie": cookie} if cookie else {})}

    def _get_page(self) -> None:
        """GET the page's HTML, as a browser does before it opens the websocket."""
        http = "http" + self.base_ws.removeprefix("ws")
        request = urllib.request.Request(f"{http}/{self.page}", headers=self._headers())
        with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
            response.read()
            self._keep(response.headers)

    def _keep(self, headers) -> None:
        """Keep the cookies a response sets and note the replica that sent it."""
        if self.cookies is not None:
            for line in headers.get_all("Set-Cookie") or []:
                name, _, rest = line.partition("=")
                self.cookies[name.strip()] = rest.split(";")[0].strip()
        if replica := headers.get("X-Gptviz-Replica"):
            self.replicas.append(replica)

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()

    async def open(self, page: str, query: str = "") -> Run:
        """Run ``page`` (its URL path; "" is the default page) with ``query`` as the URL's
        query string, as the first load or a click in the sidebar would."""
        self.page, self.query = page, query
        return await self._rerun()

    async def click(self, run: Run, component: str, label: str) -> Run:
        """Click the ``component`` whose data has this ``label`` (a click-counting
        component: its state is ``{"clicks": total}``, the total starting at its ``seen``)."""
        for kind, element in run.elements.values():
            if kind == "bidi_component" and element.component_name.endswith(component):
                data = json.loads(element.json or "{}")
                if data.get("label") == label:
                    old = json.loads(self.widgets[element.id].json_value) \
                        if element.id in self.widgets else {}
                    clicks = max(int(old.get("clicks", 0)), int(data.get("seen", 0))) + 1
                    self.widgets[element.id] = WidgetState(
                        id=element.id, json_value=json.dumps({"clicks": clicks}))
                    return await self._rerun(run, self._fragment_of(run, element))
        raise LookupError(f"no {component} labelled {label!r} on page {run.page!r}")

    async def send_state(self, run: Run, component: str, value: dict) -> Run | None:
        """Set the state of the first ``component`` of ``run`` to ``value`` (as its script
        in a browser does) and rerun; None when the page has no such component."""
        for kind, element in run.elements.values():
            if kind == "bidi_component" and element.component_name.endswith(component):
                self.widgets[element.id] = WidgetState(id=element.id,
                                                       json_value=json.dumps(value))
                return await self._rerun(run, self._fragment_of(run, element))
        return None

    def text_value(self, run: Run, key: str) -> str | None:
        """What the text box bound to ``?key=`` holds after ``run`` (None: no such box)."""
        box = _text_box(run, key)
        return None if box is None else self.widgets[box.id].string_value

    async def type_text(self, run: Run, key: str, text: str) -> Run:
        """Type ``text`` into the text box bound to ``?key=`` and apply it (Ctrl+Enter)."""
        box = _text_box(run, key)
        if box is None:
            raise LookupError(f"no text box bound to ?{key}= on page {run.page!r}")
        self.widgets[box.id] = WidgetState(id=box.id, string_value=text)
        return await self._rerun()

    def widget(self, run: Run, key: str):
        """The widget of ``run`` with the key ``key`` (its id ends with it), or None."""
        return next((e for _, e in run.elements.values()
                     if str(getattr(e, "id", "")).endswith(f"-{key}")), None)

    async def choose(self, run: Run, key: str, **value: object) -> Run:
        """Set the widget keyed ``key`` (e.g. ``string_value=label`` for a radio's option,
        ``double_value=41.5`` for a number box) and rerun, as a change in the browser does."""
        found = self.widget(run, key)
        if found is None:
            raise LookupError(f"no widget keyed {key!r} on page {run.page!r}")
        self.widgets[found.id] = WidgetState(id=found.id, **value)
        return await self._rerun()

    async def press(self, run: Run, key: str) -> Run:
        """Press the button keyed ``key``: one rerun with its trigger set (then unset)."""
        found = self.widget(run, key)
        if found is None:
            raise LookupError(f"no button keyed {key!r} on page {run.page!r}")
        self.widgets[found.id] = WidgetState(id=found.id, trigger_value=True)
        try:
            return await self._rerun()
        finally:
            self.widgets.pop(found.id, None)

    @staticmethod
    def _fragment_of(run: Run, element: object) -> str:
        """The fragment that drew ``element`` in ``run`` ("" if none): a browser reruns
        only that fragment when one of its widgets changes, and so does this session."""
        return next((run.fragments.get(path, "") for path, (_, e) in run.elements.items()
                     if e is element), "")

    async def _rerun(self, last: Run | None = None, fragment: str = "", auto: bool = False
                     ) -> Run:
        """Rerun the page, or only ``fragment`` of ``last`` (what stays drawn outside it is
        carried over, as the browser keeps it); ``auto``: as the fragment's timer does."""
        msg = BackMsg()
        state = msg.rerun_script
        state.fragment_id = fragment
        state.is_auto_rerun = auto
        if not fragment:
            self.timers.clear()  # a whole run sets its fragments' timers anew
        state.query_string = self.query
        state.page_name = self.page
        state.page_script_hash = self.pages.get(self.page, "")
        state.widget_states.widgets.extend(self.widgets.values())
        state.cached_message_hashes.extend(self.cache)
        run = Run(self.page)
        if fragment and last is not None:
            run.kept = {path: drawn for path, drawn in last.elements.items()
                        if last.fragments.get(path) != fragment}
            run.fragments = {path: f for path, f in last.fragments.items() if f != fragment}
            run.elements = dict(run.kept)
        start = time.perf_counter()
        await self.ws.send(msg.SerializeToString())
        try:
            await asyncio.wait_for(self._receive(run), self.timeout_s)
        except TimeoutError:
            run.status = "timeout"
        except websockets.ConnectionClosed:
            run.status = "closed"
        run.seconds = time.perf_counter() - start
        return run

    async def _receive(self, run: Run) -> None:
        while True:
            msg = ForwardMsg()
            msg.ParseFromString(await self.ws.recv())
            if msg.ref_hash:
                cached = self.cache[msg.ref_hash]
                cached.metadata.CopyFrom(msg.metadata)
                msg = cached
            elif msg.metadata.cacheable:
                self.cache[msg.hash] = msg
            kind = msg.WhichOneof("type")
            if kind == "auto_rerun":  # the browser reruns this fragment on a timer
                self.timers[msg.auto_rerun.fragment_id] = msg.auto_rerun.interval
            elif kind == "new_session":
                run.elements = dict(run.kept)  # a rerun started over (fast rerun, st.rerun)
                run.drawn.clear()
            elif kind == "navigation":
                self.pages = {p.url_pathname: p.page_script_hash
                              for p in msg.navigation.app_pages}
            elif kind == "page_not_found":
                run.status = "page not found"
            elif kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
                path = tuple(msg.metadata.delta_path)
                self._element(run, path, msg.delta.new_element)
                run.drawn.add(path)
                if msg.delta.fragment_id:
                    run.fragments[path] = msg.delta.fragment_id
            elif kind == "script_finished" and msg.script_finished != EARLY:
                if run.status == "running":
                    run.status = ("compile error" if msg.script_finished ==
                                  ForwardMsg.FINISHED_WITH_COMPILE_ERROR else "ok")
                if msg.script_finished == ForwardMsg.FINISHED_SUCCESSFULLY:  # a whole run:
                    run.elements = {p: e for p, e in run.elements.items() if p in run.drawn}
                    run.fragments = {p: f for p, f in run.fragments.items() if p in run.drawn}
                    # what it did not draw is gone from the page, as the browser removes it
                shown = {getattr(e, "id", None) for _, e in run.elements.values()}
                self.widgets = {k: v for k, v in self.widgets.items() if k in shown}
                return

    def _element(self, run: Run, path: tuple[int, ...], element) -> None:
        kind = element.WhichOneof("type")
        inner = getattr(element, kind)
        run.elements[path] = (kind, inner)
        if kind in TEXT_WIDGETS and (inner.set_value or inner.id not in self.widgets):
            value = inner.value if inner.set_value else inner.default
            self.widgets[inner.id] = WidgetState(id=inner.id, string_value=value)


def _text_box(run: Run, key: str):
    """The text widget of ``run`` bound to ``?key=``, or keyed ``key`` or ``key@page`` (the
    app's linked text boxes, ``widgets.box_key``), if any."""
    return next((e for k, e in run.elements.values() if k in TEXT_WIDGETS and (
        e.query_param_key == key or re.search(f"-{re.escape(key)}(@[^-]*)?$", e.id))), None)


def differences(alone: dict[str, dict[str, str]], other: dict[str, dict[str, str]]) -> list[str]:
    """Where two sessions' fingerprints (run label -> ``Run.fingerprint()``) differ, one
    line per run both made: the number of elements that differ and the first of them."""
    found = []
    for label in sorted(alone.keys() & other.keys()):
        a, b = alone[label], other[label]
        diff = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
        if diff:
            found.append(f"{label}: {len(diff)} element(s) differ, first at {diff[0]}: "
                         f"{a.get(diff[0], '')[:70]!r} / {b.get(diff[0], '')[:70]!r}")
    return found
