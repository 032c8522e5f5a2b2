"""Plotly's validator table read per entry (gptviz/app/speedups/validators.py): every entry
is what ``json.load`` of the whole file gives, and figures come out byte for byte the same."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import plotly
import pytest

from gptviz.app.speedups.validators import LazyTable

PLOTLY_TABLE = Path(plotly.__file__).parent / "validators" / "_validators.json"


def test_every_entry_of_plotlys_table_parses_as_json_load_does():
    whole = json.loads(PLOTLY_TABLE.read_text())
    lazy = LazyTable(PLOTLY_TABLE)
    assert len(lazy) == len(whole) > 10_000
    for key, value in whole.items():
        assert lazy.get(key) == value, key
    assert lazy.get("no.such.entry") is None and "no.such.entry" not in lazy
    with pytest.raises(KeyError):
        lazy["no.such.entry"]


def test_nested_keys_escapes_and_the_last_entry(tmp_path):
    table = {"a": {"params": {"b": {"c": 1}}, "superclass": "X"},
             'q"uote\\d': {"params": {"text": 'x\n    "fake": 2'}},
             "last": [1, 2]}
    path = tmp_path / "t.json"
    path.write_text(json.dumps(table, indent=4))
    lazy = LazyTable(path)
    assert sorted(lazy.spans) == sorted(table)
    assert {k: lazy[k] for k in table} == table
    assert lazy.get("a") is not lazy.get("a")  # fresh each time: updating one is harmless


FIGURE = """
import json, sys
import streamlit  # parses plotly's table (its theme), as in the server
import plotly.graph_objects as go
from gptviz.app.speedups.validators import lean_validators
swapped = lean_validators() if sys.argv[1] == "lean" else False
fig = go.Figure(go.Heatmap(z=[[1, 2], [3, 4]], hovertemplate="%{z}", colorscale="RdBu"))
fig.add_scatter(x=[1, 2], y=[3, 4], mode="lines+markers", marker=dict(size=3))
fig.update_layout(template="streamlit", title="t", xaxis=dict(side="top"), height=300)
fig.update_yaxes(autorange="reversed", ticktext=["a", "b"], tickvals=[0, 1])
print(json.dumps([swapped, fig.to_json()]))
"""


def test_figures_are_the_same_with_the_lazy_table():
    root = Path(__file__).resolve().parents[1]
    out = {mode: json.loads(subprocess.run([sys.executable, "-c", FIGURE, mode], cwd=root,
                                           capture_output=True, text=True, check=True).stdout)
           for mode in ("whole", "lean")}
    assert out["lean"][0] is True and out["whole"][0] is False
    assert out["lean"][1] == out["whole"][1]
