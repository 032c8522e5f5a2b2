"""A select box's choice, set from code (``inputs.fresh_choice``), outlives a view change."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest


def _page() -> None:
    import streamlit as st

    from gptviz.app.shared.inputs import fresh_choice

    options = list(range(st.session_state.get("n", 6)))
    if st.session_state.get("show", True):  # the view that holds the box is open
        fresh_choice("pick", options, options[-1], st.session_state.get("prompt", "a"))
        st.selectbox("Token", options, key="pick")


def choice(at: AppTest) -> int:
    return at.selectbox(key="pick").value


def test_a_choice_comes_back_after_another_view():
    at = AppTest.from_function(_page, default_timeout=30).run()
    assert choice(at) == 5  # the default: the last token
    at.selectbox(key="pick").set_value(2).run()
    at.session_state["show"] = False
    at.run()  # another view: the box is not drawn, and Streamlit forgets its state
    assert "pick" not in at.session_state
    at.session_state["show"] = True
    at.run()
    assert choice(at) == 2


def test_a_new_prompt_or_a_shorter_one_brings_back_the_default():
    at = AppTest.from_function(_page, default_timeout=30).run()
    at.selectbox(key="pick").set_value(2).run()
    at.session_state["prompt"] = "b"
    at.run()
    assert choice(at) == 5  # a choice made on another prompt named another token
    at.selectbox(key="pick").set_value(4).run()
    at.session_state["show"] = False
    at.run()
    at.session_state["n"], at.session_state["show"] = 3, True
    at.run()
    assert choice(at) == 2  # the kept choice is out of range: the default of the new options
