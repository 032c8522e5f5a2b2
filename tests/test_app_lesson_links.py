"""Every "Explore this step on the … page" link of the Lesson opens its page in the
lesson's state: the target page, opened with the link alone, shows the step's key numbers.

The review's case: step 1 said |V| = 1,024, 23 tokens, "The" = 491, and its link opened the
Tokenizers page on a BPE of |V| = 512 trained on the corpus (39 tokens, "The" = 473).
"""

from __future__ import annotations

import contextlib
import re
from urllib.parse import parse_qs

import numpy as np
import pytest

from gptviz.app.attention.figures import grid_tile
from gptviz.checkpoints.folder import bundled_models
from tests.helpers import app_test, array_of, figures, metric, rerun, tables, texts
from tests.test_app_lesson import N, lesson_app

MODELS = sorted(bundled_models())
pytestmark = pytest.mark.skipif(not MODELS, reason="no bundled models in assets/models")


def _arrays(figs: list[dict]) -> list[bytes]:
    """Every numeric z and y of the figures' traces, rounded, as comparable bytes."""
    out = []
    for fig in figs:
        for trace in fig["data"]:
            for key in ("z", "y"):
                with contextlib.suppress(KeyError, TypeError, ValueError):  # absent, or text
                    out.append(np.round(array_of(trace[key]).astype(np.float64), 5).tobytes())
    return out


def _ids(chips_html: str) -> list[int]:
    """The ids written under the token chips."""
    return [int(i) for i in re.findall(r"<small>(\d+)</small>", chips_html)]


def _html(at, last: bool = False) -> str:
    """The page's HTML; ``last``: only its last block of token chips (the Lesson's step,
    not the chips of its settings box)."""
    blocks = [h.value for h in at.get("html")]
    return [b for b in blocks if "<small>" in b][-1] if last else " ".join(blocks)


def _opened(at):
    """The page the step's link names, opened with the link's parameters only."""
    (link,) = at.get("page_link")
    page = app_test(link.proto.page)
    for key, values in parse_qs(link.proto.query_string, keep_blank_values=True).items():
        page.query_params[key] = values if len(values) > 1 else values[0]
    return rerun(page)


def _same_key_numbers(step: int, lesson, page, model: str) -> None:
    lesson_figs, page_figs = figures(lesson), figures(page)
    page_tex = {x.value for x in page.latex}
    if step in (1, 2):  # the model's own tokenizer, on the whole prompt
        ids = (_ids(_html(lesson, last=True)) if step == 1 else
               tables(lesson)[0].value["id"].tolist())
        shown = _ids(_html(page))
        assert page.segmented_control(key="tokenizer").value == "model"
        assert f"model **{model}**" in texts(page, "caption")
        if step == 1:
            assert shown == ids and metric(page, "Tokens") == f"{len(ids):,}"
        else:
            assert shown[-len(ids):] == ids  # the kept ones: the end of the whole prompt
        vocab = re.search(r"vocabulary \$V\$ of ([\d,]+) entries|from 0 to ([\d,]+)",
                          texts(lesson, "markdown"))
        if vocab and vocab.group(1):
            assert metric(page, "Vocabulary |V|") == vocab.group(1)
    elif step == 8:  # the grid of every head: each tile the same pattern
        (mine,), (theirs, *_) = lesson_figs, [f for f in page_figs if "grid" in
                                              (f["layout"].get("meta") or {})]
        grid = mine["layout"]["meta"]["grid"]
        for layer in range(grid["layers"]):
            for head in range(grid["heads"]):
                np.testing.assert_allclose(
                    grid_tile(array_of(mine["data"][0]["z"]), mine["layout"]["meta"], layer,
                              head),
                    grid_tile(array_of(theirs["data"][0]["z"]), theirs["layout"]["meta"],
                              layer, head), atol=1e-6)
    elif step in (13, 14):  # the token drawn with the lesson's T, top-p and seed
        first = re.search(r"model chose \*\*“(.+?)”\*\*", texts(lesson, "markdown"))
        said = re.search(r"with this seed: \*\*`(.+?)`\*\*", texts(page, "markdown"))
        if step == 13:
            assert said.group(1) == first.group(1).replace("\\", "")
            bars = {int(i): float(p) for i, p in re.findall(
                r'data-id="(\d+)" data-p="([^"]+)"', _html(page))}
            (chart,) = lesson_figs
            for i, p in zip(np.asarray(chart["data"][0]["customdata"])[:, 0].astype(int),
                            array_of(chart["data"][0]["x"]), strict=True):
                assert bars[int(i)] == pytest.approx(float(p), abs=1e-6)
        assert [t for t in (x.value for x in lesson.latex) if t in page_tex]  # H, or ↦ line
    else:  # the same builders: the page holds every array the step draws
        theirs = set(_arrays(page_figs))
        chains = [f for f in lesson_figs if "along the residual stream" in str(
            f["layout"].get("title"))]  # the lesson's own chain: one token's line on the page
        for chain in chains:
            lines = [[f"{v:.3f}" for v in array_of(t["y"])] for f in page_figs
                     for t in f["data"] if "y" in t and t.get("mode") == "lines+markers"]
            assert list(chain["data"][0]["text"]) in lines
        mine = _arrays([f for f in lesson_figs if f not in chains])
        assert mine and all(a in theirs for a in mine), f"step {step}: another state"
    if step in (4, 5, 6):  # and the same worked formula
        assert [t for t in (x.value for x in lesson.latex) if t in page_tex]


@pytest.mark.parametrize("model, state", [
    ("mathematics-bpe", {}),
    ("mathematics-char", {"layer": "2", "head": "1", "temperature": "0.7", "seed": "3"})])
def test_every_lesson_link_opens_its_page_in_the_lessons_state(model, state):
    at = lesson_app(model=model, **state)
    if state:  # the lesson took the state the test asked for
        assert at.segmented_control(key="layer").value == int(state["layer"])
        assert at.number_input(key="seed").value == int(state["seed"])
    for step in range(1, N + 1):
        at.session_state["step"] = step
        rerun(at)
        if any(b.key == "lesson_reveal" for b in at.button):
            at.button(key="lesson_reveal").click()
            rerun(at)
        page = _opened(at)
        assert page.pills(key="model").value == model, step
        _same_key_numbers(step, at, page, model)
