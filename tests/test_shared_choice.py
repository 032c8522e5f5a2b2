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


# ---- the native box (``choice.choose``) that the position inputs use --------------------

def _native() -> None:
    import streamlit as st

    from gptviz.app.shared.choice import choose

    n = st.session_state.get("n", 6)
    if st.session_state.get("show", True):
        st.session_state["got"] = choose("Token", [f"{i}: t{i}" for i in range(n)], n - 1,
                                         "box", made_on=st.session_state.get("prompt", "a"))


def _box(at: AppTest):
    from tests.helpers import choice_box

    return choice_box(at, "box")


def test_the_native_box_shows_and_returns_the_readers_pick():
    at = AppTest.from_function(_native, default_timeout=30).run()
    box = _box(at)
    assert box.value == 5 == at.session_state["got"]  # the default: the last option
    assert box.options == [f"{i}: t{i}" for i in range(6)]
    box.set_value(2).run()
    assert _box(at).value == 2 == at.session_state["got"]  # what is shown is what is used


def test_the_native_box_keeps_a_pick_across_a_view_and_drops_one_made_on_other_options():
    at = AppTest.from_function(_native, default_timeout=30).run()
    _box(at).set_value(2).run()
    at.session_state["show"] = False
    at.run()  # another view: the box is not drawn
    at.session_state["show"] = True
    at.run()
    assert _box(at).value == 2  # brought back
    at.session_state["prompt"] = "b"
    at.run()
    assert _box(at).value == 5  # a pick made on another prompt named another token
    _box(at).set_value(4).run()
    at.session_state["n"] = 3
    at.run()
    assert _box(at).value == 2  # out of range among fewer options: the default of the new
    stale = {"pick": {"index": 1, "stamp": "not this prompt", "n": -1}}
    at.session_state["box"] = stale
    at.run()
    assert _box(at).value == 2 == at.session_state["got"]


def test_a_used_pick_never_comes_back():
    """A review found the browser's last pick, still in the box's state, taking over again:
    when the options grew back to hold it, and when its prompt came back (A, B, A)."""
    at = AppTest.from_function(_native, default_timeout=30).run()
    _box(at).set_value(4).run()
    at.session_state["n"] = 3
    at.run()
    assert _box(at).value == 2  # out of range: the default
    at.session_state["n"] = 6
    at.run()
    assert _box(at).value == 2  # stays there, as a select box did
    _box(at).set_value(1).run()
    at.session_state["prompt"] = "b"
    at.run()
    assert _box(at).value == 5
    at.session_state["prompt"] = "a"
    at.run()
    assert _box(at).value == 5 == at.session_state["got"]  # a new prompt: the default
    _box(at).set_value(1).run()
    assert _box(at).value == 1  # the same option picked again is a new pick
