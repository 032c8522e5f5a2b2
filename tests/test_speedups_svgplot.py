"""The SVG charts: golden tick values, bars and points read back from the HTML against their
inputs, gaps and clipping of lines, log axes that leave out values ≤ 0, escaping, and the
empty chart."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from gptviz.app.speedups.svgaxes import linear_ticks, log_ticks, nice_step, tick_text
from gptviz.app.speedups.svgplot import Series, bar_chart, line_chart, read_marks

NASTY = ["<script>alert(1)</script>", "a & b", 'say "hi"', "new\nline", " ", "数学", "x'y"]


def bars(chart) -> list[dict]:
    return [m for m in read_marks(chart.html) if m["tag"] == "rect"]


def points(chart) -> list[dict]:
    return [m for m in read_marks(chart.html) if m["tag"] in ("circle", "path") and m["x"]
            is not None]


def tick_texts(html: str) -> list[str]:
    return re.findall(r'class="gv-sp-tick"[^>]*>([^<]*)<', html)


def path_pieces(chart, series: str) -> list[list[tuple[float, float]]]:
    """The (x, y) vertices of a line's path, one list per M … L piece."""
    d = next(m["attrs"]["d"] for m in read_marks(chart.html)
             if m["tag"] == "path" and m["series"] == series and m["x"] is None)
    return [[tuple(map(float, xy.split())) for xy in re.split("L", piece)]
            for piece in d.split("M")[1:]]


@pytest.mark.parametrize("lo, hi, expected", [
    (0, 1, [0, 0.2, 0.4, 0.6, 0.8, 1]),
    (-0.93, 0.6, [-0.8, -0.6, -0.4, -0.2, 0, 0.2, 0.4, 0.6]),
    (0, 730, [0, 100, 200, 300, 400, 500, 600, 700]),
    (1.5, 3.1, [1.6, 1.8, 2, 2.2, 2.4, 2.6, 2.8, 3]),
    (-3e-5, 1e-5, [-3e-5, -2.5e-5, -2e-5, -1.5e-5, -1e-5, -5e-6, 0, 5e-6, 1e-5]),
])
def test_linear_ticks_are_nice(lo, hi, expected):
    assert linear_ticks(lo, hi) == pytest.approx(expected, abs=1e-15)


def test_tick_text_golden():
    step = nice_step(1.53, 8)
    assert [tick_text(v, step) for v in linear_ticks(-0.93, 0.6)] == [
        "−0.8", "−0.6", "−0.4", "−0.2", "0", "0.2", "0.4", "0.6"]
    assert [tick_text(v, 100.0) for v in (0, 100, 1200)] == ["0", "100", "1200"]
    assert tick_text(3e6, 1e6) == "3×10⁶"


def test_log_ticks_are_decades_with_superscripts():
    ticks = log_ticks(-6, 20)
    assert [v for v, _ in ticks] == [10.0**e for e in range(-4, 21, 4)]
    assert [t for _, t in ticks] == ["10⁻⁴", "10⁰", "10⁴", "10⁸", "10¹²", "10¹⁶", "10²⁰"]
    assert [t for _, t in log_ticks(-4.2, 0.3)] == ["10⁻⁴", "10⁻³", "10⁻²", "10⁻¹", "10⁰"]
    assert [t for _, t in log_ticks(-0.1, 2.2)] == ["1", "10", "100"]
    assert [v for v, _ in log_ticks(0.2, 1.1)] == [2, 5, 10]  # under two decades: 1-2-5


def test_bar_chart_y_ticks_read_back():
    chart = bar_chart(["a", "b"], [Series("", "bar", ["a", "b"], [1.0, 0.3])], title="t",
                      y_title="p")
    assert tick_texts(chart.html) == ["0", "0.2", "0.4", "0.6", "0.8", "1", "a", "b"]


def test_bar_heights_are_proportional_and_data_y_is_the_input():
    values = np.array([1.0, 2.0, 4.0, 0.5, 0.1], dtype=np.float32)
    cats = list("abcde")
    got = bars(bar_chart(cats, [Series("s", "bar", cats, values)], title="t", y_title="v"))
    assert [m["x"] for m in got] == cats
    assert [m["y"] for m in got] == [float(v) for v in values]  # exact, float32 → float
    heights = np.array([m["attrs"]["height"] for m in got])
    np.testing.assert_allclose(heights / heights[2], values / 4.0, atol=0.2 / heights[2])
    bottoms = {round(m["attrs"]["y"] + m["attrs"]["height"], 1) for m in got}
    assert len(bottoms) == 1  # every bar stands on the same baseline


def test_negative_bars_hang_below_the_zero_line():
    chart = bar_chart(["up", "down"], [Series("", "bar", ["up", "down"], [0.6, -0.93],
                                              colours=["#1f77b4", "#d62728"])],
                      title="t", y_title="g", zero_line=True)
    up, down = bars(chart)
    zero = float(re.search(r'class="gv-sp-zero"[^>]*y1="([\d.]+)"', chart.html).group(1))
    assert up["attrs"]["y"] + up["attrs"]["height"] == pytest.approx(zero, abs=0.11)
    assert down["attrs"]["y"] == pytest.approx(zero, abs=0.11)
    assert down["attrs"]["height"] / up["attrs"]["height"] == pytest.approx(0.93 / 0.6, rel=1e-2)
    assert (up["attrs"]["fill"], down["attrs"]["fill"]) == ("#1f77b4", "#d62728")


def test_grouped_bars_sit_side_by_side_and_missing_categories_have_none():
    cats = ["E", "W_Q", "W_K", "LN_f"]
    series = [Series("outside", "bar", ["E", "LN_f"], [1.0, 2.0], colour="#7f7f7f"),
              Series("block 0", "bar", ["W_Q", "W_K"], [3.0, 1.0]),
              Series("block 1", "bar", ["W_K", "W_Q"], [2.0, 4.0], colour="#ff7f0e")]
    got = bars(bar_chart(cats, series, title="t", y_title="v"))
    assert sorted((m["series"], m["x"]) for m in got) == sorted(
        (s.name, x) for s in series for x in s.x)
    by_cat = {c: sorted((m for m in got if m["x"] == c), key=lambda m: m["attrs"]["x"])
              for c in cats}
    assert [m["series"] for m in by_cat["W_K"]] == ["block 0", "block 1"]  # in series order
    for group in by_cat.values():
        for left, right in zip(group, group[1:], strict=False):
            assert left["attrs"]["x"] + left["attrs"]["width"] <= right["attrs"]["x"]
    ends = [(g[0]["attrs"]["x"], g[-1]["attrs"]["x"] + g[-1]["attrs"]["width"])
            for g in by_cat.values()]
    assert all(a[1] < b[0] for a, b in zip(ends, ends[1:], strict=False))  # groups apart


def test_log_bars_start_at_the_axis_bottom_and_skip_values_not_above_zero():
    cats = ["a", "b", "c", "d", "e"]
    chart = bar_chart(cats, [Series("", "bar", cats, [1e-3, 0.0, -1.0, math.nan, 10.0])],
                      title="t", y_title="norm", log_y=True)
    got = bars(chart)
    assert [(m["x"], m["y"]) for m in got] == [("a", 1e-3), ("e", 10.0)]
    bottom = {round(m["attrs"]["y"] + m["attrs"]["height"], 1) for m in got}
    assert len(bottom) == 1
    assert {"10⁻³", "10⁻²", "10⁻¹", "10⁰", "10¹"} <= set(tick_texts(chart.html))


def test_a_nan_or_none_breaks_a_line_into_pieces():
    chart = line_chart([Series("L", "line", [1, 2, 3, 4, 5], [1.0, 2.0, math.nan, 3.0, 4.0]),
                        Series("M", "line", [1, 2, 3], [1.0, None, 2.0])],
                       title="t", x_title="x", y_title="y")
    assert [len(p) for p in path_pieces(chart, "L")] == [2, 2]
    assert path_pieces(chart, "M") == []  # no two neighbours to join
    assert sorted(m["x"] for m in points(chart) if m["series"] == "L") == [1.0, 2.0, 4.0, 5.0]


def test_log_x_places_decades_evenly_and_leaves_out_x_not_above_zero():
    chart = line_chart([Series("", "line", [-1.0, 0.0, 1.0, 10.0, 100.0], [5, 4, 3, 2, 1])],
                       title="t", x_title="η", y_title="L", log_x=True)
    got = points(chart)
    assert [m["x"] for m in got] == [1.0, 10.0, 100.0]
    cx = [m["attrs"]["cx"] for m in got]
    assert cx[1] - cx[0] == pytest.approx(cx[2] - cx[1], abs=0.11)
    assert [len(p) for p in path_pieces(chart, "")] == [3]


def test_y_range_hides_points_outside_and_clips_the_line_at_the_edge():
    chart = line_chart([Series("L", "line", [1, 2, 3], [5.0, 20.0, 5.0], marker="circle"),
                        Series("ends", "markers", [1, 3], [0.0, 10.0])],
                       title="t", x_title="x", y_title="y", y_range=(0, 10))
    marks = points(chart)
    assert [m["y"] for m in marks if m["series"] == "L"] == [5.0, 5.0]  # 20 is off the chart
    y0, y10 = (m["attrs"]["cy"] for m in marks if m["series"] == "ends")
    pieces = path_pieces(chart, "L")
    ys = [y for piece in pieces for _, y in piece]
    assert all(y10 - 0.05 <= y <= y0 for y in ys)
    assert len(pieces) == 2 and min(ys) == pytest.approx(y10, abs=0.11)  # cut at the top


def test_markers_hover_and_vlines():
    chart = line_chart([Series("a", "markers", [1e-6, 1e20], [1.0, 2.0], marker="triangle-up",
                               hover=("first", "last")),
                        Series("b", "line", [1e-6, 1e20], [2.0, 1.0], dash="dash")],
                       title="t", x_title="x", y_title="y", log_x=True,
                       vlines=((1e-4, "#1f77b4", "η = 0.0001"), (1e30, "red", "off")))
    tri = [m for m in points(chart) if m["series"] == "a"]
    assert [m["title"] for m in tri] == ["first", "last"]
    assert all(m["title"] for m in points(chart))  # every point has a tooltip
    vline = [m for m in read_marks(chart.html) if m["tag"] == "line"]
    assert [m["x"] for m in vline] == [1e-4]  # 1e30 lies outside the axis
    assert "η = 0.0001" in chart.html and "gv-sp-dash" in chart.html
    assert chart.html.count('class="gv-sp-key"') == 2  # a legend for two named series


def test_long_category_names_are_rotated_and_cut_with_the_whole_name_as_tooltip():
    names = ["antidisestablishmentarianism", *map(str, range(20))]
    chart = bar_chart(names, [Series("", "bar", names, np.arange(1.0, 22.0))], title="t",
                      y_title="v")
    assert chart.html.count("rotate(-45") == len(names)
    assert "antidisestablishm…" in chart.html or "…<title>antidis" in chart.html
    assert "<title>antidisestablishmentarianism</title>" in chart.html
    short = bar_chart(["a", "b"], [Series("", "bar", ["a", "b"], [1, 2])], title="t",
                      y_title="v")
    assert "rotate(-45" not in short.html


def test_labels_are_escaped_and_read_back_whole():
    chart = bar_chart(NASTY, [Series('s<&">', "bar", NASTY, range(1, len(NASTY) + 1))],
                      title="<script>x</script> & co", y_title="<b>")
    html = chart.html
    assert "<script" not in html and "<b>" not in html and "\n" not in html
    assert "&amp;" in html and "&lt;script&gt;" in html
    got = bars(chart)
    assert [m["x"] for m in got] == NASTY
    assert {m["series"] for m in got} == {'s<&">'}
    line = line_chart([Series("<i>", "line", [1, 2], [1, 2], hover=("a<b", "c&d"))],
                      title="&", x_title="<", y_title=">")
    assert [m["title"] for m in points(line)] == ["a<b", "c&d"]
    assert "<i>" not in line.html


@pytest.mark.parametrize("make", [
    lambda: bar_chart([], [], title="t", y_title="v"),
    lambda: bar_chart(["a"], [Series("", "bar", ["a"], [math.nan])], title="t", y_title="v"),
    lambda: bar_chart(["a"], [Series("", "bar", ["a"], [-1.0])], title="t", y_title="v",
                      log_y=True),
    lambda: line_chart([], title="t", x_title="x", y_title="y"),
    lambda: line_chart([Series("a", "line", [], [])], title="t", x_title="x", y_title="y"),
    lambda: line_chart([Series("a", "line", [0.0, -1.0], [1.0, 2.0])], title="t",
                       x_title="x", y_title="y", log_x=True),
])
def test_no_data_gives_a_chart_that_says_so(make):
    chart = make()
    assert "no data" in chart.html and read_marks(chart.html) == []
    assert chart.html.startswith('<div class="gv-svgplot" data-title="t">')


def test_the_html_is_self_contained():
    chart = bar_chart(["a"], [Series("", "bar", ["a"], [1.0])], title="t", y_title="v")
    html = chart.html
    assert re.search(r'<svg viewBox="0 0 \d+ [\d.]+" width="100%"', html)
    assert "font-family:'Source Sans',ui-sans-serif,sans-serif" in html  # the page's face
    assert "url(" not in html and "http" not in html and "@import" not in html
    assert all(c.startswith("gv-sp-") or c == "gv-svgplot"
               for cls in re.findall(r'class="([^"]+)"', html) for c in cls.split())


def test_series_of_mismatched_lengths_or_unknown_style_are_refused():
    with pytest.raises(ValueError, match="another length"):
        Series("s", "line", [1, 2], [1.0])
    with pytest.raises(ValueError, match="unknown"):
        Series("s", "area", [1], [1.0])
    with pytest.raises(ValueError, match="bars go to bar_chart"):
        line_chart([Series("s", "bar", ["a"], [1.0])], title="t", x_title="x", y_title="y")


def test_all_zero_bars_and_unusable_y_ranges_still_draw():
    """Bars that are all 0 get an axis of height 1 (no log10(0)); a y_range that is empty,
    inverted or not finite falls back to the data's own range."""
    zero = bar_chart(["a", "b"], [Series("g", "bar", ("a", "b"), (0.0, 0.0))], title="t",
                     y_title="v", zero_line=True)
    assert [m["y"] for m in read_marks(zero.html) if m["tag"] == "rect"] == [0.0, 0.0]
    line = Series("l", "line", (1.0, 2.0, 3.0), (1.0, 2.0, 3.0), marker="circle")
    for bad in ((2.0, 2.0), (3.0, 1.0), (0.0, math.inf), (math.nan, 1.0)):
        chart = line_chart([line], title="t", x_title="x", y_title="y", y_range=bad)
        shown = [m["y"] for m in read_marks(chart.html) if m["tag"] == "circle"]
        assert shown == [1.0, 2.0, 3.0], bad  # every point is in view
