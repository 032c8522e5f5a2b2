"""plotly.js fetched while a page is idle, before its first plotly chart is asked for.

Streamlit loads its plotly chart code (a 4.6 MB module) only when a page first draws a
plotly chart, and evaluates it then: about a second on a laptop before the chart shows.
In the Lesson that second fell on a Reveal, in front of the class. The router mounts
``prefetch_charts`` on every page: a small ``st.components.v2`` element whose script,
once the page has not changed for a few seconds and the browser is idle, imports that same
module, once per tab. The page's own first view is drawn first, however long its script
takes; pages then move within the tab without reloading it.
The browser keeps one copy of a module per address, so Streamlit's own import later finds
it loaded.

The module's address is the one Streamlit's own code uses: its file name is read from
Streamlit's installed static files, and it is resolved against the address of the page's
main script, as Streamlit's bundler resolves it. Without that file nothing is fetched.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import streamlit as st

NAME = "gptviz.prefetch"
KEY = "gv-prefetch"  # the element's key: widgets.FORMULA_CSS hides its (empty) container
AFTER_MS = 3000  # the page unchanged this long (ms), then an idle moment: fetch
_JS = """export default function (component) {
  const w = window, src = component.data.chunk;
  if (w.gvPrefetch || !src) return;
  const main = document.querySelector('script[type="module"][src*="/static/js/"]');
  if (!main) return;
  w.gvPrefetch = new URL(src, main.src).href;  // the address Streamlit's import resolves to
  const idle = w.requestIdleCallback || (f => setTimeout(f, 0));
  let timer;
  const load = () => {
    watch.disconnect();
    idle(() => import(w.gvPrefetch).then(() => { w.gvPrefetched = true; }, () => {}),
         {timeout: 10000});
  };
  const quiet = () => { clearTimeout(timer); timer = setTimeout(load, component.data.after); };
  const watch = new MutationObserver(quiet);  // the page is still arriving or being drawn
  watch.observe(document.body, {childList: true, subtree: true, characterData: true});
  quiet();
}"""


@functools.cache
def plotly_chunk() -> str | None:
    """The file name of Streamlit's plotly chart module (``PlotlyChart.<hash>.js``), or
    None if this Streamlit has none."""
    folder = Path(st.__file__).parent / "static" / "static" / "js"
    found = sorted(folder.glob("PlotlyChart.*.js"))
    return found[0].name if len(found) == 1 else None


@functools.cache
def _component() -> Callable[..., Any]:
    return st.components.v2.component(NAME, html="<span></span>", js=_JS,
                                      isolate_styles=False)


def prefetch_charts() -> None:
    """Fetch plotly.js in this tab once the page is idle (once per tab; nothing if
    Streamlit's plotly module is not found)."""
    chunk = plotly_chunk()
    if chunk:
        _component()(key=KEY, data={"chunk": f"./{chunk}", "after": AFTER_MS})
