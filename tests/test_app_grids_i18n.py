"""Data grids write their numbers as the session's language does (issue 41): a
``NumberColumn`` format such as "%.4f" is drawn by Streamlit in the browser's locale, a
printf one always with the decimal point, so the pages write those cells themselves
(``widgets.data_grid``): 0,1235 beside the decimal comma of the prose in Spanish, as are the
floats of a grid that has no format for them. The grid keeps the numbers (it sorts them as
numbers) and CSV downloads stay in a machine format."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from gptviz import i18n
from tests.helpers import app_test, rerun, tables

# A view of each page that shows a grid with formatted numbers: printf ("%.4f", "%+.2e"),
# "localized" counts and a table with an index (Across languages).
GRIDS = [("tokenizers", "Compare"), ("tokenizers", "Across languages"),
         ("attention", "Head ablation"), ("block", "LayerNorm"), ("block", "Parameters"),
         ("block", "Direct logit attribution"), ("positional", "Order without positions"),
         ("positional", "X + PE for the prompt"), ("embeddings", "Trained vs untrained"),
         ("learning", "Gradient check")]
# Views with a grid of floats that have no format of their own: Streamlit's default writes
# them with the point (0.1235) whatever the language.
PLAIN = [("attention", "OV circuit"), ("attention", "Head taxonomy"),
         ("block", "Residual stream and logit lens")]


def page(name: str, lang: str, view: str):
    at = app_test(lang=lang, view=view)
    at.switch_page(f"app_pages/{name}.py")
    return rerun(at)


def read_back(text: str, lang: str) -> tuple[float, float]:
    """A cell's text as a number in ``lang``'s notation, and half its last digit's worth
    (what rounding to the shown digits may have moved it by)."""
    with i18n.use(lang):
        dec, group = i18n.separators()
    text = text.replace("\u00a0", "")
    share = text.endswith("%")
    plain = text.rstrip("%").replace(group, "").replace(dec, ".")
    mantissa, _e, exp = plain.partition("e")
    digits = len(mantissa.partition(".")[2])
    half = 0.5 * 10.0 ** (int(exp or 0) - digits)
    value = float(plain)
    return (value / 100, half / 100) if share else (value, half)


@pytest.mark.parametrize(("name", "view", "lang"), [(n, v, lang) for n, v in GRIDS
                                                   for lang in ("es", "en")]
                         + [(n, v, "es") for n, v in PLAIN])
def test_a_grids_numbers_are_written_in_the_sessions_language(name, view, lang):
    at = page(name, lang, view)
    assert not at.exception, at.exception[0].value if at.exception else ""
    grids = [t for t in tables(at) if t.value.select_dtypes("number").shape[1]]
    assert grids, f"{name} / {view}: no grid with numbers"
    for t in grids:
        assert t.shown is not None, f"{name} / {view}: {list(t.value.columns)} written by " \
                                    "the browser's locale"
        for c in t.value.select_dtypes("number").columns:
            for v, text in zip(t.value[c], t.shown[c], strict=True):
                if isinstance(v, float) and math.isnan(v):
                    continue
                read, half = read_back(str(text), lang)
                assert abs(read - v) <= half + 1e-12 * abs(v), (name, view, c, v, text)
                if lang == "es" and pd.api.types.is_float_dtype(t.value[c]) and abs(v) < 1000:
                    assert "." not in str(text), (name, view, c, text)  # 0,1235, not 0.1235
