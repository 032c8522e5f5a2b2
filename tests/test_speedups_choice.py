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

    from gptviz.app.speedups.choice import choose

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


# ---- a box bound to a session-state value (``choice.select``), as Training's corpus ------

def _bound() -> None:
    import streamlit as st

    from gptviz.app.speedups.choice import select

    def preset():
        st.session_state["corpus"] = "c"

    st.button("Preset", on_click=preset, key="preset")
    options = st.session_state.get("options", ["a", "b", "c"])
    if st.session_state.get("show", True):
        st.session_state["got"] = select("Corpus", options, "corpus", format_func=str.upper,
                                         disabled=st.session_state.get("locked", False))


def _corpus_box(at: AppTest):
    from tests.helpers import choice_box

    return choice_box(at, "corpus@box")


def test_a_bound_box_shows_the_value_and_a_pick_or_a_callback_sets_it():
    at = AppTest.from_function(_bound, default_timeout=30).run()
    box = _corpus_box(at)
    assert (box.options, box.value, at.session_state["got"]) == (["A", "B", "C"], 0, "a")
    box.set_value(1).run()
    assert at.session_state["corpus"] == "b" == at.session_state["got"]
    assert _corpus_box(at).value == 1
    at.button(key="preset").click().run()
    assert _corpus_box(at).value == 2 == ["a", "b", "c"].index(at.session_state["got"])
    at.session_state["show"] = False
    at.run()  # another page: the value stays, as persist_state="session" kept a widget's
    at.session_state["show"] = True
    at.run()
    assert at.session_state["got"] == "c"


def test_a_disabled_bound_box_ignores_picks_and_a_value_gone_falls_to_the_first():
    at = AppTest.from_function(_bound, default_timeout=30).run()
    at.session_state["locked"] = True
    at.run()
    box = _corpus_box(at)
    assert box.data["disabled"]
    box.set_value(2).run()
    assert at.session_state["got"] == "a" and _corpus_box(at).value == 0
    at.session_state["locked"] = False
    at.run()
    assert at.session_state["got"] == "a"  # the pick made while locked was used up
    _corpus_box(at).set_value(1).run()
    at.session_state["options"] = ["x", "a"]
    at.run()
    assert at.session_state["got"] == "x"  # "b" is no longer offered
    _corpus_box(at).set_value(1).run()
    assert at.session_state["got"] == "a"


# ---- stock mode (GPTVIZ_STOCK=choice): Streamlit's select box, the same rules -------------

def test_the_stock_box_is_a_select_box_with_the_same_rules(monkeypatch):
    monkeypatch.setenv("GPTVIZ_STOCK", "choice")
    at = AppTest.from_function(_native, default_timeout=30).run()
    assert not [e for e in at._tree if e.type == "bidi_component"]

    def shown() -> int:
        box = at.selectbox(key="box")
        assert box.options == [f"{i}: t{i}" for i in range(len(box.options))]
        return box.value

    assert shown() == 5 == at.session_state["got"]
    at.selectbox(key="box").set_value(2).run()
    assert shown() == 2 == at.session_state["got"]
    at.session_state["show"] = False
    at.run()
    at.session_state["show"] = True
    at.run()
    assert shown() == 2  # brought back after another view
    at.session_state["prompt"] = "b"
    at.run()
    assert shown() == 5  # chosen on another prompt
    at.selectbox(key="box").set_value(4).run()
    at.session_state["n"] = 3
    at.run()
    assert shown() == 2 == at.session_state["got"]  # out of range: the default
    at.session_state["n"] = 6
    at.run()
    assert shown() == 2  # stays there
    at.session_state["prompt"] = "a"
    at.run()
    assert shown() == 5 == at.session_state["got"]


def test_the_stock_bound_box_is_a_select_box_a_preset_sets(monkeypatch):
    monkeypatch.setenv("GPTVIZ_STOCK", "1")
    at = AppTest.from_function(_bound, default_timeout=30).run()
    box = at.selectbox(key="corpus")
    assert (box.options, box.value, at.session_state["got"]) == (["A", "B", "C"], "a", "a")
    box.set_value("b").run()
    assert at.session_state["got"] == "b"
    at.button(key="preset").click().run()
    assert at.selectbox(key="corpus").value == "c" == at.session_state["got"]
    at.session_state["show"] = False
    at.run()
    at.session_state["show"] = True
    at.run()
    assert at.session_state["got"] == "c"
    at.session_state["locked"] = True
    at.run()
    assert at.selectbox(key="corpus").disabled
    at.session_state["options"] = ["x", "a"]
    at.run()
    assert at.session_state["got"] == "x"  # "c" is no longer offered
