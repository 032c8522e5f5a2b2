"""Canvas heatmaps (``gptviz.app.speedups.heatcanvas``) in a real browser: what is painted is
what the figure holds. Each checked cell's pixel is the figure's colour scale at that cell's
value, interpolated by plotly's own ``sample_colorscale``, and the tooltip over it is the
text ``heatmaps.hover_text`` writes for it; the pattern checked is the model's, recomputed
here with torch.
"""

from __future__ import annotations

import urllib.parse

import numpy as np
import pytest
import torch
from plotly.colors import sample_colorscale, unlabel_rgb

from gptviz.app.shared.heatmaps import axis_labels, hover_text
from gptviz.checkpoints.folder import DEFAULT_MODEL, bundled_models, load_checkpoint
from gptviz.model.names import act_name
from tests.helpers import array_of, check_no_exception, drawn, visit

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("from_home")]

PROMPT = "The cat sat on the mat because the cat was tired."
CELL = """([title, i, j]) => {
    const root = [...document.querySelectorAll('.gv-heat')].find(
        r => r.querySelector('.gv-heat-title').textContent === title);
    root.scrollIntoView({block: 'center'});  // the pointer reaches only what is in view
    const hit = root.gvHits[0], {rows, cols} = hit.tr.z;
    const x = hit.x0 + (j + 0.5) * (hit.x1 - hit.x0) / cols;
    const y = hit.y0 + (i + 0.5) * (hit.y1 - hit.y0) / rows;  // row 0 at the top (reversed)
    const canvas = root.querySelector('canvas'), dpr = canvas.width / canvas.clientWidth;
    const px = canvas.getContext('2d').getImageData(Math.floor(x * dpr), Math.floor(y * dpr), 1, 1);
    const box = canvas.getBoundingClientRect();
    return {rgb: Array.from(px.data.slice(0, 3)), x: box.left + x, y: box.top + y,
            figure: root.gvFigure};
}"""


def test_the_pattern_is_painted_cell_by_cell_from_the_model(page, app_url):
    ckpt = load_checkpoint(bundled_models()[DEFAULT_MODEL])
    ids = ckpt.tokenizer.encode(PROMPT)
    with torch.no_grad():
        _, cache = ckpt.model.run_with_cache(ids, names_filter=[act_name("pattern", 0)])
    pattern = cache[act_name("pattern", 0)][0, 1].numpy()  # (T, T), layer 0 head 1
    t = len(ids)
    labels = axis_labels([ckpt.tokenizer.decode([i]) for i in ids], t)
    visit(page, f"{app_url}/attention?layer=0&head=1&prompt={urllib.parse.quote_plus(PROMPT)}")
    title = "layer 0, head 1: W_attn"
    drawn(page, "attention", text=title)
    for i, j in [(0, 0), (t - 1, 0), (t // 2, t // 3), (t - 1, t - 1), (2, t - 1)]:
        cell = page.evaluate(CELL, [title, i, j])
        trace = cell["figure"]["data"][0]
        z = array_of(trace["z"]).reshape(t, t)
        np.testing.assert_allclose(z[i, j], pattern[i, j], atol=1e-6)  # the model's W_attn
        lo, hi = trace["zmin"], trace["zmax"]
        at = float((z[i, j] - lo) / (hi - lo))  # where on the scale, 0 … 1
        want = unlabel_rgb(sample_colorscale(trace["colorscale"], [at])[0])
        assert np.abs(np.array(cell["rgb"]) - np.array(want)).max() <= 2, (i, j, cell["rgb"], want)
        page.mouse.move(cell["x"], cell["y"])
        tip = page.locator(".gv-heat-tip:visible")
        tip.wait_for()
        assert trace["meta"]["hover"]["x"] == labels  # the tokens the page shows
        expected = hover_text(pattern, labels, labels)[i, j].replace("<br>", "\n")
        assert tip.inner_text() == expected
    check_no_exception(page, "attention")
