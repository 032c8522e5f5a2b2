"""Display formulas fitted to their column, for projectors.

KaTeX sets a formula on one line at a fixed size, and nothing in Streamlit or CSS shrinks it
to a width. A small component, mounted once per page by the router, sets a display formula
wider than its column smaller, down to ``FIT_MIN`` of its own size, so that a 1024-px
projector shows it whole; one still wider scrolls (``widgets.FORMULA_CSS``). Its script
(``formula_fit.js``) measures all formulas in one pass and sizes them in another, once per
frame at most. A feature Streamlit lacks, not a speed-up: it stays in stock mode. Each
fitted formula's ``.katex`` carries its scale in ``data-gv-fit`` (what the tests read).
"""

from __future__ import annotations

from gptviz.app.speedups.component import component

NAME = "gptviz.fit"
KEY = "gv-fit"  # the element's key: FORMULA_CSS hides its (empty) container
FIT_MIN = 0.6  # the smallest size a formula is set in, as a share of its own


def fit_formulas() -> None:
    """Mount the fitter (once per page run; the script installs itself once per tab)."""
    component(NAME, js="formula_fit.js")(key=KEY, data={"min": FIT_MIN})
