"""Display formulas fitted to their column, for projectors: a small ``st.components.v2``
component, mounted once per page by the router, sets a formula that is wider than its
column in a smaller size, down to ``FIT_MIN`` of its own, so that a 1024-px projector shows
it whole. One still wider at that size scrolls, with its scrollbar (``widgets.FORMULA_CSS``).

KaTeX lays a formula out on one line at a fixed size; nothing in CSS shrinks it to a width.
The script watches the page (formulas come and go with every rerun, columns change with the
window, KaTeX's fonts arrive after its HTML) and, once per frame at most, measures every
display formula in one pass and then sizes them in another, so that the browser lays the
page out once, not once per formula.
Each fitted formula's ``.katex`` carries its scale in ``data-gv-fit`` (what the tests read).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import streamlit as st

NAME = "gptviz.fit"
KEY = "gv-fit"  # the element's key: FORMULA_CSS hides its (empty) container
FIT_MIN = 0.6  # the smallest size a formula is set in, as a share of its own
_JS = """export default function () {
  const w = window;
  if (!w.gvFit) {
    let queued = false;
    const fit = () => {
      queued = false;
      const all = [...document.querySelectorAll(".stMarkdown .katex-display")]
        .map(d => [d, d.firstElementChild])
        .filter(([d, k]) => k && k.classList.contains("katex"));
      for (const [, k] of all) k.style.fontSize = "";  // the formula's own size first
      const sizes = all.map(([d, k]) => [d.clientWidth, k.scrollWidth,
                                         parseFloat(getComputedStyle(k).fontSize)]);
      all.forEach(([, k], i) => {
        const [room, need, px] = sizes[i];
        const s = room > 0 && need > room ? Math.max(MIN, (room - 1) / need) : 1;
        if (s < 1) {
          k.style.fontSize = (px * s).toFixed(2) + "px";
          k.dataset.gvFit = s.toFixed(3);
        } else delete k.dataset.gvFit;
      });
    };
    w.gvFit = () => { if (!queued) { queued = true; requestAnimationFrame(fit); } };
    new MutationObserver(w.gvFit).observe(document.body, {childList: true, subtree: true});
    w.addEventListener("resize", w.gvFit);
    // KaTeX's fonts arrive after its HTML: a formula's width changes with no DOM change
    if (document.fonts) document.fonts.addEventListener("loadingdone", w.gvFit);
  }
  w.gvFit();
}""".replace("MIN", repr(FIT_MIN))


@functools.cache
def _component() -> Callable[..., Any]:
    return st.components.v2.component(NAME, html="<span></span>", js=_JS,
                                      isolate_styles=False)


def fit_formulas() -> None:
    """Mount the fitter (once per page run; the script installs itself once per tab)."""
    _component()(key=KEY, data={})
