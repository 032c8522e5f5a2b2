"""A server patch that no longer fits switches itself off with one log line, and the page
works without it (``gptviz/app/speedups/guard.py``): each mismatch faked, then the router
run in AppTest.

A private name is removed where removing it leaves Streamlit and plotly working (their
server code, which AppTest does not run). The prefetch's "name" is a file, so for it the
guard is shown a folder that is not there.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import logging
import re

import pytest
import streamlit
from starlette.staticfiles import StaticFiles

from gptviz.app import speedups
from gptviz.app.speedups import base_url, fonts, guard, prefetch, sockets, stock
from tests.helpers import ROOT, app_test, rerun

ROUTES = importlib.import_module(base_url.ROUTES)
SERVER = importlib.import_module("streamlit.web.server.starlette.starlette_server")
FILE_UTIL = importlib.import_module("streamlit.file_util")


@pytest.fixture
def fresh(monkeypatch, caplog):
    """A process where no patch has been installed yet: the router's next run installs."""
    plain = getattr(StaticFiles.__call__, "__wrapped__", StaticFiles.__call__)
    monkeypatch.setattr(StaticFiles, "__call__", plain)  # an earlier run may have patched
    monkeypatch.setattr(speedups, "_installed", False)
    monkeypatch.setattr(base_url, "_done", False)
    monkeypatch.setattr(sockets, "_done", False)
    monkeypatch.setattr(guard, "_reported", set())
    prefetch.plotly_chunk.cache_clear()
    caplog.set_level(logging.WARNING, logger="gptviz.speedups")
    yield
    prefetch.plotly_chunk.cache_clear()


def old_streamlit(monkeypatch):
    monkeypatch.setattr(streamlit, "__version__", "1.99.0")


def no_handler(monkeypatch):
    monkeypatch.delattr(ROUTES, "create_streamlit_static_handler")


def another_handler(monkeypatch):
    monkeypatch.setattr(ROUTES, "create_streamlit_static_handler",
                        lambda directory, base: StaticFiles(directory=directory))


def no_bind_socket(monkeypatch):
    monkeypatch.delattr(SERVER, "_bind_socket")


def no_static_dir(monkeypatch):
    monkeypatch.delattr(FILE_UTIL, "get_static_dir")


def no_plotly_chunk(monkeypatch, tmp_path):
    monkeypatch.setattr(prefetch, "static_js", lambda: tmp_path)


CASES = [  # (the piece that must switch itself off, how its mismatch is faked)
    ("base_url", old_streamlit), ("base_url", no_handler), ("base_url", another_handler),
    ("sockets", old_streamlit), ("sockets", no_bind_socket),
    ("fonts", old_streamlit), ("fonts", no_static_dir),
    ("prefetch", old_streamlit), ("prefetch", no_plotly_chunk),
]


def lines(caplog, piece: str) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name == "gptviz.speedups" and f"speed-up {piece!r} switched off" in r.getMessage()]


@pytest.mark.parametrize("piece, fake", CASES, ids=lambda c: getattr(c, "__name__", c))
def test_a_patch_that_does_not_fit_is_off_with_one_log_line_and_the_page_works(
        piece, fake, fresh, monkeypatch, caplog, tmp_path):
    if fake is no_plotly_chunk:
        fake(monkeypatch, tmp_path)
    else:
        fake(monkeypatch)
    at = rerun(app_test())
    assert "a GPT, step by step" in at.title[0].value
    assert at.pills(key="model").value  # the model picker drew
    rerun(at)
    at.switch_page("app_pages/tokenizers.py")
    rerun(at)  # another page: still working, and nothing logged again
    assert at.title[0].value == "Tokenizers"
    assert len(lines(caplog, piece)) == 1, caplog.text
    if piece == "base_url":
        assert not hasattr(StaticFiles.__call__, "__wrapped__")  # left as Starlette has it
    if piece == "prefetch":
        assert not [e for e in at._tree if e.type == "bidi_component"
                    and e.proto.component_name == prefetch.NAME]


def test_when_everything_fits_nothing_is_logged_and_each_patch_is_in(fresh, caplog):
    at = rerun(app_test())
    assert not [r for r in caplog.records if r.name == "gptviz.speedups"], caplog.text
    assert hasattr(StaticFiles.__call__, "__wrapped__")  # index.html gets its insertion
    assert [e for e in at._tree if e.type == "bidi_component"
            and e.proto.component_name == prefetch.NAME]


def test_every_patch_was_checked_with_the_pinned_streamlit_and_none_with_a_plotly_release():
    """A pin moved in requirements.txt without the patches checked against the new release
    fails here (each would switch itself off: the app slower, not broken). Since plotly 7
    no piece checks a plotly release: ``heatcanvas`` reads ``Figure.to_json()``, public."""
    pins = dict(re.findall(r"^(streamlit|plotly)==(\S+)$",
                           (ROOT / "requirements.txt").read_text(), re.M))
    assert set(pins) == {"streamlit", "plotly"}
    assert importlib.metadata.version("streamlit") == pins["streamlit"]
    for module in (base_url, fonts, prefetch, sockets):
        assert guard.version_matches(pins["streamlit"], module.STREAMLIT), module.__name__
    pieces = [p for p in (ROOT / "gptviz" / "app" / "speedups").glob("*.py")
              if p.name != "guard.py"]
    assert not [p.name for p in pieces if re.search(r"\bplotly=|^PLOTLY = ", p.read_text(),
                                                     re.M)]


def test_stock_mode_installs_nothing_and_logs_nothing(fresh, monkeypatch, caplog):
    monkeypatch.setenv(stock.VARIABLE, "1")
    at = rerun(app_test())
    assert not hasattr(StaticFiles.__call__, "__wrapped__")
    assert not sockets._done and not [r for r in caplog.records if r.name == "gptviz.speedups"]
    assert not [e for e in at._tree if e.type == "bidi_component"
                and e.proto.component_name == prefetch.NAME]


def test_an_unknown_piece_in_the_switch_is_named_once(monkeypatch, caplog):
    monkeypatch.setattr(stock, "_unknown_reported", set())
    caplog.set_level(logging.WARNING, logger="gptviz.speedups")
    monkeypatch.setenv(stock.VARIABLE, "fold, nosuch")
    assert stock.off("fold") and not stock.off("svgplot") and not stock.off("choice")
    assert stock.off("fold")
    (line,) = [r.getMessage() for r in caplog.records if "nosuch" in r.getMessage()]
    assert "svgplot" in line  # the names it could have been
    with pytest.raises(ValueError):
        stock.off("nosuch")
