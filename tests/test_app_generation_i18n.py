"""The Generation and Training pages in Spanish and Chinese (issue 41): every view runs in
each language and shows the catalog's words, no English message of the pages' catalog is
left on them, their formulas stay valid KaTeX, CSV exports keep their English headers, and
the messages made away from the reader (a training job's thread, the exact search's result
shared by every session) are worded in each reader's own language when read."""

from __future__ import annotations

import re
import threading
import time

import pytest
import streamlit as st

from gptviz import i18n
from gptviz.app.generation import formulas as tex
from gptviz.app.generation.figures import history_table
from gptviz.app.generation.view import VIEWS
from gptviz.app.training.formulas import cross_entropy_latex, perplexity_latex
from gptviz.generation.exact import KEPT, Exact
from gptviz.i18n import _, pgettext
from gptviz.tokenizers import train_tokenizer
from gptviz.train.plan import TrainingSpec, run_config
from gptviz.train.slots import TrainerSlots
from tests.helpers import app_test, area_catalog, rerun, run_page
from tests.test_tex import katex_errors

LANGS = ["es", "zh"]
TINY = {"tr_corpus": "sample", "tr_d_model": 16, "tr_n_layer": 1, "tr_n_head": 2,
        "tr_context_length": 16, "tr_steps": 30, "tr_batch_size": 4}


def catalog(lang: str) -> dict[str, str]:
    """msgid -> translation of the pages' own messages (singular ones)."""
    return area_catalog(lang, "gptviz/app/generation/", "gptviz/app/training/",
                        "gptviz/generation/", "gptviz/train/", "app_pages/")


def shown_texts(at) -> list[str]:
    """What a reader reads on the page: text elements, widget labels and help (but the
    shared prompt box's, which the shared widgets' catalog words)."""
    out = []
    for kind in ("title", "header", "markdown", "caption", "info", "warning", "error",
                 "success", "latex"):
        out += [str(e.value) for e in getattr(at, kind)]
    for kind in ("button", "slider", "number_input", "selectbox", "select_slider", "text_area",
                 "segmented_control", "metric", "toggle", "pills"):
        for e in getattr(at, kind, []):
            if str(getattr(e, "key", None)).startswith("prompt@"):
                continue
            out += [x for x in (getattr(e, "label", None), getattr(e, "help", None)) if x]
    return out


def in_lang(lang: str, message: str) -> str:
    with i18n.use(lang):
        return _(message)


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("view", list(VIEWS))
def test_every_generation_view_reads_in_the_language(lang, view):
    at = run_page("generation", lang=lang, view=view)
    assert [t.value for t in at.title] == [in_lang(lang, "Generation")]
    labels = [b.label for b in at.button]
    for message in ("Generate n", "Stop", "Undo", "Reset"):
        assert in_lang(lang, message) in labels and message not in labels
    assert at.slider(key="temperature").label == in_lang(lang, "Temperature T")
    left = untranslated(at, lang)
    assert not left, left


def training_page(lang: str):
    """The Training page through the router (its last section links to other pages), on a
    tiny setup, in ``lang``."""
    at = app_test(lang=lang)
    at.switch_page("app_pages/training.py")
    for key, value in TINY.items():
        at.session_state[key] = value
    return rerun(at)


@pytest.fixture
def stop_trainers():
    yield
    st.cache_resource.clear()  # releases the session's trainer: its thread stops
    for thread in threading.enumerate():
        if thread.name == "gptviz-training":
            thread.join(10)


@pytest.mark.parametrize("lang", LANGS)
def test_the_training_page_reads_in_the_language(lang, stop_trainers):
    at = training_page(lang)
    assert [t.value for t in at.title] == [in_lang(lang, "Training")]
    headers = [h.value for h in at.header]
    assert headers == [in_lang(lang, h) for h in ("1. Setup", "2. The data and the loss",
                                                 "3. Train", "4. Afterwards")]
    assert at.button(key="tr_start").label == in_lang(lang, "Start training")
    assert in_lang(lang, "30-second demo") in [b.label for b in at.button]
    left = untranslated(at, lang)
    assert not left, left
    at.button(key="tr_start").click()
    deadline = time.monotonic() + 60
    while not at.success:
        assert time.monotonic() < deadline, "the run did not finish"
        time.sleep(0.2)
        rerun(at)
    done = in_lang(lang, "Finished after {n} step: validation loss {loss} (perplexity {ppl}).")
    assert at.success[0].value.startswith(done.split("{")[0]), at.success[0].value
    left = untranslated(at, lang)
    assert not left, left


def untranslated(at, lang: str) -> list[str]:
    """English messages of the pages' catalog found on the page: a text that is one of them,
    or holds a long one (whole sentences; short words like "step" occur inside others)."""
    words = catalog(lang)
    english = {m for m, t in words.items() if t != m and "{" not in m}
    long = [m for m in english if len(m) > 30]
    found = []
    for text in shown_texts(at):
        if text in english or any(m in text for m in long):
            found.append(text[:80])
    return found


def test_two_sessions_each_see_their_own_language():
    es, zh = run_page("generation", lang="es"), run_page("generation", lang="zh")
    for _round in range(2):
        rerun(es)
        rerun(zh)
        assert [t.value for t in es.title] == ["Generación"]
        assert [t.value for t in zh.title] == ["生成"]
        assert es.slider(key="temperature").label == "Temperatura T"
        assert zh.slider(key="temperature").label == "温度 T"


@pytest.mark.parametrize("lang", LANGS)
def test_the_history_table_is_translated_on_screen_and_english_in_the_csv(lang):
    at = run_page("generation", lang=lang, view="History")
    at.number_input(key="gen_n").set_value(3).run()
    at.button(key="gen_run").click()
    rerun(at)
    shown = at.dataframe[0].value
    english = history_table(["a"], ["b"], [0.5], [0.1], ["x"], [0])
    with i18n.use(lang):  # the step of a run has its own word (zh: 步, a lesson's 步骤)
        want = [pgettext("run step", c) if c == "step" else _(c) for c in english.columns]
    assert list(shown.columns) == want
    assert list(shown.columns) != list(english.columns)
    assert list(english.columns) == ["step", "context (end)", "chosen", "P(chosen)",
                                     "entropy (nats)", "settings", "cut tokens"]


def test_csv_exports_keep_english_headers():
    """The page's download holds the table before it is translated (machine format)."""
    df = history_table(["a"], ["b"], [0.5], [0.1], ["T = 1 · seed 0"], [0])
    with i18n.use("es"):
        csv = df.to_csv(index=False)
    assert csv.splitlines()[0] == "step,context (end),chosen,P(chosen),entropy (nats),settings," \
                                  "cut tokens"
    assert "0.5" in csv


def test_the_exact_searchs_reason_is_worded_when_read():
    """One result, cached for every session, tells each reader why in their language."""
    found = Exact(None, None, 0, 7, KEPT, (("n", 20_000),), capped=True)
    assert found.reason == "the search reached its cap of 20,000 prefixes kept"
    with i18n.use("es"):
        assert found.reason == "la búsqueda alcanzó su límite de 20.000 prefijos conservados"
    with i18n.use("zh"):
        assert found.reason == "搜索达到了保留 20,000 个前缀的上限"
    assert not found.checked


def test_a_training_jobs_outcome_is_worded_in_the_readers_language():
    """The thread that trains has no reader: its outcome is put in words when read."""
    text = "the cat sat on the mat. the dog sat on the log. " * 30
    tok = train_tokenizer("char", text)
    spec = TrainingSpec(corpus="test", d_model=16, n_layer=1, n_head=2, context_length=16,
                        steps=6, batch_size=4, learning_rate=3e-3)
    from gptviz.train.jobs import TrainingJob

    job = TrainingJob(run_config(spec, tok.vocab_size, "float32"), tok.encode(text), tok,
                      slots=TrainerSlots(1), prompt="the ", card={"name": "t"}, sample_tokens=4)
    job.start()
    assert job.join(60)
    snap = job.snapshot()
    assert snap.status == "done" and snap.message.startswith("Finished after 6 steps")
    loss = re.search(r"validation loss (\d+\.\d{3})", snap.message).group(1)
    with i18n.use("es"):
        assert snap.message.startswith("Terminado tras 6 pasos")
        assert loss.replace(".", ",") in snap.message  # the decimal comma
    with i18n.use("zh"):
        assert snap.message.startswith("训练 6 步后完成") and loss in snap.message


def _formulas() -> list[str]:
    """Every formula of the two pages with words in it, on each of its branches."""
    return [
        tex.pt_formula("a", 3, 1.0, 0.0, 0.0, 1.0, 5, 5),
        tex.pt_formula("a", 3, 1.0, 1.0, 1.5, 0.6065, 5, 5),
        tex.pt_formula("a", 3, 1.0, 1.0, 1.5, 0.6065, 2, 5, 1.6, min_p=0.1, p_max=0.5),
        tex.entropy_formula(0.6931, "P'"),
        tex.beam_score_formula([-0.5, -1.0, -0.25, -2.0, -1.0, -0.1, -0.3], -5.15, 0, 3, 50257),
        tex.greedy_vs_beam(-5.0, -3.0, 4, best_line=tex.beam_vs_best(-3.0, 4, -3.0)),
        tex.greedy_vs_beam(-3.0, -3.0, 4, best_line=tex.beam_vs_best(-3.0, 4, None)),
        tex.greedy_vs_beam(-2.0, -9.0, 2, pruned_at=2, best_line=tex.beam_vs_best(
            -9.0, 2, -1.5, "↵↵Let $M$ {x}_1 50%", 3)),
        tex.beam_vs_best(-4.0, 3, -4.0, "tie"),
        cross_entropy_latex(107), cross_entropy_latex(107, 2.5, 300),
        perplexity_latex(100), perplexity_latex(100, 2.0),
    ]


@pytest.mark.parametrize("lang", ["en", *LANGS])
def test_formulas_stay_valid_katex_in_every_language(lang):
    with i18n.use(lang):
        formulas = _formulas()
    if lang != "en":  # the words are the catalog's
        assert in_lang(lang, "equally likely tokens") in formulas[3]
        assert in_lang(lang, "not checked") in formulas[6]
    assert katex_errors(formulas) == []


def test_presets_and_views_keep_english_keys():
    """Links (?view=) and widget keys never change with the language."""
    with i18n.use("zh"):
        assert list(VIEWS)[0] == "This step"
        from gptviz.train.plan import PRESETS

        assert "30-second demo" in PRESETS
