"""The one rule of every tree and chain figure, checked on the built figures by the labels'
computed extents (``shared.labels.label_boxes``): no two labels overlap, none leaves the plot,
none is set below ``MIN_FONT``, and a label cut to fit keeps at least ``MIN_CHARS``
characters of its token before the "…". The figures: the Generation page's tree of branches
and beam tree, and the Lesson's step-10 chain (the page's and the handout's), for a small
model, a GPT-2-sized chain and deep trees.

The review's cases: the tree of branches wrote "·whose" over an edge's "11" in 12-px text;
the handout's step 10 wrote "0.mid", "0.post" over the numbers.
"""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest

from gptviz.analysis.stages import block_stages
from gptviz.app.block.figures import FLOW_PX, block_flow
from gptviz.app.generation import search_figures as sf
from gptviz.app.generation import tree
from gptviz.app.generation.branch_figure import LABELS_UP_TO, branch_tree
from gptviz.app.lesson.figures import residual_chain
from gptviz.app.shared import labels as lb
from tests.helpers import tiny_gpt

WORDS = ["·whose", "·homology", "·classes", "·are", "·images", "·of", "·fundamental", "·the",
         "·manifolds", ".", "↵", "·is", "·a", "·space", "·X", "·closed", "·орбифолд",
         "·同调群", "·🙂", "e\u0301"]


def legible(fig, tokens: set[str] | None = None, top: float = 0.0
            ) -> list[tuple[str, lb.Box, float]]:
    """The figure's labels, after checking the rule on them (``top``: px of the top margin
    the labels may use, as titles over a grid's panels do)."""
    g = fig.layout.meta["labels"]
    area = (0, -top, g["plot_w"], g["plot_h"])
    found = lb.label_boxes(fig)
    tokens = None if tokens is None else {*tokens, "prompt"}  # the trees' root
    for (ta, a, _), (tb, b, _) in itertools.combinations(found, 2):
        assert not lb.overlap(a, b), f"{ta!r} and {tb!r} overlap"
    for text, b, size in found:
        assert size >= lb.MIN_FONT, (text, size)
        assert lb.inside(b, area), f"{text!r} leaves the plot"
        if text.endswith(lb.ELLIPSIS):
            assert len(text) - 1 >= lb.MIN_CHARS, text
            assert tokens is None or any(t.startswith(text[:-1]) for t in tokens), text
        else:
            assert tokens is None or text in tokens or text.endswith("%") or re.fullmatch(
                r"\d(\.\d)?e-\d+", text), text  # or a P, in percent or a power of ten
    return found


def grown(rng: np.random.Generator, steps: int, branches: int) -> dict:
    """A tree of branches: a main text ``steps`` long and ``branches`` forks off it."""
    main = tuple(int(i) for i in rng.integers(0, len(WORDS), steps))
    nodes = {main[:k]: None for k in range(1, steps + 1)}
    for _ in range(branches):
        at = int(rng.integers(0, steps))
        fork = main[:at] + tuple(int(i) for i in rng.integers(0, len(WORDS),
                                                              int(rng.integers(1, 6))))
        nodes.update({fork[:k]: None for k in range(at + 1, len(fork) + 1)})
    return nodes


def branch_figure(nodes: dict, current: tuple, rng: np.random.Generator):
    xy = tree.layout(nodes)
    names = {p: WORDS[p[-1]] for p in nodes}
    # GPT-2's 50,257 tokens make most P small: "0.02%" and "2.1e-5" take more room than "29%"
    probs = {p: float(rng.choice([0.11, 0.004, 0.293, 0.5, 1.0, 0.0002, 2.1e-5]))
             for p in nodes}
    return branch_tree(xy, names, probs, current, {p: str(p) for p in xy})


def test_the_reviews_tree_writes_whose_clear_of_the_11():
    """Two branches apart at step 2, "·whose" at step 3 under an edge of P = 11 %."""
    nodes = {(0,): None, (0, 1): None, (0, 1, 0): None, (0, 2): None, (0, 2, 0): None,
             (0, 2, 0, 3): None}
    probs = dict.fromkeys(nodes, 0.11)
    fig = branch_tree(tree.layout(nodes), {p: WORDS[p[-1]] for p in nodes}, probs,
                      (0, 2, 0, 3), {p: str(p) for p in tree.layout(nodes)})
    found = legible(fig, set(WORDS))
    shown = [t for t, _, _ in found]
    assert shown.count("·whose") == 3 and shown.count("11%") == len(nodes)  # all of them
    assert fig.data[-1].customdata.shape[0] == len(nodes) + 1  # the nodes stay last


@pytest.mark.parametrize("steps, branches", [(3, 1), (8, 3), (24, 4), (40, 6), (60, 2),
                                             (12, 14)])
def test_the_tree_of_branches_follows_the_rule(steps, branches):
    rng = np.random.default_rng(steps * 100 + branches)
    nodes = grown(rng, steps, branches)
    current = max(nodes, key=len)
    fig = branch_figure(nodes, current, rng)
    found = legible(fig, set(WORDS))
    if len(nodes) <= LABELS_UP_TO:
        assert found, "a tree that may be labelled has no label"
    if steps <= 8:  # room for every token of the current text, whole or cut
        shown = [t for t, _, _ in found]
        assert len([t for t in shown if t != "prompt" and "%" not in t]) >= len(current)


@pytest.mark.parametrize("seed", range(8))
def test_the_beam_tree_follows_the_rule(seed):
    rng = np.random.default_rng(seed)
    width, steps = int(rng.integers(2, 6)), int(rng.integers(3, 16))
    tokens = [[WORDS[int(k)] for k in rng.integers(0, len(WORDS), width)] for _ in range(steps)]
    parents = [[0] * width] + [sorted(rng.integers(0, width, width).tolist())
                               for _ in range(steps - 1)]
    lineage = [rng.integers(0, width, steps).tolist()]
    fig = sf.beam_tree(tokens, parents, np.zeros((steps, width)), np.zeros((steps, width)),
                       lineage)
    legible(fig, {w for row in tokens for w in row})


def chain_stages(n_layer: int) -> list[str]:
    return ["embed"] + [f"{ly}.{s}" for ly in range(n_layer) for s in ("mid", "post")]


@pytest.mark.parametrize("n_layer", [1, 2, 4, 12, 48])  # 12: GPT-2's 25 stages
def test_the_residual_chain_follows_the_rule_and_its_arrows_hold_their_labels(n_layer):
    stages = chain_stages(n_layer)
    norms = np.geomspace(0.9, 4321.0, len(stages))  # from "0.900" to "4321.000"
    fig = residual_chain(norms, stages, "·manifolds")
    found = legible(fig)
    assert [t for t, _, _ in found] == [f"{v:.3f}" for v in norms] + stages[1:]  # all whole
    values = {t: b for t, b, _ in found[:len(stages)]}
    arrows = [(a.ax, a.x, a.y) for a in fig.layout.annotations]
    assert len(arrows) == len(stages) - 1
    for (label, b, _), (x0, x1, y) in zip(found[len(stages):], arrows, strict=True):
        assert x0 - 0.5 <= b[0] and b[2] <= x1 + 0.5 and b[3] <= y, label  # over its arrow
        assert not any(lb.crosses(v, (x0, y), (x1, y)) for v in values.values()), label


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("plot_px, half", [(FLOW_PX, slice(None)), (440, slice(6, None))])
def test_the_block_flows_titles_follow_the_rule(bias, plot_px, half):
    """The Block page's flow (12 panels at its width) and the Lesson's step 9 (the FFN half
    in its figure column): "attention out Z W_O + b_O" ran into its neighbours' titles."""
    model = tiny_gpt(12, bias=bias, d_model=128, n_head=4, context_length=64)
    _, cache = model.run_with_cache(list(range(12)) * 2)
    stages = block_stages(cache, 0, 1, "gelu", bias)[half]
    fig = block_flow(stages, [str(i) for i in range(24)], 320 if half.start else 560, plot_px)
    found = legible(fig, top=fig.layout.margin.t)
    titles = [t for t, _, size in found if size == lb.MIN_FONT]
    assert len(titles) == len(stages)
    for title, stage in zip(titles, stages, strict=True):  # each keeps the start of its name
        assert stage.name.startswith(title.split("\n")[0].removesuffix(lb.ELLIPSIS)), title
