"""AppTest of our components.v2 elements: the same chart or heatmap drawn twice in one run is
two elements (st.markdown allowed that; an unkeyed component would be refused as a
duplicate), and both carry the data that was drawn."""

from __future__ import annotations

import json

from streamlit.testing.v1 import AppTest

from gptviz.app.speedups import heatcanvas, svgbox


def _twice() -> None:
    import plotly.graph_objects as go
    import streamlit as st

    from gptviz.app.shared.widgets import chart, plot
    from gptviz.app.speedups.svgplot import Series, line_chart

    line = line_chart([Series("a", "line", [1, 2], [1.0, 2.0])], title="t", x_title="x",
                      y_title="y")
    heat = go.Figure(go.Heatmap(z=[[0.25, 0.5], [0.75, 1.0]]))
    left, right = st.columns(2)
    for where in (st, st, left, right):
        chart(line, container=where)
        plot(heat, container=where)
    chart(line, key="mine")
    st.write("drawn")


def test_the_same_chart_twice_is_two_elements_with_its_data():
    at = AppTest.from_function(_twice, default_timeout=60).run()
    assert not at.exception, at.exception
    mounted = [e for e in at._tree if e.type == "bidi_component"]
    names = [e.proto.component_name for e in mounted]
    assert names.count(svgbox.NAME) == 5 and names.count(heatcanvas.NAME) == 4
    htmls = {json.loads(e.proto.json)["html"] for e in mounted
             if e.proto.component_name == svgbox.NAME}
    assert len(htmls) == 1 and 'data-title="t"' in htmls.pop()
    zs = {json.dumps(json.loads(e.proto.json)["figure"]["data"][0]["z"], sort_keys=True)
          for e in mounted if e.proto.component_name == heatcanvas.NAME}
    assert len(zs) == 1
    assert at.markdown[-1].value == "drawn"


def test_in_stock_mode_both_are_plotly_charts_with_the_same_data(monkeypatch):
    monkeypatch.setenv("GPTVIZ_STOCK", "1")
    at = AppTest.from_function(_twice, default_timeout=60).run()
    assert not at.exception, at.exception
    assert not [e for e in at._tree if e.type == "bidi_component"]
    specs = [json.loads(e.proto.spec) for e in at._tree if e.type == "plotly_chart"]
    assert len(specs) == 9 and len({e.proto.id for e in at._tree
                                    if e.type == "plotly_chart"}) == 9
    lines = [s for s in specs if s["data"][0]["type"] == "scatter"]
    heats = [s for s in specs if s["data"][0]["type"] == "heatmap"]
    assert len(lines) == 5 and len(heats) == 4
    assert {tuple(s["data"][0]["y"]) for s in lines} == {(1.0, 2.0)}
    assert all(s["layout"]["title"]["text"] == "t" for s in lines)
    assert {json.dumps(s["data"][0]["z"], sort_keys=True) for s in heats} == {
        json.dumps(heats[0]["data"][0]["z"], sort_keys=True)}
