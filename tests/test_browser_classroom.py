"""A class in Chromium: the Join page on a phone (390×844) and the projector's live count
and histogram (1280×720), on a server of their own with a data folder of their own.
Students who are not the one in the browser answer through the store (the same SQLite
file), as other phones would. Screenshots: class-*.png in the artifacts folder.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from benchmarks.common import Server
from gptviz.classroom import codes
from gptviz.classroom.records import Pinned, Snapshot
from gptviz.classroom.sqlite import SQLiteStore
from tests.helpers import MODELS, check_no_exception, eventually, screenshot, wait_for_app

pytestmark = [pytest.mark.browser,
              pytest.mark.skipif("mathematics-char" not in MODELS, reason="no bundled model")]
ONES = Snapshot(3, "Ids → one-hot rows", "The one-hot matrix has one row per token (5) and one "
                "column per vocabulary entry (68). How many of its entries are **1**?",
                "choice", ("4", "5", "68", "340"), 1, why="Exactly one 1 per row: **5** ones.",
                key="ones")
PHONE = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The app on a server whose class store is in a folder of this module's."""
    data = tmp_path_factory.mktemp("class-data")
    before = os.environ.get("GPTVIZ_DATA")
    os.environ["GPTVIZ_DATA"] = str(data)
    try:
        server = Server(log="class-browser")
    finally:
        if before is None:
            os.environ.pop("GPTVIZ_DATA")
        else:
            os.environ["GPTVIZ_DATA"] = before
    store = SQLiteStore(data / "classes.sqlite3")
    yield server.url, store
    store.close()
    server.stop()


def others_answer(store: SQLiteStore, code: str, values: list[float]) -> None:
    question = store.get(code).question
    for v in values:
        s = codes.new_student_id()
        store.join(code, s, None, "phone")
        store.answer(code, s, question, v, "phone")


def test_the_join_page_on_a_phone(browser, served):
    url, store = served
    info, token = store.create(Pinned("mathematics-char", "p", {"steps": 14}), "teacher")
    code = info.code
    store.open_step(code, token, 3, ONES)
    context = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    page = context.new_page()
    page.goto(f"{url}/join?code={code}")
    wait_for_app(page)
    check_no_exception(page, "join")
    assert page.get_by_role("textbox", name="The code on the projector").input_value() == code
    assert not page.get_by_test_id("stSidebar").is_visible()
    page.get_by_role("textbox", name="A nickname (optional)").fill("<b>Ada</b>")
    screenshot(page, "class-join-form-390")
    page.get_by_role("button", name="Join").click()
    page.get_by_text("How many of its entries are").wait_for()
    wait_for_app(page)
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    assert page.get_by_text(f"Class {code} · step 3 of 14").is_visible()
    assert page.get_by_role("heading", name="Ids → one-hot rows").is_visible()
    send = page.get_by_role("button", name="Send")
    box = send.bounding_box()
    assert box["y"] + box["height"] <= PHONE["height"], "Send is below the first screen"
    page.get_by_text("5", exact=True).click()
    send.click()
    page.get_by_text("Sent: 5.").wait_for()
    screenshot(page, "class-join-sent-390")
    assert store.tally(code, 1).counts == (0, 1, 0, 0)
    assert [s.nickname for s in store.students(code, token)] == ["<b>Ada</b>"]
    page.reload()  # a phone that slept: the same student, the same answer
    page.get_by_text("Sent: 5").wait_for()
    assert store.joined(code) == 1
    store.reveal(code, token)  # the page follows within a poll or two
    page.get_by_text("is the model's").wait_for(timeout=5000)
    assert page.get_by_text("Exactly one 1 per row").is_visible()
    screenshot(page, "class-join-revealed-390")
    store.open_step(code, token, 4, None, title="One-hot rows → embedding rows")
    page.get_by_text("No question at this step").wait_for(timeout=5000)
    check_no_exception(page, "join, followed")
    context.close()


def test_the_projector_counts_live_and_shows_the_histogram(browser, served):
    url, store = served
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    page.goto(f"{url}/lesson?model=mathematics-char&presenter=true&step=3")
    wait_for_app(page)
    page.get_by_role("button", name="Start a class").click()
    code_box = page.locator(".gv-class-code")
    code_box.wait_for()
    wait_for_app(page)
    code = code_box.get_attribute("data-code")
    assert re.fullmatch(f"[{codes.ALPHABET}]{{6}}", code)
    screenshot(page, "class-projector-start-1280")
    qr = page.locator("img.gv-qr")
    assert qr.count() >= 1 and qr.first.bounding_box()["width"] >= 140
    qr_url = qr.first.get_attribute("title")
    assert qr_url.endswith(f"/join?code={code}")
    cookie = {c["name"]: c["value"] for c in context.cookies()}["gptviz_teacher"]
    assert cookie.startswith(code + ".")
    assert cookie.split(".", 1)[1] not in page.content()  # nowhere on the page
    count = page.locator(".gv-class-count")
    assert count.get_attribute("data-answered") == "0"
    others_answer(store, code, [1, 1, 0, 3])
    assert eventually(lambda: count.get_attribute("data-answered") == "4", timeout_s=4,
                      every_s=0.1), "the count did not follow within 4 s"
    assert "4 of 4 answered" in count.inner_text()
    screenshot(page, "class-projector-count-1280")
    page.keyboard.press("r")  # the lesson's Reveal reveals to the class
    bars = page.locator('.st-key-class_bar [data-testid="stPlotlyChart"] .main-svg')
    bars.first.wait_for()
    wait_for_app(page)
    assert store.get(code).phase == "revealed"
    assert page.locator(".st-key-class_bar").get_by_text("chose the model's answer").count()
    screenshot(page, "class-projector-histogram-1280")
    page.keyboard.press("ArrowRight")
    wait_for_app(page)
    assert store.get(code).step == 4
    page.reload()  # the teacher's tab reloaded: the class comes back from the cookie
    page.locator(".gv-class-code").wait_for()
    wait_for_app(page)
    assert page.locator(".gv-class-code").get_attribute("data-code") == code
    page.goto(f"{url}/lesson?model=mathematics-char&presenter=true&step=11")
    wait_for_app(page)
    page.get_by_text("Ask for a number").click()
    wait_for_app(page)
    assert page.get_by_text("Guess first").is_visible()
    others_answer(store, code, [5.0, 30.0, 35.0, 40.0, 90.0])
    assert eventually(lambda: count.get_attribute("data-answered") == "5", timeout_s=4,
                      every_s=0.1)
    page.keyboard.press("r")
    page.get_by_text("class median").first.wait_for()
    wait_for_app(page)
    screenshot(page, "class-projector-spread-1280")
    check_no_exception(page, "projector")
    projector_url = page.url
    with page.expect_download() as saved:  # "Teacher link": the private link, saved
        page.get_by_role("button", name="Teacher link").click()
    link = Path(saved.value.path()).read_text().strip()
    assert link.endswith(f"#teacher={cookie}") and cookie.split(".", 1)[1] not in page.content()
    context.close()
    other = browser.new_context(viewport={"width": 1280, "height": 720})  # another laptop
    page = other.new_page()
    page.goto(link)
    page.locator(".gv-class-code").wait_for(timeout=60_000)  # the teacher link's key, kept
    wait_for_app(page)
    assert page.locator(".gv-class-code").get_attribute("data-code") == code
    assert "#" not in page.url and "teacher" not in page.url  # gone from the address bar
    assert {c["name"]: c["value"] for c in other.cookies()}["gptviz_teacher"] == cookie
    step = store.get(code).step
    page.keyboard.press("ArrowRight")  # the controls are back: the class follows
    wait_for_app(page)
    assert eventually(lambda: store.get(code).step == step + 1, timeout_s=10, every_s=0.2)
    other.close()
    stranger = browser.new_context(viewport={"width": 1280, "height": 720})
    page = stranger.new_page()  # the projector's own address, without the private link
    page.goto(projector_url)
    wait_for_app(page)
    assert page.get_by_role("button", name="Start a class").count() == 1
    assert page.locator(".gv-class-code").count() == 0
    page.goto(url + qr_url[qr_url.index("/join"):])  # the QR code's link (the LAN address
    # in it, here this server's): the Join page, a student's, with no control
    wait_for_app(page)
    assert page.get_by_role("button", name="Join").count() == 1
    assert "gptviz_teacher" not in {c["name"] for c in stranger.cookies()}
    stranger.close()
