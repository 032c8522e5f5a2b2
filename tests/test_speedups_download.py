"""CSV buttons that carry their file (``download.download_text``): the exact table text,
and Streamlit's own button for a file too large to travel with every rerun."""

from __future__ import annotations

import io

import pandas as pd
from streamlit.testing.v1 import AppTest

from gptviz.app.speedups.download import INLINE_MAX
from tests.helpers import downloads


def _page() -> None:
    import pandas as pd
    import streamlit as st

    from gptviz.app.shared.widgets import csv_download

    rows = st.session_state.get("rows", 3)
    df = pd.DataFrame({"token": [f"t{i}, \"q\"" for i in range(rows)], "p": [0.125] * rows})
    csv_download(df, "table.csv")


def test_a_small_table_travels_with_its_button_as_the_exact_csv():
    at = AppTest.from_function(_page, default_timeout=30).run()
    (button,) = downloads(at)
    assert button["label"] == "Download CSV" and button["name"] == "table.csv"
    assert button["mime"] == "text/csv" and not at.get("download_button")
    back = pd.read_csv(io.StringIO(button["text"]))
    assert back["token"].tolist() == ['t0, "q"', 't1, "q"', 't2, "q"']  # quoting kept
    assert back["p"].tolist() == [0.125] * 3


def test_a_large_table_keeps_streamlits_button():
    at = AppTest.from_function(_page, default_timeout=30)
    at.session_state["rows"] = INLINE_MAX // 10  # ~20 characters a row: over the limit
    at.run()
    assert downloads(at) == [{"label": "Download CSV"}]  # Streamlit's, no text carried
    assert at.get("download_button")[0].proto.label == "Download CSV"


def test_in_stock_mode_every_table_gets_streamlits_button(monkeypatch):
    monkeypatch.setenv("GPTVIZ_STOCK", "download")
    at = AppTest.from_function(_page, default_timeout=30).run()
    (button,) = at.get("download_button")
    assert downloads(at) == [{"label": "Download CSV"}] and button.proto.label == "Download CSV"
