"""The Generation page under AppTest (on the bundled models), and its history state.

A step appends exactly one token; T = 0 is deterministic; a seed reproduces the
text; Undo restores the previous state; N draws count N; every bad input of issue 6
gets a message, never a traceback.
"""

from __future__ import annotations

import re
import threading
from typing import TYPE_CHECKING

import numpy as np
import pytest

from gptviz.app.generation.state import History, Sampling
from gptviz.app.shared.widgets import box_key
from gptviz.checkpoints.folder import bundled_models, load_checkpoint
from gptviz.generation import sampling as gen
from tests.helpers import MODELS, array_of, figures, metric, rerun, run_page, texts, tiny_gpt, z_of

if TYPE_CHECKING:
    from streamlit.testing.v1 import AppTest

    from gptviz.model import GPT



def history(at: AppTest) -> History:
    return at.session_state["gen_history"]


def click(at: AppTest, key: str) -> AppTest:
    at.button(key=key).click()
    return rerun(at)


def next_token(at: AppTest) -> AppTest:
    """One click on "Next token": the button sends its running total of clicks."""
    at.session_state["gen_next"] = {"clicks": history(at).clicks_seen + 1}
    return rerun(at)


def generate(at: AppTest, n: int) -> list[int]:
    at.number_input(key="gen_n").set_value(n).run()
    click(at, "gen_run")
    return history(at).ids


def messages(at: AppTest) -> str:
    return texts(at, "info", "warning", "error", "markdown")


def new_chips(at: AppTest) -> int:
    return sum(h.value.count(" gv-new") for h in at.get("html"))


# ---- the page -----------------------------------------------------------------------------

def test_page_shows_the_step_before_any_click():
    at = run_page("generation")
    assert at.title[0].value == "Generation"
    assert "The next step" in messages(at)
    assert any(r"\sigma\!\Big(\frac{y_N}{T}\Big)_i" in x.value for x in at.latex)
    assert any(r"\mapsto \begin{cases}" in x.value for x in at.latex)  # the seeds' display
    assert new_chips(at) == 0
    assert not figures(at)  # the top-k bars are HTML: no chart library to load
    bars = [h.value for h in at.get("html") if "gv-topk" in h.value]
    assert len(bars) == 1 and bars[0].count('class="gv-topk-row" data-id=') == 10
    assert at.button(key="gen_undo").disabled and at.button(key="gen_reset").disabled


def test_next_token_appends_exactly_one_token():
    at = run_page("generation")
    before = history(at).ids
    for n in (1, 2, 3):
        next_token(at)
        ids = history(at).ids
        assert len(ids) == len(before) + n and ids[: len(before)] == before
        assert new_chips(at) == n and f"{n} generated" in " ".join(c.value for c in at.caption)
    assert "Step 3" in messages(at)


def test_temperature_zero_is_deterministic_and_greedy():
    at = run_page("generation", temperature="0")
    assert "Greedy decoding" in messages(at)
    next_step = " ".join(m.value for m in at.markdown if "The next step" in m.value)
    assert "append the most probable token" in next_step and "seed" not in next_step
    first = generate(at, 12)
    click(at, "gen_reset")
    at.number_input(key="seed").set_value(99).run()  # greedy ignores the seed
    assert generate(at, 12) == first
    prompt = history(at).prompt_ids  # the same greedy text through the library's KV cache
    assert gen.generate(_model(at), prompt, 12, temperature=0) == first


def _model(at: AppTest) -> GPT:
    return load_checkpoint(bundled_models()[at.session_state["model"]]).model.eval()


def test_a_fixed_seed_reproduces_the_text():
    at = run_page("generation", temperature="1.5")
    at.number_input(key="seed").set_value(7).run()
    first = generate(at, 15)
    click(at, "gen_reset")
    assert generate(at, 15) == first  # same seed, same text
    click(at, "gen_reset")
    for _ in range(15):
        next_token(at)
    assert history(at).ids == first  # n clicks of Next = one Generate n
    click(at, "gen_reset")
    at.number_input(key="seed").set_value(8).run()
    assert generate(at, 15) != first


def test_undo_restores_the_previous_state():
    at = run_page("generation")
    generate(at, 3)
    ids, html = history(at).ids, [h.value for h in at.get("html")]
    next_token(at)
    click(at, "gen_undo")
    assert history(at).ids == ids and [h.value for h in at.get("html")] == html
    assert "Step 3" in messages(at)
    for _ in range(3):
        click(at, "gen_undo")
    assert len(history(at).turns) == 0 and at.button(key="gen_undo").disabled


def test_clicks_merged_into_one_rerun_each_give_a_token():
    """Fast clicks reach the page as one rerun carrying the button's total: 3 clicks, 3 tokens."""
    at = run_page("generation")
    next_token(at)
    at.session_state["gen_next"] = {"clicks": history(at).clicks_seen + 3}
    at.run()
    assert len(history(at).turns) == 4
    at.run()  # a rerun with no new click adds nothing
    assert len(history(at).turns) == 4
    at.text_area(key=box_key("prompt")).set_value("The orbifold").run()  # a new history …
    next_token(at)  # … and the button's total goes on from where it was
    assert len(history(at).turns) == 1


def test_replay_shows_an_earlier_step():
    at = run_page("generation")
    generate(at, 4)
    at.select_slider(key="gen_step").set_value(2).run()
    assert not at.exception and "Step 2" in messages(at)
    turn = history(at).turns[1]
    chosen = at.session_state["gen_history"].ids[len(history(at).prompt_ids) + 1]
    assert turn.chosen == chosen


def test_history_table_lists_every_step():
    at = run_page("generation", view="History")
    generate(at, 5)
    table = at.dataframe[0].value
    assert list(table["step"]) == [1, 2, 3, 4, 5]
    assert (table["P(chosen)"] > 0).all()


@pytest.mark.parametrize("n", [1, 2500, 10_000])
def test_the_histogram_counts_n_draws(n):
    at = run_page("generation", view="Sample N times")
    at.number_input(key="gen_samples").set_value(n).run()
    assert not at.exception
    assert metric(at, "Draws") == f"{n:,}"
    assert int(np.sum(array_of(figures(at)[0]["data"][1]["customdata"]))) == n


def test_three_temperatures_side_by_side():
    at = run_page("generation", view="Three temperatures")
    titles = [a["text"] for a in figures(at)[0]["layout"]["annotations"]]
    assert [t.split("<br>")[0] for t in titles] == ["T = 0.5", "T = 1.0", "T = 2.0"]
    at.pills(key="gen_temps").set_value([]).run()
    assert "at least one temperature" in messages(at)


def test_attention_of_the_new_token():
    at = run_page("generation", view="Attention", layer="1", head="2")
    generate(at, 3)
    assert "Layer 1, head 2" in messages(at)
    assert any("gv-chip" in h.value and "weight" in h.value for h in at.get("html"))
    rows = z_of(figures(at)[0]["data"][0])  # (n_head, T), the last query
    assert rows.shape[1] == min(len(history(at).ids) - 1, _model(at).config.context_length)
    assert abs(float(sum(rows[2])) - 1.0) < 1e-4  # one query's weights sum to 1


def test_long_text_is_cropped_to_the_context_window():
    at = run_page("generation")
    n_ctx = _model(at).config.context_length
    generate(at, n_ctx + 5)
    assert "cut" in " ".join(c.value for c in at.caption)
    assert any("✂" in h.value for h in at.get("html"))
    step = history(at).step(len(history(at).turns) - 1, n_ctx)
    assert len(step.context) == n_ctx and step.cropped > 0


# ---- bad input ----------------------------------------------------------------------------

def test_empty_prompt_starts_from_bos():
    at = run_page("generation", prompt="")
    assert "The prompt is empty" in messages(at)
    next_token(at)
    assert len(history(at).ids) == 2


def test_characters_the_tokenizer_cannot_encode_become_unk():
    if "mathematics-char" not in MODELS:
        pytest.skip("the character model is not bundled")
    at = run_page("generation", model="mathematics-char", prompt="Thom ∰ 🙂 manifolds")
    assert "<|UNK|>" in messages(at)
    assert any("#ff8a80" in h.value for h in at.get("html"))  # the red <|UNK|> chips
    next_token(at)
    assert len(history(at).turns) == 1


def test_temperature_zero_with_top_k_and_top_p_is_explained():
    at = run_page("generation", temperature="0")
    at.number_input(key="top_k").set_value(5).run()
    at.slider(key="top_p").set_value(0.5).run()
    assert "top-k and top-p change nothing" in messages(at)
    next_token(at)
    assert len(history(at).turns) == 1


def test_top_k_larger_than_the_vocabulary_is_explained():
    at = run_page("generation")
    at.number_input(key="top_k").set_value(999_999).run()
    assert "at least the vocabulary size" in messages(at)
    next_token(at)
    assert history(at).turns[-1].sampling.top_k is None


def test_n_zero_draws_is_explained():
    at = run_page("generation", view="Sample N times")
    at.number_input(key="gen_samples").set_value(0).run()
    assert not at.exception and "N = 0" in messages(at)
    assert not figures(at)


def test_a_bad_temperature_in_the_url_is_explained():
    at = run_page("generation", temperature="hot")
    assert "is not a number" in messages(at) and at.slider(key="temperature").value == 1.0


def test_stop_in_the_middle_of_generate_n_keeps_every_token():
    at = run_page("generation")
    generate(at, 10)
    h = history(at)
    h.planned, h.pending = 50, 40  # as if a run were interrupted after 10 of 50 tokens
    click(at, "gen_stop")
    assert "Stopped after 10 of 50 tokens; all 10 are kept" in messages(at)
    assert len(history(at).turns) == 10 and history(at).pending == 0
    next_token(at)
    assert len(history(at).turns) == 11  # and stepping goes on from there
    click(at, "gen_stop")
    assert "Nothing was running" in messages(at) and len(history(at).turns) == 11


def test_changing_the_prompt_starts_again():
    at = run_page("generation")
    generate(at, 3)
    at.text_area(key=box_key("prompt")).set_value("The orbifold").run()
    assert not at.exception and len(history(at).turns) == 0


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("view", ["This step", "Three temperatures", "Sample N times",
                                  "Attention", "History"])
def test_every_view_works_on_every_bundled_model(name, view):
    at = run_page("generation", model=name, view=view)
    generate(at, 4)
    assert not at.error, [e.value for e in at.error]
    assert len(history(at).turns) == 4


# ---- the history state on its own ---------------------------------------------------------

@pytest.fixture(scope="module")
def tiny() -> GPT:
    return tiny_gpt(12, context_length=6)


def test_history_steps_undo_and_replay(tiny):
    h = History(("tiny", ""), [1, 2])
    turns = [h.advance(tiny, Sampling(temperature=1.0, seed=3)) for _ in range(8)]
    assert h.ids == [1, 2] + [t.chosen for t in turns]
    step = h.step(7, tiny.config.context_length)  # the window is cropped to 6 ids
    assert len(step.context) == 6 and step.cropped == 3 and step.chosen == turns[7].chosen
    assert float(step.probs.sum()) == pytest.approx(1.0)
    assert h.undo() is turns[-1] and len(h.turns) == 7
    h.reset()
    assert h.ids == [1, 2] and h.undo() is None


def test_history_preview_is_what_next_draws(tiny):
    h = History(("tiny", ""), [4])
    s = Sampling(temperature=2.0, seed=11)
    assert h.preview(tiny, s).chosen == h.advance(tiny, s).chosen


def test_a_stale_stream_cannot_advance(tiny):
    h = History(("tiny", ""), [4])
    h.start(5)
    old = h.claim()
    new = h.claim()  # a newer run took over
    assert not h.stream_step(tiny, Sampling(), old)
    assert h.stream_step(tiny, Sampling(), new) and h.pending == 4
    assert h.finish(old) is None and h.finish(new) == 1 and h.pending == 0


def test_concurrent_steps_never_lose_or_duplicate_tokens(tiny):
    """Two threads, as Streamlit's fast reruns can briefly have, share one history."""
    h = History(("tiny", ""), [1])
    h.start(60)
    owner = h.claim()

    def loop() -> None:
        while h.stream_step(tiny, Sampling(temperature=1.0), owner):
            pass

    threads = [threading.Thread(target=loop) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(h.turns) == 60 and h.pending == 0
    again = History(("tiny", ""), [1])  # the same seed, one thread: the same text
    for _ in range(60):
        again.advance(tiny, Sampling(temperature=1.0))
    assert again.ids == h.ids


def test_the_seeds_picture_writes_characters_split_over_tokens_whole():
    """A review saw a row of "�" per emoji or CJK character: each token's bytes were
    decoded alone. The running text is decoded as one stream; a token that is only part
    of a character is named by its bytes, as its chip is."""
    text = "Topology 🧮 of 曲面 ✨\nsecond line: ∮ω = 0 😀"
    at = run_page("generation", prompt=text)
    line = next(el.value for el in at.latex if r"\mapsto" in el.value)
    assert "\ufffd" not in line
    assert "曲面" in line and "U+1F600" in line  # the emoji as tex_text writes it
    from gptviz.app.generation.formulas import chain_pieces, token_text
    tok = load_checkpoint(bundled_models()["mathematics-bpe"]).tokenizer  # the page's model
    parts = [tok.id_to_bytes(i) for i in tok.encode(text)]
    assert "".join(chain_pieces(parts, boxed=False)) == text
    split = next(b for b in parts if token_text(b).startswith("‹"))  # a part of a character
    assert token_text(split) == "‹" + " ".join(f"{x:02x}" for x in split) + "›"


def test_the_seeds_picture_cuts_its_text_between_tokens():
    """A review: with the char model the "…" cut fell inside an <|UNK|> label ("…NK|>")."""
    at = run_page("generation", model="mathematics-char",
                  prompt="Topology 🧮 of 曲面 and 流形 ✨\nsecond line: ∮ω = 0 😀")
    line = next(el.value for el in at.latex if r"\mapsto" in el.value)
    cut = line.split("…", 1)[1] if "…" in line else ""
    assert cut and not re.match(r"(UNK|NK|K|\|)", cut), line
