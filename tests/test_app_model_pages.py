"""AppTest of the model pages (Embeddings, Positional encoding, Attention, Transformer
block): every view runs on every bundled model, the main widgets change what is drawn,
and bad input (empty or long prompts, bad URL values, a broken upload) gets a message."""

from __future__ import annotations

import ast
import json
import math
import re

import numpy as np
import pytest

from gptviz.app.serving.budget import Shelf
from gptviz.app.shared.picker import SESSION_MODELS
from gptviz.app.shared.widgets import LINK_LIMIT, box_key
from gptviz.checkpoints.folder import bundled_models, checkpoint_to_zip, load_checkpoint
from tests.helpers import (
    MODEL_PAGE_VIEWS,
    MODELS,
    app_test,
    checkpoint_uploader,
    choice_box,
    downloads,
    figure,
    figures,
    rerun,
    run_page,
    svg_charts,
    tables,
    texts,
    tiny_gpt,
    z_of,
)

LONG = "The Steenrod problem asks which homology classes are images of manifolds. " * 40

pytestmark = pytest.mark.skipif(not MODELS, reason="no bundled models in assets/models")


@pytest.mark.parametrize("model", MODELS)
def test_every_view_of_every_page_runs_on_every_model(model):
    for page, views in MODEL_PAGE_VIEWS.items():
        at = run_page(page, model=model)
        assert at.pills(key="model").value == model
        for view in views:
            at.session_state["view"] = view
            rerun(at)
            assert figures(at) or at.latex, f"{page} / {view} drew nothing"
            tables, csvs = len(at.dataframe), len(downloads(at))
            assert csvs >= tables, f"{page} / {view}: {tables} tables, {csvs} CSV buttons"


def test_attention_layer_and_head_change_the_pattern():
    at = run_page("attention")
    before = z_of(figure(at, "layer 0, head 0")["data"][0])
    at.segmented_control(key="head").set_value(1)
    rerun(at)
    other_head = z_of(figure(at, "layer 0, head 1")["data"][0])
    at.segmented_control(key="layer").set_value(1)
    rerun(at)
    other_layer = z_of(figure(at, "layer 1, head 1")["data"][0])
    assert not np.allclose(before, other_head) and not np.allclose(other_head, other_layer)
    t = math.isqrt(before.size)
    rows = before.reshape(t, t)
    np.testing.assert_allclose(rows.sum(axis=1), 1.0, atol=1e-5)  # what is drawn is W_attn
    assert np.triu(rows, 1).max() == 0.0
    assert r"\mathrm{softmax}_j" in texts(at, "latex")  # the worked row of the math panel


def test_ablating_a_head_changes_the_next_token_probabilities():
    at = run_page("attention", view="Head ablation")
    table = at.dataframe[0].value
    assert np.abs(table["change"]).max() > 0  # L0 H0 is switched off by default
    one_head = table["P ablated"].to_numpy()
    at.multiselect(key="ablate").set_value([])
    rerun(at)
    table = at.dataframe[0].value
    np.testing.assert_array_equal(table["P all heads"], table["P ablated"])
    at.multiselect(key="ablate").set_value([(0, 0), (0, 1), (1, 0)])
    rerun(at)
    assert not np.allclose(at.dataframe[0].value["P ablated"].to_numpy()[:3], one_head[:3])
    assert "distribution" not in texts(at, "error")


def test_masks_view_shows_the_checks_pass():
    at = run_page("attention", view="Masks and the SDPA check")
    assert "equal up to float32 rounding" in texts(at, "success")
    assert any("W^{\\text{SDPA}}" in x.value for x in at.latex)


def test_block_layer_changes_the_flow_and_layernorm_is_standardised():
    at = run_page("block")
    first = json.dumps(figures(at)[0]["data"])
    at.segmented_control(key="layer").set_value(1)
    rerun(at)
    assert json.dumps(figures(at)[0]["data"]) != first
    at.session_state["view"] = "LayerNorm"
    rerun(at)
    stats = at.dataframe[0].value
    np.testing.assert_allclose(stats["mean standardised"], 0.0, atol=1e-4)
    shown = stats.select_dtypes("number").to_numpy()
    # no cell that "%.6f" writes "-0.000000" (a mean of −3e-9, or −0.0)
    assert not (np.signbit(shown) & (shown > -5e-7)).any()
    var = stats["var before"] / (stats["var before"] + 1e-5)  # σ²/(σ²+ε), not exactly 1
    np.testing.assert_allclose(stats["var standardised"], var, rtol=1e-4)
    at.session_state["view"] = "Parameters"
    rerun(at)
    tied = at.dataframe[1].value
    assert tied.iloc[-1].tolist()[1:] == [124_412_160, 163_009_536]


def test_logit_lens_last_row_is_the_models_prediction():
    at = run_page("block", view="Residual stream and logit lens")
    lens = next(d.value for d in at.dataframe if "read after" in d.value.columns)
    model = lens[lens["read after"] == lens["read after"].iloc[-1]]
    assert model["probability"].is_monotonic_decreasing
    assert lens["read after"].iloc[0] == "embeddings"


def test_embeddings_token_choice_and_projection():
    at = run_page("embeddings")
    c = load_checkpoint(bundled_models()[at.pills(key="model").value]).config
    assert c.tie_embeddings  # the bundled models tie E and W_U: the note says what it saves
    assert "Tied embeddings" in texts(at, "info")
    assert f"saves |V| × d = {c.vocab_size * c.d_model:,} parameters" in texts(at, "info")
    first = texts(at, "latex")
    choice_box(at, "position").set_value(0)
    rerun(at)
    assert texts(at, "latex") != first and "A_{" in texts(at, "latex")
    at.session_state["view"] = "The vocabulary (PCA)"
    rerun(at)
    assert figures(at)[0]["data"][0]["type"] in ("scatter", "scattergl")
    at.segmented_control(key="pca_dims").set_value(3)
    rerun(at)
    assert figures(at)[0]["data"][0]["type"] == "scatter3d"


def test_positional_formula_point_is_the_formula():
    at = run_page("positional")
    at.number_input(key="pe_i").set_value(7)
    at.number_input(key="pe_dim").set_value(5)
    rerun(at)
    d = load_checkpoint(bundled_models()[at.pills(key="model").value]).config.d_model
    expected = math.cos(7 / 10000 ** (4 / d))
    assert f"{expected:.4f}" in texts(at, "latex")


@pytest.mark.parametrize("page", ["embeddings", "attention", "block"])
def test_empty_prompt_gets_a_message(page):
    at = run_page(page, prompt="")
    assert "The prompt is empty" in texts(at, "info")
    assert not figures(at)


@pytest.mark.parametrize("page", ["embeddings", "attention", "block", "generation"])
def test_a_prompt_of_blanks_is_read_like_any_text_on_every_page(page):
    at = run_page(page, prompt="   \n\t  ")  # spaces, a line break and a tab: 7 tokens
    assert "The prompt is empty" not in texts(at, "info")
    if page != "generation":  # it starts from the text as it is and says nothing
        assert "only spaces and line breaks" in texts(at, "info")
        assert figures(at) or svg_charts(at)  # the page goes on with the 7 tokens


def test_long_prompt_is_cropped_and_the_crop_is_shown():
    at = run_page("attention", prompt=LONG)
    assert "context window" in texts(at, "warning")
    assert "✂" in at.get("html")[0].value and "gv-dropped" in at.get("html")[0].value


def test_text_that_looks_like_a_special_token_is_explained():
    at = run_page("block", prompt="a <|endoftext|> b <|BOS|>")
    assert "looks like a special token" in texts(at, "info")


@pytest.mark.parametrize("layer, head", [("99", "abc"), ("-1", "2.5"), ("x", "")])
def test_bad_layer_or_head_in_the_url_gets_a_message(layer, head):
    at = run_page("attention", layer=layer, head=head)
    warnings = texts(at, "warning")
    assert f"asks for layer “{layer}”" in warnings
    assert at.segmented_control(key="layer").value == 0
    assert figures(at)  # the page still draws


@pytest.mark.parametrize("page", ["attention", "block", "lesson"])
def test_a_layer_the_page_chose_itself_is_not_called_the_links(page):
    """Layer 3 and head 3 picked on a 4-layer model, then a switch to the 2-layer one: the
    URL still holds what the bound widgets wrote there, and the page said "The link asks for
    layer 3" though no link asked. A link that does ask still gets the message."""
    at = run_page(page, model="mathematics-bpe")
    for key in ("layer", "head"):
        at.segmented_control(key=key).set_value(3)
        at.query_params[key] = "3"  # what the bound widget writes (AppTest does not)
    rerun(at)
    at.pills(key="model").set_value("induction-2layer")
    rerun(at)
    assert at.segmented_control(key="layer").value == 0
    assert "The link asks for" not in texts(at, "warning")
    asked = run_page(page, model="induction-2layer", layer="3")
    assert "The link asks for layer “3”" in texts(asked, "warning")


@pytest.mark.parametrize("raw, why, how", [
    ("trained-mathematics-bpe (this session)",  # a session's model is linked by its label
     "trained on the Training page in another browser session", "or train it again"),
    ("trained-mathematics-bpe", "trained on the Training page", "or train it again"),
    ("gpt-5", "there is no model of that name here", "upload its checkpoint zip")])
def test_a_link_to_a_model_that_is_not_here_says_so(raw, why, how):
    """A reload of /attention?model=trained-… after training (a new session), or
    ?model=gpt-5, showed the default model with no word."""
    wanted = raw.removesuffix(" (this session)")
    at = run_page("attention", model=raw)
    shown = at.pills(key="model").value
    note = texts(at, "warning")
    assert f"The link asks for the model “{wanted}”" in note
    assert why in note and how in note and f"Showing **{shown}** instead" in note
    assert figures(at)
    # in the session that has it (a session's model is linked by its label): no notice
    at = app_test("attention", model=f"{wanted} (this session)")
    at.session_state[SESSION_MODELS] = shelf = Shelf()
    shelf[wanted] = load_checkpoint(bundled_models()[MODELS[0]])
    rerun(at)
    assert at.pills(key="model").value == wanted
    assert "The link asks for the model" not in texts(at, "warning")


def test_uploads_malformed_then_good_checkpoint():
    """A broken zip is named in the sidebar; a good one becomes this session's model on
    every page (the session-scoped cache path)."""
    at = app_test()
    at.switch_page("app_pages/attention.py")
    rerun(at)
    checkpoint_uploader(at).set_value(("broken.zip", b"not a zip", "application/zip"))
    rerun(at)
    assert "Cannot use broken.zip" in texts(at, "error") and figures(at)
    tok = load_checkpoint(bundled_models()[MODELS[0]]).tokenizer
    mine = tiny_gpt(tok.vocab_size, context_length=16, positional="sinusoidal",
                    tie_embeddings=False)
    checkpoint_uploader(at).set_value(
        ("mine.zip", checkpoint_to_zip(mine, tok, {"corpus": "x"}), "application/zip"))
    rerun(at)
    assert at.pills(key="model").value == "mine"
    assert "mine (this session)" in at.pills(key="model").format_func("mine")
    assert "context window" in texts(at, "warning")  # 16 tokens: the prompt is cropped
    for page in ("embeddings", "positional", "block"):
        at.switch_page(f"app_pages/{page}.py")
        rerun(at)  # AppTest's switch_page drops the URL params a browser keeps: choose again
        at.pills(key="model").set_value("mine")
        if page != "positional":
            at.text_area(key=box_key("prompt", page)).input(LONG)
        rerun(at)
        assert at.pills(key="model").value == "mine"
        assert figures(at) or at.latex
        if page == "embeddings":  # untied: the note gives cos(E_v, W_U[:, v]) of the token
            note = next(i.value for i in at.info if "Untied embeddings" in i.value)
            said = re.search(r"For (.+): cos\(E_v, W_U\[:, v\]\) = (-?\d+\.\d+)", note)
            label, cos = said.groups()
            rows = next(t.value for t in tables(at) if "id" in t.value.columns)
            v = int(rows["id"][rows["token"] == ast.literal_eval(label)].iloc[0])
            e, u = mine.embed.weight[v].detach(), mine.unembed.weight[v].detach()
            assert float(cos) == pytest.approx(float(e @ u / (e.norm() * u.norm())), abs=5e-4)


def test_a_short_prompt_is_kept_in_the_link_and_a_long_one_is_not():
    """The link shares the prompt while it is short; a long one would make a URL that proxies
    and chat apps cut, so it stays out of the link, with a caption saying so."""
    at = run_page("attention", prompt="abc def")
    assert at.query_params["prompt"] == "abc def"
    at.text_area(key=box_key("prompt")).set_value("x" * (LINK_LIMIT + 1))
    rerun(at)
    assert "prompt" not in at.query_params
    assert any("too long for the page's link" in c.value for c in at.caption)
    at.text_area(key=box_key("prompt")).set_value("short again")
    rerun(at)
    assert at.query_params["prompt"] == "short again"
    assert not any("too long" in c.value for c in at.caption)


def test_the_tokenizers_text_follows_the_same_link_rule():
    at = run_page("tokenizers", text="héllo")
    assert at.text_area(key=box_key("text")).value == "héllo"
    at.text_area(key=box_key("text")).set_value("y" * 5000)
    rerun(at)
    assert "text" not in at.query_params
    assert at.metric[0].value == "5,000"  # the box keeps the whole text: only the link drops it


def test_the_gelu_view_names_the_form_the_model_uses_and_the_gap_to_tanh():
    """The caption's max |exact − tanh| is torch's own, over the plotted range."""
    import torch

    at = run_page("block", view="GELU vs ReLU")
    caption = " ".join(c.value for c in at.caption)
    assert "This model uses the exact form" in caption  # every bundled model has activation gelu
    x = torch.linspace(-4, 4, 401)
    gap = float((torch.nn.functional.gelu(x) - torch.nn.functional.gelu(x, approximate="tanh"))
                .abs().max())
    assert f"max |exact − tanh| = {gap:.1e}" in caption


def test_the_steps_of_one_head_show_the_biases_the_model_adds():
    """Bundled models have biases: Q = LN₁(X)W_Q + b_Q in the formula and in the panels'
    titles (LN₁ in both, as on every page), with the note on why b_K changes no pattern
    (tests/test_model.py checks it)."""
    at = run_page("attention", view="Steps of one head")
    tex = texts(at, "latex")
    assert r"W_Q + b_Q" in tex and r"W_K + b_K" in tex and r"W_V + b_V" in tex
    assert "$b_K$ changes no pattern" in " ".join(c.value for c in at.caption)
    titles = [f["layout"]["title"]["text"] for f in figures(at)]
    assert any(t.startswith("Q = LN₁(X) W_Q + b_Q") for t in titles), titles
    assert r"\mathrm{LN}_1(X)W_Q" in tex


def test_a_new_prompt_brings_the_chosen_token_back_to_its_last():
    """A review found the query box still reading "22: ." after the prompt became "x": the
    choice made on the old prompt was dropped, not set, and the box kept the old label."""
    at = run_page("attention")
    box = choice_box(at, "query")
    assert box.value == len(box.options) - 1  # the last token by default
    box.set_value(3)
    rerun(at)
    assert choice_box(at, "query").value == 3  # a choice on the same prompt stays
    for text, n in (("x", 1), ("a longer prompt than one token", None)):
        at.text_area(key=box_key("prompt")).input(text)
        rerun(at)
        box = choice_box(at, "query")
        last = len(box.options) - 1
        assert box.value == last and (n is None or len(box.options) == n)
        assert rf"\text{{query }} i = {last}\ " in texts(at, "latex")  # the row worked out
