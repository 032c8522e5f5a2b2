"""AppTest of the Attention page's circuits views on every bundled model: the score identity
passes on screen, the OV table, the taxonomy, the summed and rolled-out attention equal a
direct torch computation, and models without biases, positions or a second layer adapt.
Also the worked row's m = max over the unmasked keys (issue 12) and the index note."""

from __future__ import annotations

import re
from decimal import ROUND_HALF_UP, Decimal

import numpy as np
import pytest
import torch

from gptviz.analysis.induction import standard_induction
from gptviz.app.shared.notes import INDEX_NOTE
from gptviz.app.shared.widgets import box_key
from gptviz.checkpoints.folder import bundled_models, checkpoint_to_zip, load_checkpoint
from gptviz.model.names import act_name
from tests.helpers import (
    MODELS,
    app_test,
    checkpoint_uploader,
    choice_box,
    downloads,
    figure,
    figures,
    rerun,
    run_page,
    tables,
    texts,
    tiny_gpt,
    z_of,
)

NEW_VIEWS = ["Circuits of a head", "OV circuit", "Head taxonomy",
             "Summed heads", "Rollout"]

pytestmark = pytest.mark.skipif(not MODELS, reason="no bundled models in assets/models")


def model_run(model: str, at):
    """The bundled model and the activations of the prompt the page shows."""
    ckpt = load_checkpoint(bundled_models()[model])
    prompt = at.text_area(key=box_key("prompt")).value
    ids = ckpt.tokenizer.encode(prompt)[-ckpt.config.context_length:]
    return ckpt, ids, ckpt.model.run_with_cache(ids)[1]


def show(at, view: str):
    """Open ``view`` (the tab's state and its ``?view=``, which wins when both are set)."""
    at.session_state["view"] = view
    at.query_params["view"] = view
    return rerun(at)


def numbers(tex: str) -> list[float]:
    return [float(x) for x in re.findall(r"-?\d+\.\d+", tex)]


@pytest.mark.parametrize("model", MODELS)
def test_every_circuits_view_draws_on_every_model(model):
    at = run_page("attention", model=model, layer="1", head="1")
    for view in NEW_VIEWS:
        show(at, view)
        assert figures(at) and at.latex or view == "Head taxonomy", view
        assert not texts(at, "error"), (view, texts(at, "error"))
        assert len(downloads(at)) >= len(at.dataframe), view
    show(at, "Circuits of a head")
    assert "the four terms give the page's scores" in texts(at, "success")
    titles = [f["layout"]["title"]["text"] for f in (figure(at, "W_QK"), figure(at, "W_OV"))]
    assert titles == ["W_QK, layer 1, head 1", "W_OV, layer 1, head 1"]


@pytest.mark.parametrize("model", MODELS)
def test_the_worked_score_adds_its_terms_to_the_models_score(model):
    at = run_page("attention", model=model, view="Circuits of a head", layer="1", head="2")
    choice_box(at, "qk_query").set_value(5)
    rerun(at)
    choice_box(at, "qk_key").set_value(2)
    rerun(at)
    tex = next(x.value for x in at.latex if "page's score" in x.value)
    assert r"\hat x_i W_Q\, b_K^\top" in tex  # the bundled models have biases
    *parts, total, page = numbers(tex.split("=", 1)[1])
    d_k = load_checkpoint(bundled_models()[model]).config.d_head
    assert sum(parts) / d_k ** 0.5 == pytest.approx(total, abs=2e-3)
    _, _, cache = model_run(model, at)
    assert page == pytest.approx(float(cache[act_name("scores", 1)][0, 2, 5, 2]), abs=1e-4)
    assert total == pytest.approx(page, abs=1e-4)


def rotated(x: torch.Tensor) -> torch.Tensor:
    """Row p of x (T, d_k) turned by RoPE's R_p: pair (2i, 2i+1) by p·10000^(−2i/d_k)."""
    t, d = x.shape
    angle = torch.arange(t, dtype=torch.float64)[:, None] * 10000.0 ** (
        -torch.arange(0, d, 2, dtype=torch.float64) / d)  # (T, d_k/2)
    a, b = x[:, 0::2], x[:, 1::2]
    return torch.stack((a * angle.cos() - b * angle.sin(), a * angle.sin() + b * angle.cos()),
                       dim=-1).flatten(-2)


def written_qk(tex: str, model, layer: int, head: int, x: torch.Tensor, rope: bool):
    """q_i·k_j (T, T) as the sentence's right-hand side writes it: each term evaluated from
    the weights in float64 (a term not known here fails the test)."""
    attn, d, dk = model.blocks[layer].attn, model.config.d_model, model.config.d_head
    w = attn.W_QKV.weight.detach().double()  # (3d, d)
    cols = slice(head * dk, (head + 1) * dk)
    wq, wk = w[:d][cols].T, w[d:2 * d][cols].T  # (d, d_k) each
    b = attn.W_QKV.bias
    bq, bk = (None, None) if b is None else (b.detach().double()[:d][cols],
                                             b.detach().double()[d:2 * d][cols])
    x = x.double()  # (T, d)
    turn = rotated if rope else (lambda v: v)
    t = x.shape[0]
    terms = {
        r"\hat x_i W_Q W_K^\top \hat x_j^\top": lambda: (x @ wq) @ (x @ wk).T,
        r"\hat x_i W_Q R_{j-i} W_K^\top \hat x_j^\top": lambda: turn(x @ wq) @ turn(x @ wk).T,
        r"\hat x_i W_Q\, b_K^\top": lambda: (x @ wq @ bk)[:, None].expand(t, t),
        r"\hat x_i W_Q R_{j-i} b_K^\top": lambda: turn(x @ wq) @ turn(bk.expand(t, dk)).T,
        r"b_Q W_K^\top\, \hat x_j^\top": lambda: (bq @ wk.T @ x.T)[None, :].expand(t, t),
        r"b_Q R_{j-i} W_K^\top \hat x_j^\top": lambda: turn(bq.expand(t, dk)) @ turn(x @ wk).T,
        r"b_Q\, b_K^\top": lambda: (bq @ bk).expand(t, t),
        r"b_Q R_{j-i} b_K^\top": lambda: turn(bq.expand(t, dk)) @ turn(bk.expand(t, dk)).T,
    }
    written = tex.rsplit(" = ", 1)[1].split(" + ")
    return sum(terms[term]() for term in written), written


def check_qk_sentence(at, model, layer: int, head: int, ids: list[int]) -> list[str]:
    """The sentence's q_i·k_j, term by term from the weights, is the model's own q·kᵀ."""
    md = next(m.value for m in at.markdown if "four weight blocks" in m.value)
    tex = re.search(r"meet in the scores, \$(.+?)\$", md).group(1)
    rope = model.config.rope
    _, cache = model.run_with_cache(ids)
    x = cache[act_name("normalized", layer, "ln1")][0]  # (T, d)
    got, written = written_qk(tex, model, layer, head, x, rope)
    q, k = (cache[act_name(n, layer)][0, head].double() for n in (
        ("q_rot", "k_rot") if rope else ("q", "k")))  # (T, d_k) each
    direct = q @ k.T  # (T, T)
    assert torch.allclose(got, direct, atol=1e-4 * float(direct.abs().max()) + 1e-5)
    return written


@pytest.mark.parametrize("model", MODELS)
def test_the_qk_sentence_writes_every_term_of_q_dot_k(model):
    """Issue 39: "q_i·k_j = x̂_i W_Q W_Kᵀ x̂_jᵀ" left out the bias terms (on mathematics-bpe
    L0 H0 the b_Q term is −14.0 against −7.0 for the bilinear one). Its terms now add up to
    the model's q·kᵀ."""
    at = run_page("attention", model=model, view="Circuits of a head", layer="0", head="0")
    ckpt, ids, _ = model_run(model, at)
    written = check_qk_sentence(at, ckpt.model, 0, 0, ids)
    assert len(written) == 4  # the bundled models have biases


@pytest.mark.parametrize("bias, positional", [(False, "learned"), (True, "rope"),
                                              (False, "rope")])
def test_the_qk_sentence_follows_the_models_biases_and_rope(bias, positional):
    tok = load_checkpoint(bundled_models()[MODELS[0]]).tokenizer
    mine = tiny_gpt(tok.vocab_size, context_length=64, bias=bias, positional=positional,
                    n_layer=1)
    at = app_test()
    at.switch_page("app_pages/attention.py")
    rerun(at)
    checkpoint_uploader(at).set_value(
        ("mine.zip", checkpoint_to_zip(mine, tok, {"corpus": "x"}), "application/zip"))
    rerun(at)
    show(at, "Circuits of a head")
    prompt = next(box for box in at.text_area if box.key.startswith("prompt@")).value
    written = check_qk_sentence(at, mine, 0, 1, tok.encode(prompt)[-64:])
    assert len(written) == (4 if bias else 1)
    assert all(("R_{j-i}" in term) == (positional == "rope") for term in written)


@pytest.mark.parametrize("model", MODELS)
def test_the_ov_table_is_e_w_ov_w_u(model):
    at = run_page("attention", model=model, view="OV circuit", layer="1",
                  head="3")
    ckpt, ids, _ = model_run(model, at)
    assert at.selectbox(key="ov_source").value == ids[-1]  # the prompt's last token
    table = at.dataframe[0].value
    c, h, s = ckpt.config, 3, ids[-1]
    d, dk = c.d_model, c.d_head
    w = ckpt.model.blocks[1].attn.W_QKV.weight.detach().double()  # (3d, d)
    wo = ckpt.model.blocks[1].attn.W_O.weight.detach().double()  # (d, d)
    e = ckpt.model.embed.weight.detach().double()
    row = e[s] @ w[2 * d:][h * dk:(h + 1) * dk].T @ wo[:, h * dk:(h + 1) * dk].T @ e.T
    top = torch.argsort(row, descending=True)[:len(table)]
    np.testing.assert_array_equal(table["id"], top.numpy())
    np.testing.assert_allclose(table["logit change"], row[top].numpy(), rtol=1e-5, atol=1e-5)
    assert len(table) == min(10, c.vocab_size)
    assert table["rank"].tolist() == list(range(1, len(table) + 1))  # from 1, as elsewhere
    own = int((row > row[s]).sum()) + 1
    assert f"at rank {own:,} of {c.vocab_size:,}" in texts(at, "caption")


def test_the_ov_source_can_be_typed_and_bad_text_gets_a_message():
    at = run_page("attention", model="mathematics-char", view="OV circuit")
    first = at.dataframe[0].value
    at.text_input(key="ov_typed").input("xyz")
    rerun(at)
    assert "is 3 tokens" in texts(at, "error")
    assert at.dataframe[0].value.equals(first)  # the chosen token is kept
    at.text_input(key="ov_typed").input("q")
    rerun(at)
    assert not texts(at, "error") and not at.dataframe[0].value.equals(first)
    at.number_input(key="ov_rows").set_value(25)
    rerun(at)
    assert len(at.dataframe[0].value) == 25


@pytest.mark.parametrize("model", MODELS)
def test_the_taxonomy_table_is_the_direct_scores(model):
    at = run_page("attention", model=model, view="Head taxonomy")
    ckpt, ids, cache = model_run(model, at)
    table = at.dataframe[0].value
    c = ckpt.config
    assert len(table) == c.n_layer * c.n_head
    induction = torch.stack([r.scores for r in standard_induction(ckpt.model, ckpt.tokenizer)])
    induction = induction.mean(0)  # (L, H): the standard test, averaged over its lengths
    rows = np.arange(2, len(ids))
    for _, r in table.iterrows():
        p = cache[act_name("pattern", int(r["layer"]))][0, int(r["head"])].double().numpy()
        assert r["previous-token"] == pytest.approx(p[rows, rows - 1].mean(), abs=1e-6)
        assert r["first token"] == pytest.approx(p[rows, 0].mean(), abs=1e-6)
        assert r["self"] == pytest.approx(p[rows, rows].mean(), abs=1e-6)
        assert r["induction"] == pytest.approx(float(induction[r["layer"], r["head"]]), abs=1e-6)
        entropy = -(p * np.log(np.where(p > 0, p, 1))).sum(-1).mean()
        assert r["entropy (nats)"] == pytest.approx(entropy, abs=1e-5)
    assert set(table["label"]) <= {"previous-token", "induction", "first token", "self",
                                   "mixed", "none"}
    assert "standard repeated random sequence" in texts(at, "markdown")


@pytest.mark.parametrize("model", MODELS)
def test_summed_and_rollout_figures_are_the_direct_computation(model):
    at = run_page("attention", model=model, view="Summed heads")
    ckpt, ids, cache = model_run(model, at)
    c, t = ckpt.config, len(ids)
    patterns = torch.stack([cache[act_name("pattern", ly)][0] for ly in range(c.n_layer)])
    fig = figure(at, "Σ over the")
    for ly in range(c.n_layer):
        np.testing.assert_allclose(z_of(fig["data"][ly]), patterns[ly].sum(0).numpy(), atol=1e-5)
    tex = next(x.value for x in at.latex if "S^{(0)}_{" in x.value)
    *heads, total = re.findall(r"-?\d+\.\d+", tex.split(r"\qquad")[-1])
    added = sum(Decimal(h) for h in heads).quantize(Decimal(total), ROUND_HALF_UP)
    assert str(added) == total and len(heads) == c.n_head  # the terms shown add up
    assert float(total) == pytest.approx(float(patterns[0].sum(0)[t - 1].max()), abs=5e-4)
    show(at, "Rollout")
    eye = torch.eye(t, dtype=torch.float64)
    r = eye
    for ly in range(c.n_layer):
        a = 0.5 * patterns[ly].double().mean(0) + 0.5 * eye
        r = (a / a.sum(-1, keepdim=True)) @ r
        drawn = z_of(figure(at, "rollout R after each layer")["data"][ly])
        np.testing.assert_allclose(drawn, r.numpy(), atol=1e-5)
    np.testing.assert_allclose(drawn.sum(-1), 1.0, atol=1e-5)


def test_a_model_without_biases_positions_or_a_second_layer_adapts():
    """An uploaded one-layer model with no biases and no positions, context 16: the + b
    terms disappear, and induction is not measured (2 × 10 tokens do not fit)."""
    tok = load_checkpoint(bundled_models()[MODELS[0]]).tokenizer
    mine = tiny_gpt(tok.vocab_size, context_length=16, bias=False, positional="none",
                    n_layer=1)
    at = app_test()
    at.switch_page("app_pages/attention.py")
    rerun(at)
    checkpoint_uploader(at).set_value(
        ("bare.zip", checkpoint_to_zip(mine, tok, {"corpus": "x"}), "application/zip"))
    rerun(at)
    assert at.pills(key="model").value == "bare"
    for view in NEW_VIEWS:
        show(at, view)
        assert not texts(at, "error"), view
    show(at, "Circuits of a head")
    tex = texts(at, "latex")
    assert "b_K" not in tex and "b_Q" not in tex and r"W_{QK}" in tex
    assert "the one term gives the page's scores" in texts(at, "success")  # no biases
    show(at, "Head taxonomy")
    assert "Induction was not measured" in texts(at, "info")
    assert at.dataframe[0].value["induction"].isna().all()


def test_the_taxonomy_states_the_rule_its_labels_follow(monkeypatch):
    from gptviz.analysis import taxonomy as TX

    monkeypatch.setattr(TX, "THRESHOLD", 0.35)
    monkeypatch.setattr(TX, "MARGIN", 0.15)
    at = run_page("attention", model=MODELS[0], view="Head taxonomy")
    labels = next(m.value for m in at.markdown if m.value.startswith("**Labels.**"))
    assert labels == f"**Labels.** {TX.label_rule()}" and "at least 0.35 and beats" in labels
    table = at.dataframe[0].value
    kinds = ["previous-token", "induction", "first token", "self"]
    for _, row in table.iterrows():
        assert row["label"] == TX.label({k: float(row[k]) for k in kinds})


def test_a_two_token_prompt_gets_a_message_in_the_taxonomy():
    at = run_page("attention", model="mathematics-char", view="Head taxonomy", prompt="ab")
    assert "need at least 3" in texts(at, "info")


def test_the_worked_row_takes_m_over_the_unmasked_keys_and_the_index_note_shows_once():
    at = run_page("attention", model="mathematics-char", layer="1", head="3")
    choice_box(at, "query").set_value(4)
    rerun(at)
    tex = next(x.value for x in at.latex if r"\mathrm{softmax}_j" in x.value)
    assert r"m = \max_{j \le 4} s_{4,j}" in tex and "unmasked keys only" in tex
    _, _, cache = model_run("mathematics-char", at)
    s = cache[act_name("scores", 1)][0, 3, 4]  # (T,), before the mask
    m = float(re.search(r"s_\{4,j\} = (-?\d+\.\d+)", tex).group(1))
    assert m == pytest.approx(float(s[:5].max()), abs=1e-3)
    assert float(s.max()) > float(s[:5].max()) + 1e-3  # a masked key scores higher here
    assert sum(INDEX_NOTE in c.value for c in at.caption) == 1


def test_a_model_without_a_labelled_head_says_so_and_where_to_look():
    """The default model labels all 16 heads "none" (a review: an empty-looking view)."""
    at = run_page("attention", view="Head taxonomy")
    assert "No head of this model reaches" in texts(at, "info")
    at = run_page("attention", view="Head taxonomy", model="induction-2layer")
    assert "No head of this model reaches" not in texts(at, "info")


def test_the_query_token_outlives_a_visit_to_another_view():
    """The All heads view's query token was set back to the last token after another view
    (Streamlit forgets an undrawn select box's state); it is kept while the prompt is."""
    at = show(run_page("attention", model=MODELS[0]), "All heads")
    last = choice_box(at, "query").value
    choice_box(at, "query").set_value(3)
    rerun(at)
    show(at, "Summed heads")
    assert "query" not in at.session_state
    show(at, "All heads")
    assert choice_box(at, "query").value == 3 != last
    at.text_area(key=box_key("prompt")).set_value("a new prompt, another token")
    show(at, "All heads")
    assert choice_box(at, "query").value == len(choice_box(at, "query").options) - 1


def test_the_query_tokens_top_keys_are_keys_it_may_look_at():
    """The All heads view's top keys of query i are keys j ≤ i, with this row's weights (the
    table named a future key, weight 0.0000 by the mask, among the five)."""
    at = show(run_page("attention", model=MODELS[0]), "All heads")
    for query in (0, 2):
        choice_box(at, "query").set_value(query)
        rerun(at)
        top = next(t.value for t in tables(at) if list(t.value.columns) == ["key", "weight"])
        keys = [int(k.split(":")[0]) for k in top["key"]]
        assert len(keys) == query + 1 and max(keys) <= query
        ckpt, ids, cache = model_run(MODELS[0], at)
        row = cache[act_name("pattern", 0)][0, 0, query].numpy()
        np.testing.assert_allclose(top["weight"], row[keys], rtol=1e-5)
        assert sorted(top["weight"], reverse=True) == list(top["weight"])
