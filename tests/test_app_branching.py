"""The Generation page's branches, beam search and min-p under AppTest, their numbers against
a direct computation on the model (the tree's link format and its rebuilding are tested on
their own in tests/test_beam.py).

Branching at a step keeps every branch in a tree that can be revisited; the page's link
holds the tree, and opening it rebuilds the same tree; a link or a branch whose positions
no longer exist gets a message. The beams' scores, the branches' probabilities and min-p's
threshold are what the model says.
"""

from __future__ import annotations

import re

import pandas as pd
import pytest
import torch

from gptviz.app.generation import tree
from gptviz.app.generation.state import History, Sampling
from gptviz.app.shared.tex import percent
from gptviz.app.shared.widgets import box_key
from gptviz.checkpoints.folder import DEFAULT_MODEL, Checkpoint, bundled_models, load_checkpoint
from gptviz.generation.beam import beam_search
from gptviz.generation.sampling import generate
from gptviz.tokenizers.char import CharTokenizer
from tests.helpers import MODELS, figures, read_percent, rerun, run_page, texts, tiny_gpt
from tests.test_app_external_views import assert_same_step

MODEL = DEFAULT_MODEL if DEFAULT_MODEL in MODELS else MODELS[0]


def history(at) -> History:
    return at.session_state["gen_history"]


def messages(at) -> str:
    return texts(at, "info", "warning", "error", "markdown", "caption")


def generate_n(at, n: int) -> None:
    at.number_input(key="gen_n").set_value(n).run()
    at.button(key="gen_run").click()
    rerun(at)


def branch(at, step: int, choice: int = 1, then_generate: bool = False) -> int:
    """Branch at ``step`` (from 1) with the ``choice``-th offered token; returns its id."""
    view(at, "Branches")
    if len(history(at).turns) > 1:
        at.select_slider(key="gen_step").set_value(step).run()
    box = at.selectbox(key="gen_branch_token")
    token_id = int(re.search(r"\(id (\d+)\)$", box.options[choice]).group(1))
    box.set_value(token_id)
    at.button(key="gen_branch_run" if then_generate else "gen_branch").click()
    rerun(at)
    return token_id


def view(at, name: str) -> None:
    at.session_state["view"] = name
    rerun(at)


def model_of(at):
    return load_checkpoint(bundled_models()[at.session_state["model"]]).model.eval()


def direct_p(model, ids: list[int]) -> torch.Tensor:
    """P(· | ids) by one forward pass on the last N ids, float64."""
    with torch.no_grad():
        y = model(ids[-model.config.context_length:])[0, -1].double()
    return torch.softmax(y, -1)


# ---- branching ----------------------------------------------------------------------------

def test_branch_at_a_replayed_step_and_go_on():
    at = run_page("generation", model=MODEL)
    generate_n(at, 5)
    main = history(at).path
    token = branch(at, 2)
    h = history(at)
    assert h.path == (main[0], token) and token != main[1]
    assert len(h.nodes) == 6 and all(main[:k] in h.nodes for k in range(1, 6))
    assert "Branched at step 2" in messages(at) and h.turns[-1].origin == "picked"
    at.session_state["gen_next"] = {"clicks": h.clicks_seen + 1}
    rerun(at)
    assert len(history(at).path) == 3 and len(history(at).nodes) == 7
    assert "you chose" not in messages(at)  # the step shown is the new, drawn one
    branch(at, 3, choice=2, then_generate=True)  # "Branch and continue" (n = 5)
    assert len(history(at).path) == 8 and len(tree.leaves(history(at).nodes)) == 3


def test_the_tree_shows_the_models_probabilities():
    at = run_page("generation", model=MODEL)
    generate_n(at, 4)
    branch(at, 3)
    h, model = history(at), model_of(at)
    fig = next(f for f in figures(at) if "branches" in f["layout"]["title"]["text"])
    nodes = fig["data"][-1]
    keys = [c[0] for c in nodes["customdata"]]
    assert sorted(keys) == sorted([""] + [".".join(map(str, p)) for p in h.nodes])
    for key, hover in zip(keys[1:], [c[1] for c in nodes["customdata"]][1:], strict=True):
        path = tuple(int(i) for i in key.split("."))
        p = direct_p(model, h.prompt_ids + list(path[:-1]))[path[-1]]
        shown = re.search(r"P = (\S+)", hover).group(1)  # as tex.percent writes it
        assert shown == percent(float(p), 3)
        assert read_percent(shown) == pytest.approx(float(p), rel=5e-3)
    table = at.dataframe[0].value
    for n, leaf in enumerate(tree.leaves(h.nodes)):
        direct = sum(float(direct_p(model, h.prompt_ids + list(leaf[:k]))[leaf[k]].log())
                     for k in range(len(leaf)))
        assert table["log P(text | prompt)"].iloc[n] == pytest.approx(direct, abs=1e-3)


def test_select_a_node_to_make_it_the_text():
    at = run_page("generation", model=MODEL)
    generate_n(at, 4)
    first = history(at).path
    branch(at, 2)
    at.selectbox(key="gen_goto").set_value(first).run()
    assert not at.exception and history(at).path == first
    assert at.selectbox(key="gen_goto").value is None  # a menu, not a state
    assert "The text is now the branch ending at step 4" in messages(at)
    at.selectbox(key="gen_goto").set_value(()).run()
    assert history(at).path == () and len(history(at).nodes) == 5  # the tree stays


def test_undo_keeps_a_token_other_branches_grow_from():
    at = run_page("generation", model=MODEL)
    generate_n(at, 3)
    main = history(at).path
    branch(at, 2)
    at.selectbox(key="gen_goto").set_value(main[:1]).run()  # the fork, step 1
    at.button(key="gen_undo").click()
    rerun(at)
    assert history(at).path == () and main[:1] in history(at).nodes  # kept: it has children
    at.selectbox(key="gen_goto").set_value(main).run()
    at.button(key="gen_undo").click()
    rerun(at)
    assert main not in history(at).nodes and history(at).path == main[:2]  # a leaf leaves


def test_branching_from_the_link_reproduces_the_same_tree():
    at = run_page("generation", model=MODEL)
    generate_n(at, 5)
    branch(at, 2)
    generate_n(at, 3)
    branch(at, 4, choice=3)
    history(at).select(history(at).path[:2])  # as a click on that node of the tree does
    rerun(at)
    link = dict(at.query_params)
    assert {"branches", "at", "prompt"} <= set(link)  # (the default model is not written)
    h = history(at)
    again = run_page("generation", **link)
    g = history(again)
    assert list(g.nodes) == list(h.nodes) and g.path == h.path
    assert all(t.origin == "link" for t in g.nodes.values())
    for path, turn in h.nodes.items():
        assert_same_step(g.nodes[path], turn, atol=2e-4)
    assert dict(again.query_params)["branches"] == link["branches"]
    view(again, "Branches")
    view(at, "Branches")
    # the same table; its log P, a sum of per-token log-probabilities each within 2e-4 and
    # rounded to 4 places, may differ in the last place (the CPU's matmul kernels decide)
    pd.testing.assert_frame_equal(again.dataframe[0].value, at.dataframe[0].value,
                                  check_exact=False, rtol=0, atol=5e-4)


@pytest.mark.parametrize("branches, at_, message", [
    ("000000_1.2.3", None, "grown from another prompt or another model"),
    ("zz", None, "does not start with the six-digit tag"),
    (None, "9.9", "is not a node of the tree"),
    ("TAG_1.zzzz", None, "outside the vocabulary"),
])
def test_a_link_whose_positions_do_not_exist_is_explained(branches, at_, message):
    first = run_page("generation", model=MODEL)
    generate_n(first, 3)
    link = dict(first.query_params)
    tag = link["branches"].split("_")[0]
    if branches is not None:
        link["branches"] = branches.replace("TAG", tag)
    if at_ is not None:
        link["at"] = at_
    at = run_page("generation", **link)
    assert message in messages(at) and not at.error
    assert len(history(at).turns) == (3 if at_ else 0)  # a bad node: the first branch
    at.session_state["gen_next"] = {"clicks": history(at).clicks_seen + 1}
    rerun(at)  # and the page goes on


def test_a_branch_from_a_step_that_no_longer_exists_is_explained():
    at = run_page("generation", model=MODEL)
    generate_n(at, 4)
    view(at, "Branches")
    at.select_slider(key="gen_step").set_value(4).run()
    history(at).undo()  # as another rerun (Undo in a second tab) would, before the click
    history(at).undo()
    at.button(key="gen_branch").click()
    rerun(at)
    assert "Cannot branch: step 4 no longer exists" in messages(at)
    assert len(history(at).path) == 2


def test_editing_the_prompt_drops_the_tree_and_its_link():
    at = run_page("generation", model=MODEL)
    generate_n(at, 3)
    branch(at, 2)
    assert "branches" in at.query_params
    at.text_area(key=box_key("prompt")).set_value("The orbifold").run()
    assert not history(at).nodes and "branches" not in at.query_params
    assert "at" not in at.query_params


# ---- beam search --------------------------------------------------------------------------

def test_beam_view_scores_are_the_models():
    at = run_page("generation", model=MODEL, view="Beam search", beam="4", beam_n="6")
    assert at.slider(key="beam").value == 4 and not at.warning
    model, prompt = model_of(at), history(at).prompt_ids
    table = at.dataframe[0].value
    assert list(table["score = log P(text | prompt)"]) == sorted(
        table["score = log P(text | prompt)"], reverse=True)
    beams = beam_search(model, prompt, 6, 4)
    for b in range(4):
        tokens = beams.tokens(5, b)
        direct = sum(float(direct_p(model, prompt + tokens[:k])[tokens[k]].log())
                     for k in range(6))
        assert table["score = log P(text | prompt)"].iloc[b] == pytest.approx(direct, abs=1e-3)
    tex = next(x.value for x in at.latex if r"\operatorname{score}" in x.value)
    assert f"{beams.steps[-1].scores[0]:.3f}" in tex and "alpha = 0" in tex
    greedy = generate(model, prompt, 6, temperature=0)[len(prompt):]
    g = sum(float(direct_p(model, prompt + greedy[:k])[greedy[k]].log()) for k in range(6))
    vs = next(x.value for x in at.latex if r"y^{\text{greedy}}" in x.value)
    assert f"= {g:.3f}" in vs
    beam_fig = next(f for f in figures(at) if "beams after every step" in
                    f["layout"]["title"]["text"])
    assert len(beam_fig["data"][-1]["x"]) == 1 + 4 * 6  # the prompt and k beams a step


def test_the_page_says_when_beam_search_missed_the_most_probable_text():
    """Issue 39: on the default prompt, k = 3 and 4 tokens, the most probable 4-token text
    is "↵↵Let" (log P = −4.318), not the beam's (−4.472): its prefix left the beams at step
    3. The page shows it, its log P is the model's, and it beats the beam's text."""
    at = run_page("generation", model=MODEL, view="Beam search", beam_n="4")
    assert at.slider(key="beam").value == 3  # the page's default width
    model, prompt = model_of(at), history(at).prompt_ids
    beams = beam_search(model, prompt, 4, 3)
    tok = load_checkpoint(bundled_models()[MODEL]).tokenizer
    vs = next(x.value for x in at.latex if r"y^{\text{greedy}}" in x.value)
    assert r"\text{beam search missed $y^{*}" in vs
    found = re.search(r"\\log P\(y\^\{\*\} \\mid x\) = (-\d+\.\d+)", vs)
    best = float(found.group(1))
    assert best == pytest.approx(-4.318, abs=5e-4)
    assert f"{beams.steps[-1].scores[0]:.3f}" in vs and "left the 3 beams at step 3" in vs
    caption = next(c for c in messages(at).split("\n") if "missed the most probable" in c)
    text = re.search(r"text, “(.+?)” \(log P", caption).group(1)
    assert text == "↵↵Let"
    ids = tok.encode("\n\nLet")
    direct = sum(float(direct_p(model, prompt + ids[:k])[ids[k]].log()) for k in range(len(ids)))
    assert len(ids) == 4 and direct == pytest.approx(best, abs=1e-3)
    assert direct > beams.steps[-1].scores[0] + 0.1
    kept = {tuple(beams.tokens(2, b)) for b in range(3)}
    assert tuple(ids[:2]) in {k[:2] for k in kept} and tuple(ids[:3]) not in kept


def test_the_missed_text_reads_as_itself_in_the_caption():
    """k = 4, 10 tokens: y* is "↵↵Let $M$ be a closed", whose "$M$" a caption would set
    as math."""
    at = run_page("generation", model=MODEL, view="Beam search", beam="4", beam_n="10")
    caption = next(c for c in messages(at).split("\n") if "missed the most probable" in c)
    assert "Let·\\$M\\$·be" in caption


def test_the_page_says_not_checked_past_the_search_cap():
    at = run_page("generation", model=MODEL, view="Beam search", beam_n="30")
    vs = next(x.value for x in at.latex if r"y^{\text{greedy}}" in x.value)
    assert r"y^{*}\ \text{not checked}" in vs
    assert "was **not checked**: the search reached its cap" in messages(at)


def test_width_one_writes_the_greedy_text():
    at = run_page("generation", model=MODEL, view="Beam search", beam="1", beam_n="10",
                  temperature="0")
    chips = [h.value for h in at.get("html") if "gv-chip" in h.value]
    greedy, beam, sampled = chips[-3:]
    assert greedy == beam == sampled  # T = 0: the sampled text is greedy's too
    assert "the sampled text is the greedy one" in messages(at)


def test_bad_beam_settings_are_explained():
    at = run_page("generation", model=MODEL, view="Beam search", beam="20")
    assert "not a whole number from 1 to 8" in messages(at) and at.dataframe


def test_a_beam_wider_than_the_vocabulary_is_explained():
    from gptviz.app.serving.budget import Shelf

    tok = CharTokenizer()
    tok.train("ab")  # |V| = 6: a, b and four specials
    shelf = Shelf()
    shelf["tiny"] = Checkpoint(tiny_gpt(tok.vocab_size), tok)
    from streamlit.testing.v1 import AppTest

    from tests.helpers import ROOT

    at = AppTest.from_file(str(ROOT / "app_pages/generation.py"), default_timeout=120)
    at.session_state["gptviz_session_models"] = shelf  # as if trained in this session
    at.session_state["model"] = "tiny"
    for k, v in dict(view="Beam search", beam="7", prompt="ab").items():
        at.query_params[k] = v
    rerun(at)
    assert "beam width 7 is larger than the vocabulary (|V| = 6)" in messages(at)
    at.number_input(key="top_k").set_value(9).run()
    assert "at least the vocabulary size" in messages(at)


# ---- min-p --------------------------------------------------------------------------------

def test_min_p_filters_the_step_as_its_formula_says():
    at = run_page("generation", model=MODEL, min_p="0.2", temperature="0.8")
    assert at.slider(key="min_p").value == pytest.approx(0.2)
    model, ids = model_of(at), history(at).ids
    with torch.no_grad():
        y = model(ids[-model.config.context_length:])[0, -1].double()
    p = torch.softmax(y / 0.8, -1)
    keep = p >= 0.2 * p.max()
    tex = next(x.value for x in at.latex if r"S_{\min}" in x.value)
    assert f"{float(p.max()):.4f}" in tex and f"{0.2 * float(p.max()):.5f}" in tex
    assert re.search(rf"\|S\| = {int(keep.sum())}\b", tex)
    at.session_state["gen_next"] = {"clicks": history(at).clicks_seen + 1}
    rerun(at)
    turn = history(at).turns[-1]
    assert turn.sampling.min_p == pytest.approx(0.2) and bool(keep[turn.chosen])


@pytest.mark.parametrize("raw", ["2", "-0.5", "lots"])
def test_min_p_outside_zero_one_in_the_link_is_explained(raw):
    at = run_page("generation", model=MODEL, min_p=raw)
    assert "not a number from 0 to 1" in messages(at)
    assert history(at).preview(model_of(at), Sampling()).chosen is not None


def test_greedy_says_min_p_changes_nothing():
    at = run_page("generation", model=MODEL, temperature="0", min_p="0.3")
    assert "min-p changes nothing" in messages(at)
