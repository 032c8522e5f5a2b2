"""The shape of the package: imports point down, the engine never imports the UI, no cycles.

The graph is built from the source with ``ast`` (nothing is imported to build it), so a
cycle hidden behind ``TYPE_CHECKING`` or inside a function counts too.
"""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "gptviz"
UI_LIBRARIES = ("streamlit", "plotly")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}
ENGINE = sorted(m for m in MODULES if not m.startswith("gptviz.app"))


def imported(path: Path) -> set[str]:
    """Every module ``path`` imports, anywhere in the file (``from a import b`` gives a.b
    when a.b is a module of ours, else a)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                out.add(full if full in MODULES else node.module)
    return out


def graph() -> dict[str, set[str]]:
    """Our modules -> our modules they import (a package's __init__ is not implied)."""
    return {m: {d for d in imported(p) if d in MODULES and d != m} for m, p in MODULES.items()}


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a path [a, b, …, a], or None.

    >>> find_cycle({"a": {"b"}, "b": {"a"}})
    ['a', 'b', 'a']
    >>> find_cycle({"a": {"b"}, "b": set()}) is None
    True
    """
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    path: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        path.append(m)
        for d in sorted(edges.get(m, ())):
            if state.get(d) == 1:
                return path[path.index(d):] + [d]
            if d not in state and (found := visit(d)):
                return found
        path.pop()
        state[m] = 2
        return None

    for m in sorted(edges):
        if m not in state and (found := visit(m)):
            return found
    return None


def test_the_import_graph_has_no_cycle():
    assert find_cycle(graph()) is None


def test_imports_point_down_from_the_pages_to_the_engine():
    edges = graph()
    up = [(m, d) for m in ENGINE for d in edges[m] if d.startswith("gptviz.app")]
    assert not up, f"engine modules import the app: {up}"
    rooms = ("gptviz.app.shared", "gptviz.app.speedups", "gptviz.app.serving")
    pages = [d for d in MODULES if d.startswith("gptviz.app.") and not d.startswith(rooms)]
    shared_up = [(m, d) for m, ds in edges.items() if m.startswith(rooms)
                 for d in ds if d in pages]
    assert not shared_up, f"app/shared, speedups or serving imports a page's folder: {shared_up}"
    serving_up = [(m, d) for m, ds in edges.items() if m.startswith("gptviz.app.serving")
                  for d in ds if d.startswith(rooms[:2])]
    assert not serving_up, f"app/serving imports shared or the wing: {serving_up}"


@pytest.mark.parametrize("module", ENGINE)
def test_no_engine_module_names_a_ui_library(module):
    names = imported(MODULES[module])
    assert not [n for n in names if n.split(".")[0] in UI_LIBRARIES]


def test_importing_the_whole_engine_loads_neither_streamlit_nor_plotly():
    code = ("import importlib, sys\n"
            f"for m in {ENGINE!r}:\n"
            "    importlib.import_module(m)\n"
            f"print(sorted(k for k in sys.modules if k.split('.')[0] in {UI_LIBRARIES!r}))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_every_module_imports(module):
    importlib.import_module(module)


def test_no_file_of_the_package_or_pages_passes_300_lines():
    files = [*PACKAGE.rglob("*.py"), *(ROOT / "app_pages").glob("*.py")]
    long = {str(p.relative_to(ROOT)): n for p in files
            if (n := len(p.read_text("utf-8").splitlines())) > 300}
    assert not long


def test_every_page_script_is_thin():
    long = {p.name: n for p in (ROOT / "app_pages").glob("*.py")
            if (n := len(p.read_text("utf-8").splitlines())) > 150}
    assert not long
