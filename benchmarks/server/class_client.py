"""A class session spoken at the protocol level: the teacher's Lesson and the students'
Join page as ``streamlit_client.ProtocolSession``s, plus what a class needs of a browser.

``ClassSession`` adds to a session what the pages use: a button's one-shot trigger
(``press``), a choice in a radio group (``choose``, by its label), a number box
(``number``), a toggle, the cookies a browser keeps (what the ``gptviz.class_cookies``
component writes is kept and sent with the next connection, as a reload does) and a
fragment's timer (``poll``: what a browser does every ``run_every``).
"""

from __future__ import annotations

import json
import re

from streamlit.proto.WidgetStates_pb2 import WidgetState

from benchmarks.server import streamlit_client as sc

COOKIES = "class_cookies"  # the component that writes cookies (gptviz/app/classroom/browser.py)
CODE = re.compile(r'data-code="([A-Z0-9]{6})"')
COUNT = re.compile(r'data-answered="(\d*)" data-joined="(\d+)"')


class ClassSession(sc.ProtocolSession):
    """A tab with a browser's cookie jar: ``cookies`` are sent when it connects (and the
    page is asked for first, as a browser does, so a proxy's cookie is kept too)."""

    def __init__(self, base_ws: str, timeout_s: float = 60.0,
                 cookies: dict[str, str] | None = None) -> None:
        super().__init__(base_ws, timeout_s, cookies=dict(cookies or {}))

    async def _set(self, run: sc.Run, key: str, **value) -> sc.Run:
        e = self.widget(run, key)
        if e is None:
            raise LookupError(f"no widget keyed {key!r} on page {run.page!r}")
        self.widgets[e.id] = WidgetState(id=e.id, **value)
        out = await self._rerun(run, self._fragment_of(run, e))
        if "trigger_value" in value:
            self.widgets.pop(e.id, None)  # a click is sent once
        self.keep_cookies(out)
        return out

    async def press(self, run: sc.Run, key: str) -> sc.Run:
        return await self._set(run, key, trigger_value=True)

    async def choose(self, run: sc.Run, key: str, index: int) -> sc.Run:
        """Pick option ``index`` of a radio group: the browser sends the option's label."""
        e = self.widget(run, key)
        if e is None:
            raise LookupError(f"no radio keyed {key!r} on page {run.page!r}")
        return await self._set(run, key, string_value=e.options[index])

    async def number(self, run: sc.Run, key: str, value: float) -> sc.Run:
        e = self.widget(run, key)
        whole = e is not None and e.data_type == 0  # NumberInput.INT
        return await (self._set(run, key, int_value=int(value)) if whole else
                      self._set(run, key, double_value=float(value)))

    async def toggle(self, run: sc.Run, key: str, on: bool) -> sc.Run:
        return await self._set(run, key, bool_value=on)

    async def type_key(self, run: sc.Run, key: str, text: str) -> sc.Run:
        return await self._set(run, key, string_value=text)

    async def open(self, page: str, query: str = "") -> sc.Run:
        run = await super().open(page, query)
        self.keep_cookies(run)
        return run

    async def poll(self, run: sc.Run) -> sc.Run:
        """What the browser's timers do: rerun each fragment that has one (``run_every``),
        alone; the page's run is carried over."""
        for fragment in list(self.timers):
            run = await self._rerun(run, fragment, auto=True)
            self.keep_cookies(run)
        return run

    def keep_cookies(self, run: sc.Run) -> None:
        """Keep what the cookie component of ``run`` writes, as the browser's script does."""
        for kind, e in run.elements.values():
            if kind == "bidi_component" and e.component_name.endswith(COOKIES):
                data = json.loads(e.json or "{}")
                for name, value, _ in data.get("set", []):
                    self.cookies[name] = value
                for name in data.get("clear", []):
                    self.cookies.pop(name, None)


def page_text(run: sc.Run) -> str:
    """Everything ``run`` shows as text or HTML, in page order."""
    return "\n".join(str(getattr(e, "body", "")) for _, (k, e) in sorted(run.elements.items())
                     if k in sc.TEXT_KINDS)


def class_code(run: sc.Run) -> str | None:
    found = CODE.search(page_text(run))
    return found.group(1) if found else None


def count(run: sc.Run) -> tuple[int | None, int] | None:
    """(answered, joined) as the projector's live count shows them, or None."""
    found = COUNT.search(page_text(run))
    if not found:
        return None
    return (int(found.group(1)) if found.group(1) else None), int(found.group(2))


def texts(run: sc.Run, kind: str) -> list[str]:
    return run.texts(kind)
