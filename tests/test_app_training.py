"""AppTest of the Training page: a tiny run finishes and becomes selectable, Stop
stops it, a diverging learning rate gets a message, extra trainers queue,
checkpoints upload (and bad ones are refused), and bad setups are explained.

The page is opened through ``app.py`` (its page links need the router). Runs use
a tiny model on the bundled ``sample`` corpus so that each takes a second or two.
"""

from __future__ import annotations

import io
import re
import threading
import time
import zipfile
from typing import TYPE_CHECKING

import pandas as pd
import pytest
import streamlit as st

from gptviz.app.serving.trainers import trainer_slots
from gptviz.app.shared.picker import SESSION_MODELS
from gptviz.app.training import controls as training_ui
from gptviz.checkpoints.folder import checkpoint_to_zip, initial_model, load_checkpoint_zip
from gptviz.model import GPTConfig
from gptviz.tokenizers import train_tokenizer
from tests.helpers import (
    app_test,
    checkpoint_uploader,
    choice_box,
    downloads,
    rerun,
    text_blocks,
    texts,
)

if TYPE_CHECKING:
    from streamlit.testing.v1 import AppTest

TINY = {"tr_corpus": "sample", "tr_d_model": 16, "tr_n_layer": 1, "tr_n_head": 2,
        "tr_context_length": 16, "tr_steps": 30, "tr_batch_size": 4}


@pytest.fixture
def at():
    app = app_test()
    app.switch_page("app_pages/training.py")
    for key, value in TINY.items():  # start small: no need to encode the big corpus
        app.session_state[key] = value
    yield rerun(app)
    st.cache_resource.clear()  # releases the session's trainer: its thread stops
    for thread in threading.enumerate():
        if thread.name == "gptviz-training":
            thread.join(10)


CORPUS_LABELS = {"upload": "Upload a .txt file…", "sample": "sample (bundled)",
                 "synthetic:induction": "synthetic — r|r: copy a random string of 6–14 letters"}


def configure(at: AppTest, **changes) -> AppTest:
    for key, value in {**TINY, **changes}.items():
        if key == "tr_corpus":  # picked in the corpus box as a reader does
            box = choice_box(at, "tr_corpus@box")
            box.set_value(box.options.index(CORPUS_LABELS[value])).run()
        else:
            at.get_by_key(key).set_value(value)
    return rerun(at)


def run_until(at: AppTest, predicate, timeout: float = 60.0) -> AppTest:
    deadline = time.monotonic() + timeout
    while True:
        if predicate(rerun(at)):
            return at
        assert time.monotonic() < deadline, "timed out waiting for the page"
        time.sleep(0.3)


def picker_options(at: AppTest) -> list[str]:
    return [o.removesuffix(" (this session)") for o in at.sidebar.pills(key="model").options]


def test_the_page_shows_setup_data_and_loss_before_any_run(at):
    assert at.title[0].value == "Training"
    labels = [m.label for m in at.metric]
    assert {"Parameters", "Estimated time", "Tokens in the corpus"} <= set(labels)
    assert any(r"\ln |V|" in x.value for x in at.latex)  # L ≈ ln|V| for an untrained model
    assert "gv-chip" in texts(at, "html")  # the sliding windows
    assert not at.button(key="tr_start").disabled
    at.session_state["tr_param_counts"] = True  # the parameters per component, opened
    rerun(at)
    files = {d["name"]: pd.read_csv(io.StringIO(d["text"])) for d in downloads(at) if "name" in d}
    pairs = files["training-window-sample.csv"]
    assert pairs["i"].tolist() == list(range(1, len(pairs) + 1)) and len(pairs) == 8
    *parts, total = files["parameters-sample.csv"]["parameters"]  # numbers, not "4.7k"
    assert sum(parts) == total == next(int(m.value.replace(",", "")) for m in at.metric
                                       if m.label == "Parameters")


def test_a_preset_sets_the_widgets(at):
    at.button(key="tr_preset-induction heads").click().run()
    box = choice_box(at, "tr_corpus@box")
    assert box.options[box.value] == CORPUS_LABELS["synthetic:induction"]
    assert at.session_state["tr_corpus"] == "synthetic:induction"
    assert at.segmented_control(key="tr_positional").value == "learned"
    assert at.slider(key="tr_n_layer").value == 2


def test_a_tiny_run_finishes_and_is_selectable(at):
    configure(at)
    at.button(key="tr_start").click().run()
    run_until(at, lambda a: "Finished after 30 steps" in texts(a, "success"))
    assert at.sidebar.pills(key="model").value == "trained-sample-char"
    assert "trained-sample-char" in picker_options(at)
    assert "It is now **trained-sample-char**" in texts(at, "success")
    assert any(m.label == "Validation loss" for m in at.metric)
    assert at.download_button(key="tr_download").proto.deferred_file_id
    ckpt = at.session_state[SESSION_MODELS]["trained-sample-char"]
    back = load_checkpoint_zip(checkpoint_to_zip(ckpt.model, ckpt.tokenizer, ckpt.card))
    assert back.card["steps"] == 30 and back.config == ckpt.config  # what the button downloads
    assert "After training (30 steps)" in texts(at, "markdown")
    assert not at.button(key="tr_start").disabled  # ready for another run


def test_stop_stops_and_keeps_the_model(at):
    configure(at, tr_steps=5000)
    at.button(key="tr_start").click().run()
    assert at.button(key="tr_start").disabled  # setup is locked while training
    assert choice_box(at, "tr_corpus@box").data["disabled"]
    assert at.segmented_control(key="tr_activation").disabled
    run_until(at, lambda a: "step " in " ".join(p.proto.text for p in a.get("progress")))
    at.button(key="tr_stop").click().run()
    run_until(at, lambda a: "Stopped after" in texts(a, "success"), timeout=15)
    assert "trained-sample-char" in picker_options(at)
    assert at.session_state[SESSION_MODELS]["trained-sample-char"].card["steps"] < 5000


def test_a_diverging_learning_rate_gets_a_message(at):
    configure(at, tr_learning_rate=100.0, tr_steps=300)
    at.button(key="tr_start").click().run()
    run_until(at, lambda a: "diverged" in texts(a, "error"))
    assert "Lower the learning rate" in texts(at, "error")
    assert not any(o.startswith("trained-") for o in picker_options(at))


def test_an_extra_trainer_waits_for_a_free_slot(at):
    configure(at)
    slots = trainer_slots()
    assert slots.acquire(threading.Event())  # another user's run holds the only slot
    try:
        at.button(key="tr_start").click().run()
        run_until(at, lambda a: "Waiting for a free trainer" in texts(a, "info"))
    finally:
        slots.release()
    run_until(at, lambda a: "Finished after" in texts(a, "success"))


def tiny_checkpoint_zip() -> bytes:
    tok = train_tokenizer("char", "abcabc")
    model = initial_model(GPTConfig(vocab_size=tok.vocab_size, context_length=8, d_model=8,
                                    n_layer=1, n_head=2), 0)
    return checkpoint_to_zip(model, tok, {"steps": 0})


def test_a_checkpoint_upload_becomes_selectable(at):
    checkpoint_uploader(at).upload("mine.zip", tiny_checkpoint_zip(),
                                                        "application/zip").run()
    assert not at.exception
    assert "mine" in picker_options(at) and at.sidebar.pills(key="model").value == "mine"
    assert at.download_button(key="tr_download").proto.label == "Download mine as a checkpoint zip"


def pickle_in_a_zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        good = zipfile.ZipFile(io.BytesIO(tiny_checkpoint_zip()))
        for name in ("config.json", "tokenizer.json"):
            zf.writestr(name, good.read(name))
        zf.writestr("model.safetensors", b"\x80\x04\x95" + b"cos\nsystem\n" * 10)  # a pickle
    return buffer.getvalue()


@pytest.mark.parametrize("data, message", [
    (b"not a zip at all", "not a .zip"),
    (pickle_in_a_zip(), "never unpickles"),
])
def test_bad_checkpoint_uploads_are_refused(at, data, message):
    checkpoint_uploader(at).upload("bad.zip", data, "application/zip").run()
    assert not at.exception
    assert message in " ".join(e.value for e in at.sidebar.error)
    assert "bad" not in picker_options(at)


@pytest.mark.parametrize("content, message", [
    (b"   ", "is empty"),
    ("Gödel".encode("latin-1") * 10, "not UTF-8"),
    (b"x" * (training_ui.CORPUS_UPLOAD_LIMIT + 1), "the limit is 2 MB"),
    (b"abc", "shorter than one window"),
])
def test_bad_corpus_uploads_are_explained(at, content, message):
    configure(at, tr_corpus="upload")
    at.file_uploader(key="tr_upload").upload("corpus.txt", content, "text/plain").run()
    assert not at.exception
    assert message in texts(at, "error")
    assert at.button(key="tr_start").disabled


@pytest.mark.parametrize("changes, message", [
    ({"tr_d_model": 512, "tr_n_layer": 12, "tr_n_head": 8}, "this server allows"),
    ({"tr_steps": 50_000}, "over this server's limit"),
    ({"tr_d_model": 16, "tr_n_head": 3}, "divisible by n_head"),
    ({"tr_context_length": 1024}, "shorter than one window"),
])
def test_bad_settings_are_explained_and_block_start(at, changes, message):
    configure(at, **changes)
    assert message in texts(at, "error")
    assert at.button(key="tr_start").disabled


def test_a_bpe_vocab_larger_than_the_corpus_allows_is_explained(at):
    configure(at, tr_tokenizer="bpe")  # its callback sets the vocab size to 512 ...
    at.number_input(key="tr_vocab_size").set_value(50_000).run()  # ... then ask for too many
    assert "supports a vocabulary of at most" in texts(at, "error")
    assert at.button(key="tr_start").disabled


def test_a_vocab_larger_than_the_corpus_is_explained_for_characters(at):
    configure(at, tr_vocab_size=5000)
    assert "this corpus has only" in texts(at, "info")
    assert not at.button(key="tr_start").disabled


def test_the_learning_rate_help_says_what_the_trainer_does(at):
    """w, η/(w+1), η and η_min in the help are the values lr_at takes for this setup."""
    from gptviz.train.plan import TrainingSpec, run_config
    from gptviz.train.trainer import lr_at

    text = at.select_slider(key="tr_learning_rate").help
    spec = TrainingSpec(steps=at.session_state["tr_steps"],
                        learning_rate=at.session_state["tr_learning_rate"])
    tc = run_config(spec, 256).train
    w = int(re.search(r"first w = (\d+) steps", text).group(1))
    start = float(re.search(r"from η/\d+ = ([\d.e-]+) at step 0", text).group(1))
    peak = float(re.search(r"The peak is η = ([\d.e-]+)\.", text).group(1))
    assert f"up to η at step {w}." in text
    floor = float(re.search(r"η_min = η/10 = ([\d.e-]+)", text).group(1))
    assert w == tc.warmup_steps == 3  # TINY: 30 steps
    assert start == pytest.approx(lr_at(0, tc), rel=1e-3)
    assert lr_at(w - 1, tc) < peak == pytest.approx(lr_at(w, tc))
    assert floor == pytest.approx(lr_at(tc.steps, tc)) and lr_at(tc.steps - 1, tc) > floor


def test_samples_of_a_bpe_model_show_unfinished_characters_as_bytes(at):
    """The untrained twin of mathematics-bpe writes stray bytes: ‹…›, never "�"."""
    at.sidebar.pills(key="model").set_value("mathematics-bpe")
    rerun(at)
    shown = text_blocks(at)
    assert len(shown) == 2 and not any("\ufffd" in s for s in shown)
    assert "‹" in shown[0]  # before training: random ids, many of them lone bytes
    assert "no whole UTF-8 character" in " ".join(c.value for c in at.caption)


def test_a_prompt_with_control_and_direction_characters_is_shown_escaped(at):
    """A U+202E in the prompt turned the rest of both samples around, and NUL or ESC showed
    as boxes: they are named, as on the token chips, while spaces and line breaks stay."""
    at.sidebar.pills(key="model").set_value("mathematics-bpe")
    rerun(at)
    at.text_area(key="tr_compare-mathematics-bpe").set_value("ab c\x00\x1b[31m\u202eevil\nx")
    rerun(at)
    shown = text_blocks(at)
    assert len(shown) == 2
    for text in shown:
        assert text.startswith("ab c\\x00\\x1b[31m⟨U+202E⟩evil\nx")
        assert not any(ch in text for ch in "\x00\x1b\u202e")


def test_a_100k_character_prompt_is_cut_with_a_message(at):
    """Both prompts on the page, the samples' and the before-and-after comparison's, are cut
    to the characters a page analyses, and each says so; the comparison is still drawn."""
    at.sidebar.pills(key="model").set_value("mathematics-char")
    rerun(at)
    at.text_area(key="tr_prompt-sample").set_value("to be " * 20_000)
    at.text_area(key="tr_compare-mathematics-char").set_value("x = " * 25_000)
    rerun(at)
    cut = [w.value for w in at.warning if "only the first 20,000 are used" in w.value]
    assert len(cut) == 2 and any("120,000" in w for w in cut) and any("100,000" in w for w in cut)
    assert len(text_blocks(at)) == 2  # before and after, continuing the cut prompt
