"""Labels that must not collide: with a line, with each other, with the edge of the plot.

Each test rebuilds a chart from numbers like those the review found it wrong with (and more
numbers of the same kind), works out where its labels land in pixels, and checks that they
are clear: the value labels of the logit waterfall and its dashed logit line (Transformer
block), the token labels of the vocabulary PCA (Embeddings), the token labels of the beam
tree (Generation), the tick labels of the temperature panels (Lesson step 12), and the η
label of the Learning page's SGD-step chart. One browser test checks the real layout of
the Lesson's panels, whose tick labels plotly places itself.
"""

from __future__ import annotations

import itertools
import math
import re

import numpy as np
import pytest

from gptviz.app.block import prediction_figures as pf
from gptviz.app.embeddings import figures as ve
from gptviz.app.generation import search_figures as sf
from gptviz.app.speedups.svgaxes import text_width


def overlap(a, b) -> bool:
    """Whether boxes (left, top, right, bottom) share any area."""
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


# ---- 1. the direct-logit-attribution waterfall ---------------------------------------------

# The review's case (Transformer block, position 22): the L3 FFN bar ends at 11.07, 0.41
# under the model's logit 11.4814, and its "+2.29" sat on the dashed line.
REVIEW_DLA = [0.11, 0.01, 0.0, -0.01, 0.03, 0.0, 0.01, 2.86, 0.09, 0.10, 0.04, -0.04, 0.04,
              2.16, -0.09, 0.04, 0.03, -0.02, 0.04, 2.98, 0.14, 0.02, 0.02, 0.14, 0.05,
              2.2854, 0.4114]


def waterfall_label_extents(fig) -> list[tuple[str, float, float]]:
    """(label, low, high): the y extent (data units) of every value label the waterfall
    draws, from its fixed y range and the most its plot area can be high (plotly puts an
    outside label PAD_PX beyond the bar's end, an inside one PAD_PX within it)."""
    trace = fig.data[0]
    y = np.asarray(trace.y, np.float64)
    ends = np.append(np.cumsum(y[:-1]), y[:-1].sum())
    starts = np.append(ends[:-1] - y[:-1], 0.0)
    lo, hi = fig.layout.yaxis.range or (min(0.0, ends.min()), max(0.0, ends.max()))
    plot_px = pf._plot_px(list(trace.x), len(y) - 1 > 12)
    unit = (hi - lo) / plot_px
    pad, text = pf.PAD_PX * unit, fig.layout.meta["label_px"] * unit  # level or upright
    places = trace.textposition
    places = [places] * len(y) if isinstance(places, str) else list(places)
    out = []
    for i, (label, place) in enumerate(zip(trace.text, places, strict=True)):
        s = 1.0 if ends[i] >= starts[i] else -1.0
        if place == "outside":
            out.append((label, *sorted((ends[i] + s * pad, ends[i] + s * (pad + text)))))
        elif place == "inside":
            assert abs(ends[i] - starts[i]) >= 2 * pad + text, f"{label} does not fit its bar"
            out.append((label, *sorted((ends[i] - s * pad, ends[i] - s * (pad + text)))))
    for note in fig.layout.annotations:
        if note.name == "value label":  # beyond the bar's start
            s = -1.0 if note.yanchor == "top" else 1.0
            out.append((note.text, *sorted((note.y + s * pad, note.y + s * (pad + text)))))
    return out


def dla_cases():
    yield "review", REVIEW_DLA, sum(REVIEW_DLA)
    rng = np.random.default_rng(0)
    for k in range(40):  # other numbers: some bars end just under or over the line
        values = rng.normal(0, 1.5, size=int(rng.integers(3, 30))).round(3).tolist()
        real = sum(values)
        values[-2] += rng.choice([-1, 1]) * rng.uniform(0.05, 0.6)  # a bar near the line
        values[-1] = real - sum(values[:-1])
        yield f"random-{k}", values, real


@pytest.mark.parametrize(("case", "values", "real"), list(dla_cases()),
                         ids=lambda v: v if isinstance(v, str) else "")
def test_waterfall_value_labels_clear_of_the_logit_line(case, values, real):
    labels = [f"c{i}" for i in range(len(values))]
    fig = pf.logit_waterfall(labels, values, real, "t")
    extents = waterfall_label_extents(fig)
    assert len(extents) == len(values) + 1  # every bar keeps its value label
    lo, hi = fig.layout.yaxis.range
    unit = (hi - lo) / pf._plot_px(list(fig.data[0].x), len(values) > 12)
    for label, a, b in extents:
        assert not a - unit < real < b + unit, f"{case}: the dashed line crosses {label!r}"
        assert lo <= a and b <= hi, f"{case}: {label!r} leaves the plot"
    key = next(n for n in fig.layout.annotations if n.name == "logit key")
    assert key.yref == "paper" and key.y >= 1 and key.yanchor == "bottom"  # above the plot


def test_waterfall_review_case_moves_the_crossed_label_inside_its_bar():
    fig = pf.logit_waterfall([f"c{i}" for i in range(len(REVIEW_DLA))], REVIEW_DLA,
                             11.4814, "t")
    assert list(fig.data[0].textposition)[-3:] == ["inside", "outside", "outside"]


# ---- 2. the vocabulary PCA -----------------------------------------------------------------

def pca_label_boxes(fig) -> tuple[list[tuple], list[tuple]]:
    """The px boxes of the labelled input tokens and of every red point, in the narrowest
    plot area the figure is laid out for."""
    trace = fig.data[1]
    pts = np.column_stack([trace.x, trace.y])
    px = ve.to_px(pts, fig.layout.xaxis.range, fig.layout.yaxis.range)
    places = trace.textposition
    places = [places] * len(px) if isinstance(places, str) else list(places)
    boxes = [ve.label_box(x, y, ve.label_px([t], ve.TEXT_SIZE), p)
             for (x, y), t, p in zip(px, trace.text, places, strict=True) if t]
    r = ve.MARKER_PX / 2
    return boxes, [(x - r, y - r, x + r, y + r) for x, y in px]


def pca_cases():
    rng = np.random.default_rng(1)
    # the review's case: a dozen input tokens in one cluster of the PCA
    yield "cluster", np.vstack([rng.normal(0, 0.4, (300, 2)), rng.normal(-0.2, 0.05, (16, 2))])
    for k in range(6):
        yield f"random-{k}", rng.normal(0, 1, (int(rng.integers(20, 400)), 2)) * [1, 0.3]
    yield "same point", np.zeros((20, 2))


@pytest.mark.parametrize(("case", "coords"), list(pca_cases()), ids=lambda v: v
                         if isinstance(v, str) else "")
def test_pca_token_labels_do_not_overlap(case, coords):
    n = len(coords)
    labels = [f"·token{i}" for i in range(n)]
    highlight = list(range(n - 16, n)) + [n - 1]  # 16 input tokens, one twice
    fig = ve.pca_scatter(coords, labels, highlight)
    boxes, dots = pca_label_boxes(fig)
    for a, b in itertools.combinations(boxes, 2):
        assert not overlap(a, b), f"{case}: two token labels overlap"
    for box in boxes:
        assert not any(overlap(box, d) for d in dots), f"{case}: a label covers a red point"
        assert box[0] >= 0 and box[1] >= 0 and box[2] <= ve.MIN_PLOT_W and box[3] <= ve.PLOT_H
    shown, name = len(boxes), fig.data[1].name
    assert name == "input tokens" if shown == 16 else f"({shown} of 16 labelled)" in name
    assert shown >= 1
    assert sorted(fig.data[1].customdata) == sorted(labels[n - 16:])  # all hover


def test_pca_cluster_of_the_review_labels_some_and_says_so():
    coords = dict(pca_cases())["cluster"]
    fig = ve.pca_scatter(coords, [f"·w{i}" for i in range(len(coords))],
                         range(len(coords) - 16, len(coords)))
    assert "labelled" in fig.data[1].name  # not all 16 fit in a cluster 0.1 wide


# ---- 3. the beam tree -----------------------------------------------------------------------

# The review's tree (3 beams, 12 steps): at steps 9-12 edges climb into "I", "nt", "b", "·a".
BEAM_TOKENS = [["↵", "·The", "·For"], ["↵", "·a", "orem"], ["A", "Theorem", "The"],
               ["·", "b", "·("], ["st", "4", "5"], ["ract", ".", "."], ["↵", "1", "1"],
               ["↵", ".", "."], ["↵", "A", "I"], ["A", "nt", "t"], ["rodu", "·is", "b"],
               ["ction", "st", "·a"]]
BEAM_PARENTS = [[0, 0, 0], [0, 0, 1], [0, 1, 0], [0, 0, 1], [1, 0, 0], [0, 1, 2], [0, 1, 2],
                [0, 1, 2], [0, 0, 0], [0, 2, 2], [1, 2, 0], [0, 2, 1]]
BEAM_LINEAGE = [[0, 0, 0, 1, 0, 0, 0, 0, 2, 1, 0, 0], [0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 2, 1],
                [0, 0, 0, 1, 0, 0, 0, 0, 2, 2, 1, 2]]


def beam_collisions(fig, plot_w: float) -> list[str]:
    """What the beam tree's token labels meet in a plot area ``plot_w`` px wide: edges,
    other nodes, other labels, the plot's edge."""
    nodes = fig.data[-1]
    n_steps = int(max(nodes.x))
    rows = int(max(nodes.y)) + 1
    sx, sy = sf.tree_scale(n_steps, rows, plot_w)
    px = [(x * sx, y * sy) for x, y in zip(nodes.x, nodes.y, strict=True)]
    segs = []
    for trace in fig.data[:-1]:
        pts = list(zip(trace.x, trace.y, strict=True))
        segs += [((a[0] * sx, a[1] * sy), (b[0] * sx, b[1] * sy))
                 for a, b in zip(pts[::3], pts[1::3], strict=True)]
    places = nodes.textposition
    places = [places] * len(px) if isinstance(places, str) else list(places)
    boxes = [sf.tree_label_box(x, y, t, p) for (x, y), t, p in zip(px, nodes.text, places,
                                                                    strict=True)]
    lo, hi = fig.layout.xaxis.range
    y_lo, y_hi = sorted(fig.layout.yaxis.range or (-0.5, rows - 0.5))
    r = sf.TREE_MARKER / 2
    out = []
    for i, (box, text) in enumerate(zip(boxes, nodes.text, strict=True)):
        out += [f"{text!r} × edge" for p, q in segs if sf.crosses(box, p, q)]
        out += [f"{text!r} × node {j}" for j, (x, y) in enumerate(px)
                if overlap(box, (x - r, y - r, x + r, y + r))]
        out += [f"{text!r} × {nodes.text[j]!r}" for j in range(i) if overlap(box, boxes[j])]
        if not (lo * sx <= box[0] and box[2] <= hi * sx and y_lo * sy <= box[1]
                and box[3] <= y_hi * sy):
            out.append(f"{text!r} leaves the plot")
    return out


def test_beam_tree_labels_of_the_review_meet_no_edge_node_or_label():
    """The review's labels ("I", "nt", "t", "b", "·a": edges climbed through them) and all
    the others but one: "·The" at step 1 has edges on all four sides (from the prompt, to
    step 2's first two beams and down to its third), so some edge meets it wherever it goes."""
    fig = sf.beam_tree(BEAM_TOKENS, BEAM_PARENTS, np.zeros((12, 3)), np.zeros((12, 3)),
                       BEAM_LINEAGE)
    for plot_w in (*sf.REF_WS, 750):
        met = beam_collisions(fig, plot_w)
        assert all(m.startswith("'·The' × edge") for m in met), (plot_w, met)
        assert len(met) <= 1


def free_places(fig, i: int, plot_w: float) -> list[str]:
    """The places where node ``i``'s label would meet no edge at width ``plot_w``."""
    nodes = fig.data[-1]
    out = []
    for place in sf.PLACES:
        trial = list(nodes.textposition)
        trial[i] = place
        nodes.textposition = trial
        met = beam_collisions(fig, plot_w)
        if not any(m.startswith(f"{nodes.text[i]!r} × edge") for m in met):
            out.append(place)
    return out


@pytest.mark.parametrize("seed", range(12))
def test_beam_tree_labels_clear_of_edges_wherever_they_can_be(seed):
    """In random trees, a label meets an edge only when no place of it would not."""
    rng = np.random.default_rng(seed)
    width, steps = int(rng.integers(2, 5)), int(rng.integers(3, 10))
    tokens = [[f"{'·ab'[int(k) % 3]}{'xyz'[:int(k) % 4]}{j}" for j, k in
               enumerate(rng.integers(0, 12, width))] for _ in range(steps)]
    parents = [[0] * width] + [sorted(rng.integers(0, width, width).tolist())
                               for _ in range(steps - 1)]
    lineage = [rng.integers(0, width, steps).tolist()]
    fig = sf.beam_tree(tokens, parents, np.zeros((steps, width)), np.zeros((steps, width)),
                       lineage)
    chosen = list(fig.data[-1].textposition)
    for plot_w in sf.REF_WS:
        fig.data[-1].textposition = chosen
        for m in beam_collisions(fig, plot_w):
            if "× edge" in m:
                i = next(k for k, t in enumerate(fig.data[-1].text) if m.startswith(repr(t)))
                fig.data[-1].textposition = chosen
                assert not (set(free_places(fig, i, sf.REF_WS[0]))
                            & set(free_places(fig, i, sf.REF_WS[1]))), (plot_w, m)
                fig.data[-1].textposition = chosen


# ---- 4. Lesson step 12: the temperature panels ---------------------------------------------

def test_temperature_panels_tick_labels_stay_in_their_panel():
    from gptviz.app.generation.figures import temperature_panels

    probs = [np.array([0.986, 0.013, 0.001]), np.array([0.33, 0.14, 0.53]),
             np.array([0.1, 0.06, 0.84])]
    fig = temperature_panels(
        ["↵", "·The", "·For"], [(0.2, probs[0], 0.076), (1.0, probs[1], 2.634),
                                (2.0, probs[2], 4.611)], [3.0, 1.0, 0.5])
    axes = [fig.layout[name] for name in ("xaxis", "xaxis2", "xaxis3")]
    for axis in axes:  # a label starts at its tick; one that would leave its panel is hidden
        assert axis.ticklabelposition == "outside right"
        assert axis.ticklabeloverflow == "hide past domain"
    domains = sorted(tuple(a.domain) for a in axes)
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(domains))  # panels apart
    assert all("<br>H = " in a.text for a in fig.layout.annotations)  # titles on two lines


@pytest.mark.browser
@pytest.mark.parametrize("width", [1400, 800])
def test_lesson_step_12_panel_labels_do_not_overlap(page, app_url, width):
    """In Chromium: step 12's tick labels and panel titles, as plotly drew them."""
    from tests.helpers import screenshot, settle, visit

    page.set_viewport_size({"width": width, "height": 1000})
    visit(page, f"{app_url}/lesson?step=12")
    page.get_by_role("button", name="Reveal the answer").click()
    chart = page.locator('[data-testid="stPlotlyChart"]:has(.main-svg)').first
    chart.wait_for()
    settle(page)
    screenshot(page, f"label-collisions-lesson-12-{width}")
    for selector in (".xaxislayer-above text", ".annotation-text"):
        boxes = chart.evaluate(
            """(el, sel) => [...el.querySelectorAll(sel)]
                .filter(t => t.textContent && getComputedStyle(t).display !== 'none'
                        && t.getBoundingClientRect().width > 0)
                .map(t => { const r = t.getBoundingClientRect();
                            return [r.left, r.top, r.right, r.bottom, t.textContent]; })""",
            selector)
        assert len(boxes) >= 3, selector
        for a, b in itertools.combinations(boxes, 2):
            assert not overlap(a[:4], b[:4]), f"{width}px: {a[4]!r} and {b[4]!r} overlap"


# ---- 5. the Learning page's SGD-step chart -------------------------------------------------

@pytest.mark.parametrize("chosen", [1e-6, 1e-5, 1e-4, 1.0, 1e12, 1e20])
def test_sgd_step_chart_eta_label_stays_in_the_chart(chosen):
    from gptviz.app.learning.figures import step_profile_figure
    from gptviz.app.learning.step import ETAS, eta_label

    etas = [e for e in ETAS if e > 0]
    after = [3.0 - 0.2 * i if i < 12 else math.nan for i in range(len(etas))]
    chart = step_profile_figure(etas, after, after, 3.0, 3.5, 1273.7, 1.665e4, chosen)
    width = float(re.search(r'viewBox="0 0 (\d+)', chart.html).group(1))
    m = re.search(r'<text class="gv-sp-vlabel" x="([-\d.]+)" y="[-\d.]+" '
                  r'text-anchor="(start|end)">([^<]*)</text>', chart.html)
    x, anchor, label = float(m.group(1)), m.group(2), m.group(3)
    assert label == f"η = {chosen:g}" and eta_label(chosen)
    left = x - text_width(label) if anchor == "end" else x
    assert left >= 0 and left + text_width(label) <= width, (chosen, left)
