"""A button that counts its clicks in the browser, so fast clicks are never merged.

``st.button`` sends a one-shot trigger; when clicks arrive faster than the script starts,
Streamlit's fast reruns replace one pending run by the next and earlier triggers are lost
(``tests/test_browser_generation.py`` clicks six times fast and wants six tokens). This
button (``click_button.js``, ``click_button.css``) keeps a running total in the page and
sends it as its state: the last run carries the total, and the page acts on ``total - seen``
clicks. A correctness fix, not a speed-up: it stays in stock mode.
"""

from __future__ import annotations

from gptviz.app.speedups.component import component

NAME = "gptviz.click_counter"
HTML = ('<button type="button" class="gv-count"><svg viewBox="0 0 24 24" aria-hidden="true">'
        '<path d="M6 18l8.5-6L6 6v12zM16 6v12h2V6h-2z"/></svg>'  # Material "skip_next"
        '<span class="gv-label"></span></button>')


def click_total(label: str, key: str, seen: int, disabled: bool = False, help: str = "") -> int:
    """Draw the button; return how many times it was clicked in this session.

    ``seen`` is the total the caller has already acted on, so the clicks since the last
    run are ``click_total(label, key, seen) - seen``. In AppTest, a click is
    ``at.session_state[key] = {"clicks": seen + 1}``.

    >>> click_total("Next token", "gen_next", seen=0)   # no running app: never clicked
    0
    """
    element = component(NAME, html=HTML, js="click_button.js", css="click_button.css",
                        isolate_styles=True)
    result = element(key=key, default={"clicks": 0}, on_clicks_change=lambda: None,
                     data={"label": label, "seen": int(seen), "disabled": disabled,
                           "help": help})
    try:
        return int(result["clicks"] or 0)
    except (KeyError, TypeError, ValueError):
        return 0
