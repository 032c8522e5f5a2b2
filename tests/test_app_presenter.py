"""Presenter mode on every page (AppTest): ``?presenter=true`` turns it on and keeps it in
the link, the page's introduction and notes fold into the title row's "?" popover (and a
model page's prompt into "Prompt"), chart text is at least 16 px, and the toggle turns it
off again. The browser half (first screen, keys) is tests/test_browser_presenter.py."""

from __future__ import annotations

import plotly.graph_objects as go
import pytest

from gptviz.app.shared.presenter import CHART_FONT_PX, PRESENTER_CSS, legible
from tests.helpers import app_test, rerun

PAGES = ["home", "lesson", "tokenizers", "embeddings", "positional", "attention", "block",
         "generation", "training", "learning"]
INTRO = {  # a sentence of each page's introduction
    "home": "A GPT turns text into a probability distribution",
    "attention": "Attention lets each token gather information",
    "block": "A GPT is a stack of identical blocks",
    "generation": "A GPT reads the last",
    "training": "Training a GPT means lowering one number",
}
PROMPT_IN_POPOVER = {"embeddings", "attention", "block", "generation"}


def _popovers(at) -> dict[str, object]:
    return {p.proto.popover.label: p for p in at.get("popover")}


def _in(block, text: str) -> bool:
    return any(text in m.value for m in block.get("markdown"))


@pytest.mark.parametrize("name", PAGES)
def test_presenter_mode_folds_the_introduction_and_keeps_the_link(name):
    at = app_test(presenter="true")  # the router: pages link to each other
    at.switch_page(f"app_pages/{name}.py")
    rerun(at)
    assert not at.exception, at.exception
    assert at.toggle(key="presenter").value is True
    assert at.query_params.get("presenter") in ("true", ["true"])
    assert any(PRESENTER_CSS in h.value for h in at.get("html"))
    pops = _popovers(at)
    assert "?" in pops, list(pops)
    if name in INTRO:  # in the popover, not on the page
        assert _in(pops["?"], INTRO[name])
        main_text = [m.value for m in at.main.get("markdown")
                     if not any(m in p.get("markdown") for p in pops.values())]
        assert not any(INTRO[name] in v for v in main_text)
    if name in PROMPT_IN_POPOVER:
        assert "Prompt" in pops
        assert pops["Prompt"].get("text_area"), "the prompt box is in its popover"
    at.toggle(key="presenter").set_value(False)
    rerun(at)
    assert not at.exception
    assert "presenter" not in at.query_params
    assert not any(PRESENTER_CSS in h.value for h in at.get("html"))
    if name in INTRO:
        assert _in(at.main, INTRO[name])


def test_legible_figures_read_from_the_back_of_the_room():
    fig = go.Figure(go.Bar(x=["a", "b"], y=[1, 2])).update_layout(
        font_size=11, xaxis_title="token", yaxis_tickfont_size=9, legend_font_size=10)
    fig.add_annotation(text="note", font_size=8, x=0, y=1)
    big = legible(fig)
    assert big.layout.font.size >= CHART_FONT_PX
    assert big.layout.xaxis.tickfont.size >= CHART_FONT_PX
    assert big.layout.yaxis.tickfont.size >= CHART_FONT_PX
    assert big.layout.xaxis.title.font.size >= CHART_FONT_PX
    assert big.layout.legend.font.size >= CHART_FONT_PX
    assert big.layout.annotations[0].font.size >= CHART_FONT_PX - 2
    assert fig.layout.yaxis.tickfont.size == 9  # the figure given is not changed (cached)
