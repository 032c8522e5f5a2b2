"""Every benchmark starts as ``python -m benchmarks.<room>.<name>`` from the repository's root:
its ``--help`` runs (every import included) and prints its usage, and no benchmark's code
touches ``sys.path`` (a page's source that a benchmark writes for a server may)."""

from __future__ import annotations

import ast
import runpy
import sys

import pytest

from tests.helpers import ROOT

ROOMS = ROOT / "benchmarks"
# modules the scripts import: no command line
LIBRARIES = {"nanogpt_ref", "streamlit_client", "class_client"}
SCRIPTS = sorted(p for p in ROOMS.glob("*/*.py")
                 if p.stem != "__init__" and p.stem not in LIBRARIES)


def module_name(path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def test_every_room_has_scripts():
    assert {p.parent.name for p in SCRIPTS} == {"engine", "app", "server"}
    assert {"pages", "crowd", "gpt2_shape", "session_rss", "upload_memory"} <= {
        p.stem for p in SCRIPTS}


@pytest.mark.parametrize("path", SCRIPTS, ids=module_name)
def test_help_runs_as_a_module(path, monkeypatch, capsys):
    name = module_name(path)
    monkeypatch.setattr(sys, "argv", [name, "--help"])
    with pytest.raises(SystemExit) as done:
        runpy.run_module(name, run_name="__main__", alter_sys=True)
    assert done.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: {path.name}")


@pytest.mark.parametrize("path", sorted(ROOMS.rglob("*.py")), ids=module_name)
def test_no_benchmark_edits_sys_path(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    uses = [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Attribute)
            and node.attr == "path" and isinstance(node.value, ast.Name)
            and node.value.id == "sys"]
    assert not uses, f"{path.name} uses sys.path on lines {uses}"
