"""The shared pieces and the Positional, Embeddings and Tokenizers pages in the reader's
language (issue 41): titles, tabs and messages translated, ?view= kept in English, numbers
written as the language writes them (in prose, in formulas, in tables, on charts), CSV
exports in a plain machine format, and figures cached per language."""

from __future__ import annotations

import csv
import io

import numpy as np
import pandas as pd
import pytest

from gptviz import i18n
from gptviz.app.shared import tex
from gptviz.app.shared.figure_cache import cached_figure
from gptviz.app.shared.picker import Picked
from gptviz.app.shared.widgets import number_text
from gptviz.app.speedups import svgaxes
from gptviz.app.speedups.mount import separators
from gptviz.checkpoints.folder import Checkpoint
from tests.helpers import app_test, area_catalog, downloads, figures, rerun, svg_charts, tables

TITLES = {
    "tokenizers": {"es": "Tokenizadores", "zh": "分词器"},
    "positional": {"es": "Codificación posicional", "zh": "位置编码"},
    "embeddings": {"es": "Embeddings", "zh": "嵌入"},
}
TABS = {  # a view each page opens on, and what its tab reads
    "tokenizers": ("Compare", {"es": "Comparar", "zh": "比较"}),
    "positional": ("Sinusoidal formula", {"es": "Fórmula sinusoidal", "zh": "正弦公式"}),
    "embeddings": ("One-hot × E", {"es": "One-hot × E", "zh": "One-hot × E"}),
}


def page(name: str, **query: str):
    """The router opened on ``app_pages/<name>.py`` with ``query`` in the link."""
    at = app_test(**query)
    at.switch_page(f"app_pages/{name}.py")
    return rerun(at)


def tab_labels(at) -> list[str]:
    return [t.label for t in at.tabs]


# ---- numbers by language ------------------------------------------------------------------

def test_formulas_write_the_decimal_comma_in_spanish_and_keep_the_point_in_chinese():
    with i18n.use("es"):
        assert tex.num(0.25, 2) == "0{,}25"
        assert tex.vector([0.25, 1.5], digits=2) == r"(0{,}25;\ 1{,}50)"
        assert tex.grouped(50257) == "50.257" and tex.grouped(1234.5, 1) == "1.234{,}5"
        assert tex.addends([0.2153] * 3) == (["0{,}2153"] * 3, "0{,}646")
        assert tex.percent(0.2931) == "29,3\u00a0%" and tex.percent_tex(0.004) == r"0{,}4\,\%"
        assert tex.words("{n} de {k}", k="k") == r"\text{\{n\} de $k$}"
    with i18n.use("zh"):
        assert tex.num(0.25, 2) == "0.25" and tex.vector([1, 2], digits=0) == r"(1,\ 2)"
        assert tex.percent(0.2931) == "29.3%"
    assert tex.vector([0.25, 1.5], digits=2) == r"(0.25,\ 1.50)"  # English, as before


def test_the_spanish_terms_add_up_as_shown():
    """addends' promise (the terms as shown add up to the total as shown) holds when the
    numbers are written with a decimal comma."""
    rng = np.random.default_rng(0)
    with i18n.use("es"):
        for _ in range(200):
            values = rng.dirichlet(np.ones(5)).tolist()
            terms, total = tex.addends(values)
            back = [float(t.replace("{,}", ".")) for t in terms]
            assert f"{sum(back):.3f}".replace(".", "{,}") == total or \
                round(sum(back), 3) == float(total.replace("{,}", "."))


def test_tables_ticks_and_plotly_separators_follow_the_language():
    with i18n.use("es"):
        assert number_text(0.15634) == "0,1563" and number_text(-2e-7) == "-2,000e-07"
        assert svgaxes.tick_text(-0.6, 0.2) == "−0,6" and separators() == ",."
    with i18n.use("zh"):
        assert number_text(0.15634) == "0.1563" and separators() == ".,"
    assert number_text(0.15634) == "0.1563" and svgaxes.tick_text(-0.6, 0.2) == "−0.6"


def test_a_figure_cache_serves_each_language_its_own_figure():
    from gptviz.model import GPT, GPTConfig
    from gptviz.tokenizers.char import CharTokenizer

    tokenizer = CharTokenizer()
    tokenizer.train("abcdef")
    model = GPT(GPTConfig(vocab_size=tokenizer.vocab_size, context_length=8, d_model=16,
                          n_layer=1, n_head=2))
    picked = Picked("tiny-i18n", Checkpoint(model, tokenizer), bundled=True)

    def build():
        return {"title": i18n._("Embeddings")}

    with i18n.use("es"):
        es = cached_figure(picked, "i18n-probe", (1,), build)
    with i18n.use("zh"):
        zh = cached_figure(picked, "i18n-probe", (1,), build)
    en = cached_figure(picked, "i18n-probe", (1,), build)
    assert (es["title"], zh["title"], en["title"]) == ("Embeddings", "嵌入", "Embeddings")
    assert es is not zh and es is not en


# ---- the pages ----------------------------------------------------------------------------

@pytest.mark.parametrize("lang", ["es", "zh"])
@pytest.mark.parametrize("name", ["tokenizers", "positional", "embeddings"])
def test_each_page_speaks_the_sessions_language(name, lang):
    view, labels = TABS[name]
    at = page(name, lang=lang, view=view)
    assert at.title[0].value == TITLES[name][lang]
    assert labels[lang] in tab_labels(at)
    assert at.query_params["view"] == view  # the link keeps the view's English name
    english = page(name, view=view)
    assert english.title[0].value in ("Tokenizers", "Positional encoding", "Embeddings")
    assert view in tab_labels(english)


def test_spanish_tables_on_screen_and_csv_downloads_in_machine_format():
    at = page("tokenizers", lang="es", view="Compare")
    table = next(t.value for t in tables(at) if "caracteres por token" in t.value.columns)
    assert "Carácter" in list(table["tokenizador"])
    saved = next(d for d in downloads(at) if d.get("name") == "tokenizer-comparison.csv")
    assert saved["label"] == "Descargar CSV"
    rows = list(csv.reader(io.StringIO(saved["text"])))
    assert rows[0][:3] == ["tokenizer", "vocab size", "tokens"]  # English headers
    per_token = rows[0].index("chars per token")
    assert all("," not in r[per_token] and float(r[per_token]) > 0 for r in rows[1:])


def test_spanish_charts_carry_the_decimal_comma():
    at = page("positional", lang="es", view="Sinusoidal formula")
    figs = figures(at)
    assert figs and all(f["layout"].get("separators") == ",." for f in figs)
    charts = svg_charts(at)  # the curves below the fold: their ticks and hover text
    assert any("a lo largo de i" in t for t in charts)  # the curves' title
    assert any(any("," in m["title"] for m in marks) for marks in charts.values())
    english = figures(page("positional", view="Sinusoidal formula"))
    assert all(f["layout"].get("separators") in (None, ".,") for f in english)


def test_a_view_named_in_english_or_in_the_language_opens_it():
    """A lesson's link names the view in English; a test (or a session that switched
    language) may hold the English name in the tab's state: both open the view."""
    at = page("tokenizers", lang="zh", view="Decode")
    assert "解码" in tab_labels(at) and at.text_input(key="decode_ids")
    assert at.query_params["view"] == "Decode"
    at = page("tokenizers", lang="es")
    at.session_state["view"] = "Decode"
    rerun(at)
    assert at.text_input(key="decode_ids").label == "Ids de token (comas o espacios)"


def test_two_sessions_in_two_languages_each_see_their_own():
    es, zh = page("embeddings", lang="es"), page("embeddings", lang="zh")
    assert es.title[0].value == "Embeddings" and zh.title[0].value == "嵌入"
    assert any("Multiplicar la matriz one-hot" in c.value for c in es.caption)
    assert any("one-hot 矩阵" in c.value for c in zh.caption)
    assert not any("Multiplying the one-hot" in c.value for c in [*es.caption, *zh.caption])


def test_a_bad_upload_is_refused_in_the_readers_language():
    from gptviz.checkpoints.folder import CheckpointError, load_checkpoint_zip

    for lang, said in (("es", "no es un archivo .zip"), ("zh", "不是 .zip 文件"),
                       ("en", "is not a .zip file")):
        with i18n.use(lang), pytest.raises(CheckpointError, match=said):
            load_checkpoint_zip(b"not a zip at all")


def test_the_cut_prompt_and_its_table_headers_read_in_spanish():
    from gptviz.app.shared.chips import prompt_chips_html, token_table
    from gptviz.tokenizers.base import TokenInfo

    toks = [TokenInfo(i, c, c.encode(), (i, i + 1)) for i, c in enumerate("abcd")]
    with i18n.use("es"):
        html = prompt_chips_html(toks, "abcd", dropped=2)
        assert "✂ corte aquí: los 2 tokens de arriba" in html
    with i18n.use("es"):  # the table (and its CSV) keeps English headers and kinds
        df = token_table(toks, "abcd")
    assert list(df.columns)[1:] == ["id", "token", "bytes", "chars", "source text", "kind"]
    assert isinstance(df, pd.DataFrame) and set(df["kind"]) == {""}


VIEWS = {
    "tokenizers": ["Tokens", "Compare", "Decode", "BPE merges", "Across languages"],
    "positional": ["Sinusoidal formula", "This model's positions", "X + PE for the prompt",
                   "Order without positions", "Four encodings compared"],
    "embeddings": ["One-hot × E", "The vocabulary (PCA)", "Trained vs untrained"],
}


def english_sentences() -> set[str]:
    """The shared pieces' and three pages' English sentences that read differently in both
    languages (whole messages without placeholders: what a page shows as it is)."""
    folders = ("gptviz/app/shared/", "gptviz/app/speedups/", "gptviz/app/positional/",
               "gptviz/app/embeddings/", "gptviz/app/tokenizers/", "gptviz/checkpoints/",
               "gptviz/tokenizers/", "app_pages/")
    es, zh = area_catalog("es", *folders), area_catalog("zh", *folders)
    return {m for m in es if len(m) > 25 and "{" not in m and es[m] != m and zh.get(m, m) != m}


@pytest.mark.parametrize("lang", ["es", "zh"])
@pytest.mark.parametrize(("name", "view"), [(n, v) for n, vs in VIEWS.items() for v in vs])
def test_every_view_runs_in_the_language_with_no_english_sentence_left(name, view, lang):
    at = page(name, lang=lang, view=view)
    shown = " ".join(str(e.value) for kind in ("markdown", "caption", "info", "warning",
                                               "error", "success", "title", "subheader")
                     for e in getattr(at, kind))
    left = [s for s in english_sentences() if s in shown]
    assert not left, left


def test_a_broken_bundled_model_is_named_in_each_sessions_language(tmp_path, monkeypatch):
    """The bundled models are checked once per server; why one is broken is said in each
    session's language (a cache keyed by the model alone said it in the first one's)."""
    import shutil

    import gptviz.checkpoints.folder
    from gptviz.checkpoints.folder import DEFAULT_MODEL, bundled_models

    for name, folder in bundled_models().items():
        shutil.copytree(folder, tmp_path / name)
    broken = next(n for n in bundled_models() if n != DEFAULT_MODEL)
    (tmp_path / broken / "model.safetensors").write_bytes(b"not a safetensors file")
    monkeypatch.setattr(gptviz.checkpoints.folder, "MODELS_DIR", tmp_path)
    said = {}
    for lang in ("es", "zh", "en"):
        at = page("embeddings", lang=lang)
        said[lang] = " ".join(w.value for w in at.sidebar.warning)
    assert "Se omitió un modelo incluido dañado" in said["es"] and broken in said["es"]
    assert "跳过了一个损坏的自带模型" in said["zh"]
    assert "Skipped a broken bundled model" in said["en"]
    from gptviz.checkpoints.folder import CheckpointError, load_checkpoint
    for lang in ("es", "zh"):  # the loader's own sentence, in the session's language
        with i18n.use(lang), pytest.raises(CheckpointError) as refused:
            load_checkpoint(tmp_path / broken)
        assert str(refused.value) in said[lang]


def test_stock_mode_charts_carry_the_languages_separators(monkeypatch):
    """Without the speed-ups every chart is ``st.plotly_chart``: the SVG curves and the
    canvas heatmaps drawn by plotly.js take the language's separators too."""
    from gptviz.app.speedups import stock

    monkeypatch.setenv(stock.VARIABLE, "1")
    for lang, wanted in (("es", ",."), ("zh", ".,")):
        figs = figures(page("positional", lang=lang, view="Sinusoidal formula"))
        assert len(figs) >= 3 and all(f["layout"]["separators"] == wanted for f in figs)
