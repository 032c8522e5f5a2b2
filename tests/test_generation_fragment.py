"""A click on the Generation page's buttons reruns only the part of the page it changes
(an ``st.fragment``): the server sends the buttons, the text and the open view again, and
not the introduction, the prompt box or the sampling controls. Talks to a running app over
Streamlit's own websocket protocol, as a browser tab does (benchmarks/server/streamlit_client.py).
That Stop still interrupts a running Generate n is tests/test_browser_generation.py's."""

from __future__ import annotations

from benchmarks.server import streamlit_client as sc
from tests.helpers import run_alone


def _walk(app_url: str, clicks: int) -> list[sc.Run]:
    async def walk() -> list[sc.Run]:
        s = sc.ProtocolSession(app_url.replace("http://", "ws://"), timeout_s=120)
        await s.connect()
        try:
            runs = [await s.open("generation")]
            for _ in range(clicks):
                runs.append(await s.click(runs[-1], "click_counter", "Next token"))
            return runs
        finally:
            await s.close()
    return run_alone(walk())


def _sent(run: sc.Run) -> dict[tuple[int, ...], tuple[str, object]]:
    """What the server drew in ``run`` (not what stayed on the page from the last one)."""
    return {path: drawn for path, drawn in run.elements.items()
            if run.kept.get(path) is not drawn}


def test_a_click_reruns_only_the_buttons_text_and_views(app_url):
    first, *clicked = _walk(app_url, 2)
    assert first.status == "ok" and not first.kept  # the first load draws the whole page
    intro = next(p for p, (k, e) in first.elements.items()
                 if k == "markdown" and "A GPT reads the last" in e.body)
    boxes = {p for p, (k, _) in first.elements.items() if k in ("text_area", "slider",
                                                                "number_input")}
    assert len(boxes) >= 4  # the prompt, T, top-p, min-p, top-k, seed (and n, inside)
    said = [e.body for k, e in first.elements.values() if k == "markdown" and
            " generated · " in e.body]
    assert len(said) == 1 and said[0].startswith("0 generated · "), said
    prompt = int(said[0].split("· ")[1].split()[0].replace(",", ""))  # the default prompt
    for n, run in enumerate(clicked, 1):
        assert run.status == "ok", run.status
        sent = _sent(run)
        assert intro not in sent and intro in run.elements  # still shown, not sent again
        assert first.elements.keys() - sent.keys() >= {intro}
        outside = boxes - set(run.fragments)  # the prompt and sampling controls
        assert outside and not outside & sent.keys(), "controls above the buttons were rerun"
        said = [e.body for k, e in sent.values() if k == "markdown" and " generated · " in e.body]
        assert said == [f"{n} generated · {prompt + n} tokens in all"], said
        assert run.texts("markdown")[:len(first.texts("markdown"))][0] == \
            first.texts("markdown")[0]  # the page still reads from its top
