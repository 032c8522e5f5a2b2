"""The Generation page's top-k bars drawn as HTML (gptviz/app/generation/bars.py): the
same candidates as the plotly chart the Lesson draws, widths proportional to P on one
axis, the chosen token marked, token text escaped."""

from __future__ import annotations

import re
from html import unescape

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gptviz.app.generation import bars
from gptviz.app.generation import figures as figs


def rows(html: str) -> list[dict[str, str]]:
    """Each bar's attributes: id, P, hover title, label, width (%) and colour."""
    found = re.findall(
        r'<div class="gv-topk-row" data-id="(\d+)" data-p="([^"]+)" title="([^"]*)">'
        r'<div class="gv-topk-label">(.*?)</div><div class="gv-topk-scale">'
        r'<div class="gv-topk-bar" style="width:([\d.]+)%;background:(#[0-9a-f]+)"></div>'
        r'<span class="gv-topk-val">([^<]*)</span>', html)
    keys = ("id", "p", "title", "label", "width", "colour", "value")
    return [dict(zip(keys, (*f[:-1], unescape(f[-1])), strict=True)) for f in found]


def test_the_bars_are_the_plotly_charts_candidates():
    labels = ["a", " b", "\n", "d", "e"]
    probs, logits = np.array([0.05, 0.6, 0.3, 0.04, 0.01]), np.array([1.0, 3.5, 2.8, .9, -1])
    c = bars.candidates(labels, probs, chosen=4, logits=logits, k=3)
    fig = figs.topk_bars(labels, probs, chosen=4, logits=logits, k=3)
    got = rows(bars.topk_html(c, chosen=4, title="top 3"))
    assert [r["label"] for r in got] == list(fig.layout.yaxis.ticktext) == \
        ["·b", "↵", "a", "e ◀ chosen"]
    assert [float(r["p"]) for r in got] == pytest.approx(list(fig.data[0].x))
    assert [r["value"] for r in got] == list(fig.data[0].text) == ["60.0%", "30.0%", "5.0%",
                                                                    "1.0%"]
    assert [r["colour"] for r in got] == list(fig.data[0].marker.color) == \
        [bars.BAR, bars.BAR, bars.BAR, bars.CHOSEN]
    assert got[0]["title"] == "·b (id 1)&#10;y = 3.500&#10;P = 60.00%"  # what hover says
    assert c.right == fig.layout.xaxis.range[1] == pytest.approx(0.6 * 1.25 + .02)


@given(st.lists(st.floats(0, 1, allow_nan=False), min_size=1, max_size=40))
def test_widths_are_p_over_the_axis(weights):
    p = np.array(weights) + 1e-6
    p /= p.sum()
    c = bars.candidates([f"t{i}" for i in range(len(p))], p, k=10)
    got = rows(bars.topk_html(c))
    assert len(got) == min(10, len(p))
    widths = np.array([float(r["width"]) for r in got])
    assert widths == pytest.approx(100 * c.p / c.right, abs=1e-3)
    assert widths.max() <= 100 and np.all(np.diff(widths) <= 1e-3)  # best first


def test_hover_shows_the_whole_token():
    long = "-" * 40
    got = rows(bars.topk_html(bars.candidates([long, "a"], [0.6, 0.4])))
    assert got[0]["label"] == "-" * bars.TICK_CHARS + "…" and got[0]["title"].startswith(long)


def test_token_text_is_escaped():
    html = bars.topk_html(bars.candidates(['<img src=x onerror="alert(1)">', "&"],
                                          [0.7, 0.3], logits=[1.0, 0.0]))
    assert "<img" not in html and "&lt;img" in html and "&amp;" in html
    assert 'onerror="' not in html


def test_the_axis_ticks_end_inside_the_axis():
    for right in (0.023, 0.3, 0.9, 1.0):
        c = bars.Candidates([0], ["a"], ["a"], ["a"], np.array([right / 1.3], np.float32),
                            np.array([np.nan], np.float32), right)
        ticks = re.findall(r'<span style="left:([\d.]+)%">([^<]+)</span>', bars.topk_html(c))
        assert 3 <= len(ticks) <= 6 and ticks[0] == ("0.000", "0%" if right > .05 else "0.0%")
        assert all(0 <= float(left) <= 100 for left, _ in ticks)
        step = bars.tick_step(right)
        assert [float(left) for left, _ in ticks] == pytest.approx(
            [100 * i * step / right for i in range(len(ticks))], abs=1e-3)
