"""AppTest of our components.v2 elements: the same chart or heatmap drawn twice in one run is
two elements (st.markdown allowed that; an unkeyed component would be refused as a
duplicate), and both carry the data that was drawn."""

from __future__ import annotations

import json

from streamlit.testing.v1 import AppTest

from gptviz.app.shared import heatcanvas, svgbox


def _twice() -> None:
    import plotly.graph_objects as go
    import streamlit as st

    from gptviz.app.shared.svgplot import Series, line_chart
    from gptviz.app.shared.widgets import chart, plot

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
