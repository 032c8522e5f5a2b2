"""Labels that join a token to text of the page's own ("3: ·the", "head 0", "·the (262)")
make only the token's whitespace visible: the space the page writes stays a space.

A user review found the Attention page's Rollout bars reading "0:·The" and "1:··Steenrod"
and the Generation page's attention heatmap reading "head·0": the whole label, separator
included, went through ``visible``.
"""

from __future__ import annotations

import re

import pytest

from gptviz.app.attention.circuit_figures import ov_bars
from gptviz.app.shared.chips import show_bytes, token_label, visible
from gptviz.app.shared.heatmaps import Shown, axis_labels, heatmap, shown_label
from gptviz.app.shared.inputs import page_tokens
from gptviz.app.shared.tex import tex_text
from gptviz.app.shared.widgets import box_key
from gptviz.checkpoints.folder import bundled_models, load_checkpoint
from gptviz.tokenizers.base import TokenInfo
from tests.helpers import MODELS, figure, run_page

needs_models = pytest.mark.skipif(not MODELS, reason="no bundled models in assets/models")


# ---- the builders -------------------------------------------------------------------------

def test_a_shown_label_keeps_its_spaces_and_a_token_still_shows_its_own():
    assert axis_labels([Shown("head 0"), "a b", " the"], 3) == ["head 0", "a·b", "·the"]
    assert shown_label("The", "0: ") == "0: The"
    assert shown_label(" Steenrod", "1: ") == "1: ·Steenrod"
    assert shown_label("a\nb", suffix=" (7)") == "a↵b (7)"
    assert type(axis_labels([Shown("head 0")], 1)[0]) is str  # plotly gets plain text


def test_heatmap_rows_named_head_h_read_head_space_h():
    fig = heatmap([[0.5, 0.5], [1.0, 0.0]], ["a b", "c"], [Shown(f"head {h}") for h in range(2)],
                  kind="prob")
    assert list(fig.layout.yaxis.ticktext) == ["head 0", "head 1"]
    assert list(fig.layout.xaxis.ticktext) == ["a·b", "c"]  # tokens: spaces still shown
    assert fig.data[0].customdata[1][0].startswith("head 1 (1) → a·b (0)")


def test_a_partial_tokens_bytes_stay_apart_by_a_space_on_every_axis():
    """A token holding part of a UTF-8 character reads as its bytes, "‹e2 80›": the label
    is display text already, so an axis, a hover text or a formula does not mark its
    space again ("‹e2·80›", as a review found on the heatmaps)."""
    part = TokenInfo(9, "\ufffd", b"\xe2\x80", (0, 1), partial=True)
    word = TokenInfo(7, " a", b" a", (1, 3))
    labels = [token_label(part), token_label(word)]
    assert labels == ["‹e2 80›", "·a"]
    fig = heatmap([[1.0, 0.0], [0.5, 0.5]], labels, labels, kind="prob")
    assert list(fig.layout.xaxis.ticktext) == ["‹e2 80›", "·a"]
    assert fig.data[0].customdata[1][0].startswith("·a (1) → ‹e2 80› (0)")
    assert axis_labels(labels, 2) == ["‹e2 80›", "·a"]
    assert tex_text(labels[0]) == r"\text{‹e2 80›}"
    assert visible(visible(" a")) == "·a"  # a plain string is made visible once, as before


def test_bars_of_position_labels_keep_the_separator_space():
    fig = ov_bars([shown_label("The", "0: "), shown_label("·Steenrod", "1: ")], [0.6, 0.4],
                  [], [], "t", names=("share", ""))
    assert list(fig.data[0].y) == ["0: The ", "1: ·Steenrod "]


# ---- the pages ----------------------------------------------------------------------------

def _page_ids(at) -> tuple[list[int], object]:
    """The ids of the prompt the page reads, and the model's tokenizer."""
    ckpt = load_checkpoint(bundled_models()[at.session_state["model"]])
    text = at.text_area(key=box_key("prompt")).value
    ids = ckpt.tokenizer.encode(text)
    return ids[len(ids) - min(len(ids), page_tokens(ckpt.config)):], ckpt


@needs_models
def test_rollout_bars_read_position_colon_space_token():
    at = run_page("attention", view="Rollout")
    ids, ckpt = _page_ids(at)
    tok = ckpt.tokenizer
    bars = figure(at, "the input tokens that reach the last position most")
    labels = list(bars["data"][0]["y"])
    assert labels
    plain = spaced = 0
    for label in labels:
        m = re.fullmatch(r"(\d+): (.+) ", label)
        assert m, label
        k, shown = int(m.group(1)), m.group(2)
        string = tok.id_to_string(ids[k])
        assert shown == visible(string), (label, string)
        if string[:1].isspace():
            spaced += 1
            assert shown.startswith("·") and not shown.startswith("··"), label
        else:
            plain += 1
            assert "·" not in label, label  # e.g. "0: The", never "0:·The"
    assert plain and spaced  # the default prompt has tokens of both kinds among the top 10


@needs_models
def test_ov_bars_read_token_space_id():
    at = run_page("attention", view="OV circuit")
    tok = load_checkpoint(bundled_models()[at.session_state["model"]]).tokenizer
    bars = figure(at, "E W<sub>OV</sub> W<sub>U</sub>")
    labels = [y for trace in bars["data"] for y in trace["y"]]
    assert len(labels) == 20
    for label in labels:
        m = re.fullmatch(r"(.+) \((\d+)\) ", label)
        assert m, label
        shown = visible(show_bytes(tok.id_to_bytes(int(m.group(2)))))  # as the table shows it
        assert m.group(1) == shown, label  # "per (449)", never "per·(449)"


@needs_models
def test_generation_attention_heatmap_rows_read_head_n():
    at = run_page("generation", view="Attention", layer="1", head="2")
    n_head = load_checkpoint(bundled_models()[at.session_state["model"]]).config.n_head
    fig = figure(at, "the last position's attention, every head")
    names = [f"head {h}" for h in range(n_head)]
    assert list(fig["layout"]["yaxis"]["ticktext"]) == names
    assert fig["data"][0]["meta"]["hover"]["y"] == names  # what hovering a row says
