"""Legible at GPT-2's size (12 layers of 12 heads, 50,257 tokens, 1,024 positions), checked
on the figure builders:

- probabilities: one function writes them everywhere, and a small one keeps its digits
  (0.02%, 2.1e-5), never "<1%" for all;
- token tick labels: thinned by a stated rule to what fits at their type size (16 px in
  presenter mode);
- layers: told apart up to 48 of them (no colour shared by two blocks);
- the all-heads grid: one layer's heads large, every head as an overview, text ≥ 12 px;
- the sinusoids at N = 1,024: drawn over as many positions as stay readable;
- "Sample N times": every bar labelled, "all others" included;
- the Block page's attribution labels: 12 px, never shrunk to their bar.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gptviz.analysis import core as analysis
from gptviz.app.attention import figures as va
from gptviz.app.attention.view import overview_cell_px
from gptviz.app.block import prediction_figures as pf
from gptviz.app.generation import bars, branch_figure, figures
from gptviz.app.learning import figures as lf
from gptviz.app.learning.step import p_change
from gptviz.app.positional import figures as vp
from gptviz.app.shared.heatmaps import LINE_EM, heatmap, label_px
from gptviz.app.shared.presenter import CHART_FONT_PX, legible
from gptviz.app.shared.tex import percent, percent_tex
from gptviz.app.shared.ticks import thin_ticks, tick_room
from gptviz.app.speedups.svgplot import read_marks
from tests.helpers import read_percent

GPT2_V = 50257


def gpt2_like(seed: int = 0) -> np.ndarray:
    """A next-token distribution over 50,257 ids whose largest P is ~2e-4, as an untrained
    GPT-2 gives: every shown probability is well under 1 %."""
    y = np.random.default_rng(seed).normal(0, 1, GPT2_V)  # (|V|,)
    p = np.exp(y - y.max())
    return p / p.sum()


# ---- probabilities ------------------------------------------------------------------------

@pytest.mark.parametrize(("p", "digits", "text"), [
    (0.0, 2, "0%"), (1.0, 2, "100.0%"), (0.2931, 2, "29.3%"), (0.01, 2, "1.0%"),
    (0.0099999, 2, "1.0%"), (0.0049, 2, "0.49%"), (0.0002, 2, "0.02%"), (1e-4, 2, "0.01%"),
    (9.999e-5, 2, "0.01%"), (1.94e-5, 2, "1.9e-5"), (2.1e-9, 2, "2.1e-9"),
    (0.2931, 1, "29%"), (0.0046, 1, "0.5%"), (0.0002, 1, "0.02%"), (2.1e-5, 1, "2e-5"),
    (0.2931, 3, "29.31%"), (0.004523, 3, "0.452%"), (1.9e-5, 3, "1.90e-5"),
    (float("nan"), 2, "NaN")])
def test_percent_writes_the_stated_rule(p, digits, text):
    assert percent(p, digits) == text


@settings(max_examples=300, deadline=None)
@given(p=st.floats(1e-12, 1.0), digits=st.integers(1, 3))
def test_a_percent_reads_back_within_its_digits(p, digits):
    text = percent(p, digits)
    assert "<" not in text and ">" not in text
    longest = {1: 5, 2: 6, 3: 8}[digits] + (p < 1e-9)  # "100.0%"; "1.0e-12" past 1e-9
    assert len(text) <= longest
    # one decimal of percent from 1 %: at most 5 % off at 1 %; significant digits below it
    assert read_percent(text) == pytest.approx(p, rel=0.5 * 10 ** (1 - digits) + 1e-9)


@settings(max_examples=300, deadline=None)
@given(p=st.floats(1e-12, 0.5))
def test_a_probability_twice_another_is_written_differently(p):
    """Small probabilities carry their size: 2e-5 and 4e-5 are not both "<1%"."""
    assert percent(p) != percent(2 * p)
    assert read_percent(percent(p)) < read_percent(percent(2 * p))


def test_percent_tex_sets_powers_of_ten():
    assert percent_tex(2.1e-5) == r"2.1{\times}10^{-5}"
    assert percent_tex(0.0002) == r"0.02\%"


def test_the_generation_bars_label_gpt2s_small_probabilities():
    p = gpt2_like()
    c = bars.candidates([f"t{i}" for i in range(GPT2_V)], p, chosen=int(np.argmin(p)), k=10)
    html = bars.topk_html(c, chosen=int(np.argmin(p)))
    shown = [percent(float(q)) for q in c.p]
    for text in shown:
        assert f'<span class="gv-topk-val">{text}</span>' in html
    assert "&lt;1%" not in html and "<1%" not in html
    assert len(set(shown[:10])) > 1  # the top ten are told apart by their labels
    assert "e-" in shown[-1]  # the chosen least probable id: ~1e-9, in powers of ten
    p10 = float(c.p[0])
    assert f"P = {percent(p10, 3)}" in html  # hover: one more digit


def test_tree_edges_write_small_probabilities():
    xy = {(): (0, 0), (4,): (1, 0), (5,): (1, 1), (4, 6): (2, 0)}
    probs = {(4,): 2.1e-5, (5,): 0.0002, (4, 6): 0.31}
    fig = branch_figure.branch_tree(xy, {p: "x" for p in probs}, probs, (4, 6),
                                    {p: str(p) for p in xy})
    edges = next(t for t in fig.data if t.name == "P of each edge")
    assert sorted(edges.text) == ["0.02%", "2e-5", "31%"]
    assert branch_figure.edge_label(0.0046) == "0.5%"
    assert "P = 2.10e-5" in fig.data[-1].customdata[1][1]  # the node's hover


def test_learning_writes_p_y_and_its_change_as_percent():
    assert p_change(1.9e-5) == "+1.90e-5" and p_change(-0.0123) == "-1.23%"
    assert p_change(0.0) is None


def test_the_sample_histogram_labels_every_bar_all_others_included():
    p = gpt2_like(1)
    counts = np.zeros(GPT2_V, np.int64)
    counts[np.argsort(-p)[20:1020]] = 1  # 1,000 draws, none in the top ten
    fig = figures.sample_histogram([f"t{i}" for i in range(GPT2_V)], counts, p, k=10)
    want, drawn = fig.data
    assert list(fig.layout.xaxis.ticktext)[-1] == "all others"
    assert list(want.text) == [percent(float(v)) for v in want.y]
    assert list(drawn.text) == [percent(float(v)) for v in drawn.y]
    assert read_percent(want.text[-1]) > 0.99 and drawn.text[-1] == "100.0%"
    assert drawn.text[0] == "0%"  # no draw among the top ten
    # turned labels end at their tick: the last one runs left, into the chart, not past
    # its right edge (turned the other way, "all others" was cut off)
    assert fig.layout.xaxis.tickangle == -30


# ---- token tick labels --------------------------------------------------------------------

def spaced(fig, axis, letter: str) -> float:
    """px between two neighbouring labels of ``axis`` (its span over the labels shown)."""
    full = tick_room(fig, axis, letter) * LINE_EM * (axis.tickfont.size or 12)
    return full / len(axis.tickvals)


@pytest.mark.parametrize(("n", "height", "size", "every"), [
    (23, 640, 12, 1), (128, 640, 12, 4), (128, 640, 16, 5), (128, 300, 12, 8),
    (1024, 640, 12, 32)])
def test_thin_ticks_keeps_the_labels_that_fit_at_their_size(n, height, size, every):
    names = [f"t{i}" for i in range(n)]
    fig = heatmap(np.eye(n), names, names, height=height)
    fig.update_yaxes(tickfont_size=size)
    fig.update_xaxes(tickfont_size=size)
    thin_ticks(fig)
    y = fig.layout.yaxis
    assert list(y.tickvals) == list(range(0, n, every))
    assert list(y.ticktext) == names[::every]
    assert spaced(fig, y, "y") >= LINE_EM * size  # a line of text and its gap, at least


@settings(max_examples=60, deadline=None)
@given(n=st.integers(2, 1024), height=st.integers(150, 1200))
def test_thinning_is_the_smallest_step_that_fits(n, height):
    names = [str(i) for i in range(n)]
    fig = thin_ticks(heatmap(np.eye(n, dtype=np.float32), names, names, height=height))
    y = fig.layout.yaxis
    step = y.tickvals[1] - y.tickvals[0] if len(y.tickvals) > 1 else n
    room = min(32, tick_room(fig, y, "y"))
    assert len(y.tickvals) <= room or step == 1 and n <= room
    assert step == 1 or math.ceil(n / (step - 1)) > room  # one step less would not fit


def test_presenter_mode_thins_again_for_its_type_size():
    names = [f"t{i}" for i in range(128)]
    fig = thin_ticks(heatmap(np.eye(128), names, names, height=640))
    assert len(fig.layout.yaxis.tickvals) == 32  # every 4th at 12 px
    big = legible(fig)
    y = big.layout.yaxis
    assert y.tickfont.size == CHART_FONT_PX == 16
    assert spaced(big, y, "y") >= LINE_EM * 16
    assert list(y.ticktext) == names[::8]  # every 2nd of every 4th: 16 labels
    assert len(fig.layout.yaxis.tickvals) == 32  # the figure given is not changed


# ---- layers -------------------------------------------------------------------------------

def norms_of(n_layer: int):
    inside = ["LN₁", "W_Q", "W_K", "W_V", "W_O", "LN₂", "W₁", "W₂", "biases"]
    comps = ["E", "P"] + inside * n_layer + ["LN_f", "W_U"]
    layers = [None, None] + [ly for ly in range(n_layer) for _ in inside] + [None, None]
    norms = np.random.default_rng(n_layer).uniform(0.01, 2.0, len(comps))
    return comps, layers, norms


@pytest.mark.parametrize("n_layer", [1, 2, 8])
def test_few_blocks_get_a_colour_each(n_layer):
    chart = lf.gradient_norms_figure(*norms_of(n_layer))
    blocks = [s for s in chart.series if s.name.startswith("block")]
    assert [s.name for s in blocks] == [f"block {ly}" for ly in range(n_layer)]
    assert len({s.colour for s in chart.series}) == len(chart.series)  # none shared


@pytest.mark.parametrize("n_layer", [9, 12, 24, 48])
def test_many_blocks_are_labelled_along_the_axis_never_by_a_repeated_colour(n_layer):
    comps, layers, norms = norms_of(n_layer)
    chart = lf.gradient_norms_figure(comps, layers, norms)
    names = [s.name for s in chart.series]
    assert names[0] == "outside the blocks" and len(names) == 10  # 9 components + outside
    assert len({s.colour for s in chart.series}) == len(chart.series)
    marks = read_marks(chart.html)
    blocks = {m["x"] for m in marks if m["x"].startswith("block ")}
    assert blocks == {f"block {ly}" for ly in range(n_layer)}  # every block has its place
    for s in chart.series[1:]:  # a component's bars: one per block, its own colour
        assert s.x == tuple(f"block {ly}" for ly in range(n_layer))
    for m in marks:  # every bar is the value it stands for
        k = next(k for k, (c, ly) in enumerate(zip(comps, layers, strict=True))
                 if m["series"] in (c, "outside the blocks") and (
                     f"block {ly}" == m["x"] if ly is not None else c == m["x"]))
        assert m["y"] == pytest.approx(float(np.float32(norms[k])))


def rgb(colour: str) -> np.ndarray:
    return np.array([int(colour[k:k + 2], 16) for k in (1, 3, 5)], dtype=float)


@pytest.mark.parametrize("n_layer", [2, 6, 12, 24, 48])
def test_the_commitment_strip_tells_its_stages_apart_up_to_48_layers(n_layer):
    """Neighbouring shades differ visibly (at least 20 of 255 in RGB distance) however deep
    the model, the colour bar names the first block of every shade, and each cell's
    colour is the one of its shade."""
    layers = list(range(-1, n_layer))
    fig = pf.commitment_strip(layers, [f"t{i}" for i in layers], ["x"] * len(layers), n_layer)
    scale = fig.data[0].colorscale
    n = n_layer + 1
    colours = [scale[2 * k][1] for k in range(n)]  # value k - 1 (k = 0: the embeddings)
    shades = list(dict.fromkeys(colours))
    assert len(shades) == min(n, pf.MAX_SHADES)
    assert all(np.linalg.norm(rgb(a) - rgb(b)) >= 20 for a, b in itertools.pairwise(shades))
    bar = fig.data[0].colorbar
    assert list(bar.tickvals) == [v - 1 for v in pf.band_starts(n)]
    for v, text in zip(bar.tickvals, bar.ticktext, strict=True):  # a tick per shade
        assert text == ("E" if v < 0 else str(v))
        assert colours[v + 1] == shades[list(bar.tickvals).index(v)]


# ---- the attention grid -------------------------------------------------------------------

def test_gpt2s_heads_are_one_layer_large_and_an_overview():
    assert va.one_grid(4, 4) and va.one_grid(2, 8) and not va.one_grid(12, 12)
    rng = np.random.default_rng(0)
    p = rng.random((12, 12, 23, 23)).astype(np.float32)
    strip = va.layer_strip(p[3], [f"t{i}" for i in range(23)], 3, head=7)
    assert [a.text for a in strip.layout.annotations] == [f"L3 H{h}" for h in range(12)]
    assert all(a.font.size >= 12 for a in strip.layout.annotations)
    assert len(strip.data) == 2 and strip.layout.height <= 400  # two rows of six, 130 px
    for h in range(12):
        np.testing.assert_array_equal(va.strip_tile(strip, h), p[3, h])
    frame = strip.layout.shapes[-1]  # head 7: second row, second column
    assert frame.line.color == "#d62728" and frame.xref == "x2"
    assert strip.data[1].x[0] == "H6, key t0 (0)" and strip.data[1].y[0] == "query t0 (0)"
    overview = va.attention_grid(p, [f"t{i}" for i in range(23)], selected=(3, 7),
                                 cell_px=overview_cell_px(12), axis_names=True)
    assert not overview.layout.annotations  # no title per head: numbers along the axes
    assert list(overview.layout.xaxis.ticktext) == [f"H{h}" for h in range(12)]
    assert list(overview.layout.yaxis.ticktext) == [f"L{ly}" for ly in range(12)]
    assert overview.layout.xaxis.tickfont.size >= 12 and overview.layout.xaxis.side == "top"
    for ly, h in ((0, 0), (11, 11), (3, 7)):
        np.testing.assert_array_equal(va.grid_tile(overview.data[0].z, overview.layout.meta,
                                                   ly, h), p[ly, h])
    x, y = overview.data[0].x, overview.data[0].y
    g = overview.layout.meta["grid"]
    for h, val in enumerate(overview.layout.xaxis.tickvals):  # each number at its tile
        assert x.index(val) == h * (23 + g["col_gap"]) + 11
    assert y.index(overview.layout.yaxis.tickvals[11]) == 11 * (23 + g["row_gap"]) + 11


# ---- positions ----------------------------------------------------------------------------

def crossings(col: np.ndarray) -> int:
    c = col - col.mean()
    return int(np.count_nonzero(np.signbit(c[1:]) != np.signbit(c[:-1])))


def test_the_sinusoids_at_1024_positions_are_drawn_over_a_readable_span():
    P = analysis.sinusoidal_pe(1024, 768)
    most = vp.PLOT_PX // vp.PX_PER_CROSSING
    assert crossings(P[:, 0]) > 300  # the whole column: a solid band
    for dims in ([0, 1, 8, 384, 766], [0], [8], [384, 766]):
        n = vp.readable_positions(P, dims)
        if n < 1024:
            assert max(crossings_within(P[:, d], n) for d in dims) <= most
            assert max(crossings_within(P[:, d], n + 1) for d in dims) > most
        chart = vp.pe_curves(P[:n], dims)
        assert len(chart.series[0].x) == n
    assert vp.readable_positions(P, [384, 766]) == 1024  # slow ones: every position
    assert vp.readable_positions(P, [0]) == 142


def crossings_within(col: np.ndarray, n: int) -> int:
    """Crossings of the whole column's mean among its first n positions."""
    c = col - col.mean()
    return int(np.count_nonzero(np.signbit(c[1:n]) != np.signbit(c[:n - 1])))


# ---- attribution and the residual chain ---------------------------------------------------

@pytest.mark.parametrize("n", [5, 26, 39])
def test_attribution_labels_are_12px_and_turn_upright_when_bars_are_narrow(n):
    values = np.random.default_rng(n).normal(0, 1, n).round(3).tolist()
    fig = pf.logit_waterfall([f"c{i}" for i in range(n)], values, sum(values), "t")
    bar = fig.data[0]
    assert bar.textfont.size == 12 and bar.constraintext == "none"  # never shrunk
    width = pf.PLOT_W_PX / (n + 1) * pf.BAR_SHARE  # px of a bar
    upright = bar.textangle == -90
    assert upright == (width < label_px(bar.text, 12) + 4) == (n > 5)
    assert fig.layout.meta["label_px"] == (pf.TEXT_PX if not upright else pytest.approx(
        pf.label_extent_px(bar.text, n + 1)[0]))
    for note in fig.layout.annotations:
        if note.name == "value label":
            assert note.font.size == 12 and note.textangle == bar.textangle
