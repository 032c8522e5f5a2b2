"""Heatmap layout: the attention grid's (``gptviz/app/attention/figures.py``: one title and one
edge per head, the selected head's frame) and the margins that hold a chart's labels up front
(``gptviz/app/shared/heatmaps.py``), so that plotly draws it once."""

from __future__ import annotations

import numpy as np
import pytest

from gptviz.app.attention.figures import attention_grid, grid_tile
from gptviz.app.shared.heatmaps import COLORBAR_PX, fit_margins, heatmap, label_px, title_room
from gptviz.app.shared.ticks import thin_ticks

# The default prompt's tokens on the Attention page (mathematics-bpe), whitespace made visible,
# and what Chromium measured with Streamlit's theme: automargin widened the large pattern's
# margins to l = 127.87 px and t = 132.27 px, its widest label being 67.67 px wide.
DEFAULT = ["The", "·Steenrod", "·problem", "·as", "ks", "·which", "·homology", "·classes", "·of",
           "·a", "·space", "·are", "·", "ima", "g", "es", "·of", "·fundamental", "·classes",
           "·of", "·closed", "·manifolds", "."]
MEASURED_PX = {"The": 18.96, "·Steenrod": 48.41, "·problem": 45.84}  # at 12 px


@pytest.mark.parametrize(("shape", "selected", "titled"), [
    ((1, 1, 5, 5), None, False), ((1, 1, 5, 5), (0, 0), False), ((4, 4, 6, 6), (3, 1), True),
    ((12, 12, 3, 3), (11, 0), False)])
def test_grid_has_a_title_and_an_edge_per_head_and_frames_the_selected_one(shape, selected,
                                                                          titled):
    n_layer, n_head, t, _ = shape
    p = np.random.default_rng(0).random(shape).astype(np.float32)  # (L, H, T, T)
    titles = [f"head {n}" for n in range(n_layer * n_head)] if titled else None
    fig = attention_grid(p, [f"t{i}" for i in range(t)], selected=selected, titles=titles)
    g = fig.layout.meta["grid"]
    titles_, edges = fig.layout.annotations, fig.layout.shapes
    assert len(titles_) == n_layer * n_head
    assert len(edges) == n_layer * n_head + (selected is not None)
    for n, (title, edge) in enumerate(zip(titles_, edges, strict=False)):
        ly, h = divmod(n, n_head)
        r, c = ly * (t + g["row_gap"]), h * (t + g["col_gap"])
        np.testing.assert_array_equal(grid_tile(fig.data[0].z, fig.layout.meta, ly, h), p[ly, h])
        assert title.text == (titles[n] if titled else f"L{ly} H{h}")
        assert (title.x, title.y, title.yanchor, title.showarrow) == (c + (t - 1) / 2, r - 0.5,
                                                                      "bottom", False)
        assert (edge.x0, edge.x1, edge.y0, edge.y1) == (c - 0.5, c + t - 0.5, r - 0.5,
                                                        r + t - 0.5)
        assert edge.line.color == "#c8c8c8"
    if selected is not None:
        frame = edges[-1]
        ly, h = selected
        r, c = ly * (t + g["row_gap"]), h * (t + g["col_gap"])
        assert frame.line.color == "#d62728" and frame.line.width == 3
        # on the tile's own edge: a margin in cells framed a one-token tile twice its size
        assert (frame.x0, frame.x1, frame.y0, frame.y1) == (c - 0.5, c + t - 0.5, r - 0.5,
                                                            r + t - 0.5)
    for axis in (fig.layout.xaxis, fig.layout.yaxis):  # nothing for automargin to make room for
        assert (axis.automargin, axis.showticklabels, axis.ticks) == (False, False, "")
    assert fig.layout.margin.r == COLORBAR_PX["coloraxis"]
    assert fig.layout.coloraxis.colorbar.x == 1.0  # at the plot's edge, not 2% of its width on


def test_grid_title_and_edge_are_plain_plotly_json():
    fig = attention_grid(np.full((1, 2, 2, 2), 0.5, dtype=np.float32), ["a", "b"])
    layout = fig.to_plotly_json()["layout"]
    gap = fig.layout.meta["grid"]["col_gap"]
    assert layout["annotations"][1] == {"font": {"size": 12}, "showarrow": False, "text": "L0 H1",
                                        "x": 2 + gap + 0.5, "y": -0.5, "yanchor": "bottom"}
    assert layout["shapes"][1] == {"line": {"color": "#c8c8c8", "width": 1}, "type": "rect",
                                   "x0": 1.5 + gap, "x1": 3.5 + gap, "y0": -0.5, "y1": 1.5}


def test_label_px_is_at_least_the_measured_width():
    for label, px in MEASURED_PX.items():
        assert px <= label_px([label]) <= 1.2 * px
    assert label_px([]) == 0.0
    assert label_px(["中"]) == label_px(["é"]) == 12 * 1.05  # unlisted characters: the widest


def test_fit_margins_hold_what_automargin_gave_the_large_pattern():
    fig = heatmap(np.eye(len(DEFAULT)), DEFAULT, DEFAULT, kind="prob", x_title="key",
                  y_title="query", title="W_attn")
    assert list(fig.layout.xaxis.ticktext) == DEFAULT
    m = fit_margins(title_room(thin_ticks(fig))).layout.margin
    assert 127.87 <= m.l <= 127.87 + 15 and 132.27 <= m.t <= 132.27 + 15
    assert m.r == COLORBAR_PX["trace"] and m.b == 10
    assert fig.data[0].colorbar.x == 1.0


def test_fit_margins_keep_wider_margins_and_skip_hidden_labels():
    fig = heatmap(np.eye(2), ["a", "b"], ["a", "b"], x_title="key", y_title="query")
    fig.update_layout(margin=dict(l=300, t=200))
    fig.update_xaxes(showticklabels=False)
    m = fit_margins(fig).layout.margin
    assert (m.l, m.t) == (300, 200)
    bare = fit_margins(heatmap(np.eye(2))).layout.margin  # numeric axes: no tick text to hold
    assert (bare.l, bare.t, bare.r) == (10, 10, COLORBAR_PX["trace"])
