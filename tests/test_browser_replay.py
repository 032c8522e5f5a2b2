"""The Learning page's Training replay in a real browser, on the bundled model
induction-2layer (it ships snapshots): the step slider, moved by keyboard across several
snapshots, redraws every figure with the values of the selected step, checked against a
direct computation from the checkpoint's snapshots:

- the embeddings on the final model's PCA axes (a torch SVD of E, as tests/test_app_replay.py),
- the first and last heads of the attention grid (the snapshot's own forward pass),
- the marker of the loss curve and of the induction-score curve, and the score there,
- the greedy sample (the snapshot's own generation).

Nothing may leave the machine (the ``page`` fixture fails a test that asks another host).
Screenshots land in the artifacts folder as replay-*.png (see tests/helpers.py).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from gptviz.analysis.replay import copy_prompt_length, final_step, replay_steps
from gptviz.app.attention.figures import grid_tile
from gptviz.app.learning.controls import split_encode
from gptviz.app.learning.replay import SAMPLE_PROMPT, SAMPLE_TOKENS
from gptviz.checkpoints.folder import bundled_models, initial_model, load_checkpoint, training_seed
from gptviz.data import read_corpus
from gptviz.generation.sampling import generate
from gptviz.model.names import act_name
from gptviz.tokenizers.readable import readable_decode
from tests.helpers import MAIN, array_of, drawn, screenshot, visit
from tests.test_app_replay import direct_projection

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("from_home"),
              pytest.mark.skipif("induction-2layer" not in bundled_models(),
                                 reason="induction-2layer is not bundled")]

MODEL = "induction-2layer"
MOVES = [0, 1000, 1500, 4000, 7000]  # from the final step: Home, then rightwards
FIGURE = """key => {
    const heat = document.querySelector(`.st-key-${key} .gv-heat`);
    const gd = heat ? {data: heat.gvFigure.data, layout: heat.gvFigure.layout}
                    : document.querySelector(`.st-key-${key} .js-plotly-plot`);
    return gd && JSON.parse(JSON.stringify({data: gd.data, title: gd.layout.title,
                                            shapes: gd.layout.shapes, meta: gd.layout.meta}));
}"""  # the figure as plotly, or the canvas heatmap, holds it in the page (arrays encoded)


def title(step: int) -> str:
    """The PCA figure's title at ``step``: it marks the redraw for that step."""
    return f"Embeddings E at step {step} on"


class Direct:
    """What each figure should show at a step, computed from the checkpoint directly."""

    def __init__(self):
        self.ckpt = ckpt = load_checkpoint(bundled_models()[MODEL])
        ids, _ = split_encode(ckpt, read_corpus("induction"), True)
        self.window = ids[:ckpt.config.context_length].tolist()  # the page's start = 0
        self.final_E = ckpt.model.embed.weight.detach()
        self.evals = {e["step"]: e for e in ckpt.card["evals"]}

    def model(self, step: int):
        snaps = self.ckpt.snapshots
        if step == final_step(self.ckpt.card):
            return self.ckpt.model
        if step == 0:
            return initial_model(self.ckpt.config, training_seed(self.ckpt.card))
        return snaps.model_at(snaps.steps.index(step), self.ckpt.model)

    def points(self, step: int) -> np.ndarray:
        return direct_projection(self.final_E, self.model(step).embed.weight.detach(),
                                 self.ckpt.tokenizer)

    def patterns(self, step: int) -> np.ndarray:
        names = [act_name("pattern", ly) for ly in range(self.ckpt.config.n_layer)]
        with torch.no_grad():
            _, cache = self.model(step).run_with_cache(self.window, names_filter=names)
        return torch.stack([cache[n][0] for n in names]).numpy()  # (L, H, T, T)

    def sample(self, step: int) -> str:
        prompt = self.window[:copy_prompt_length(self.window) or SAMPLE_PROMPT]
        out = generate(self.model(step), prompt, SAMPLE_TOKENS, temperature=0.0)
        tok = self.ckpt.tokenizer
        return readable_decode(tok, prompt) + " ⟶ " + readable_decode(tok, out[len(prompt):])


def check_step(page, direct: Direct, step: int) -> None:
    """Every figure of the replay shows ``step``'s values."""
    main = page.locator(MAIN)
    assert main.get_by_text(f"Step {step:,}:").first.is_visible()
    pca = page.evaluate(FIGURE, "replay_pca")
    xy = np.stack([array_of(pca["data"][0]["x"]), array_of(pca["data"][0]["y"])], 1)
    np.testing.assert_allclose(xy, direct.points(step), atol=2e-4)
    grid = page.evaluate(FIGURE, "replay_grid")
    want, z, meta = direct.patterns(step), array_of(grid["data"][0]["z"]), grid["meta"]
    np.testing.assert_allclose(grid_tile(z, meta, 0, 0), want[0, 0], atol=1e-5)  # L0 H0
    n_layer, n_head = want.shape[:2]
    np.testing.assert_allclose(grid_tile(z, meta, n_layer - 1, n_head - 1), want[-1, -1],
                               atol=1e-5)  # the last layer's last head
    loss = page.evaluate(FIGURE, "replay_loss")
    assert [s["x0"] for s in loss["shapes"]] == [step]
    assert f"marker: step {step:,})" in loss["title"]["text"]
    score = page.evaluate(FIGURE, "replay_induction")
    assert [s["x0"] for s in score["shapes"]] == [step]
    curve = score["data"][0]
    at = list(array_of(curve["x"])).index(step)
    assert array_of(curve["y"])[at] == pytest.approx(direct.evals[step]["induction_score"])
    sample = main.locator("div.gv-text").inner_text()
    assert sample.strip() == direct.sample(step).strip()


def slide_to(page, steps: list[int], step: int) -> None:
    """Move the step slider to ``step`` by keyboard and wait for the figures of that step."""
    slider = page.locator(".st-key-replay_step").get_by_role("slider")
    now = steps.index(int(slider.get_attribute("aria-valuetext").replace(",", "")))
    if step == steps[0]:
        slider.press("Home")
    else:
        for _ in range(steps.index(step) - now):
            slider.press("ArrowRight")
    drawn(page, f"replay at step {step}", charts=4, text=title(step))


def test_the_slider_redraws_every_figure_with_the_snapshot_values(page, app_url):
    direct = Direct()
    steps = replay_steps(direct.ckpt)
    assert len(direct.ckpt.snapshots) >= 3 and set(MOVES) <= set(steps)
    visit(page, f"{app_url}/learning?model={MODEL}&view=Training+replay")
    final = final_step(direct.ckpt.card)
    drawn(page, "replay", charts=4, text=title(final))
    slider = page.locator(".st-key-replay_step").get_by_role("slider")
    assert slider.get_attribute("aria-valuetext") == f"{final:,}"
    assert int(slider.get_attribute("max")) == len(steps) - 1
    check_step(page, direct, final)
    screenshot(page, f"replay-step-{final}")
    seen = [page.evaluate(FIGURE, "replay_pca")["data"][0]["x"]]
    for step in MOVES:
        slide_to(page, steps, step)
        check_step(page, direct, step)
        seen.append(page.evaluate(FIGURE, "replay_pca")["data"][0]["x"])
        screenshot(page, f"replay-step-{step}")
    assert len({str(x) for x in seen}) == len(seen)  # every step moved the points
