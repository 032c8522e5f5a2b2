"""Only the wing (``gptviz/app/speedups/``) reaches into Streamlit's or plotly's internals or
patches them: read from the source with ``ast`` over the package, the router and the pages.

Internal: any module of Streamlit, plotly, Starlette, Tornado or uvicorn other than their
public API (``PUBLIC``), a name starting with "_" reached on one of them, and any attribute
set (or deleted) on a module or class imported from them.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
WING = ROOT / "gptviz" / "app" / "speedups"
LIBRARIES = ("streamlit", "plotly", "_plotly_utils", "starlette", "tornado", "uvicorn")
PUBLIC = {"streamlit", "streamlit.components", "streamlit.components.v1",
          "streamlit.components.v2", "streamlit.column_config",
          "plotly", "plotly.graph_objects", "plotly.express", "plotly.subplots", "plotly.io",
          "plotly.colors", "plotly.offline"}
FILES = sorted([*(ROOT / "gptviz").rglob("*.py"), ROOT / "app.py",
                *(ROOT / "app_pages").glob("*.py")])


def is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def internal(module: str, name: str | None = None) -> str | None:
    """What is internal about ``module`` (and ``name`` reached on it), or None."""
    if module.split(".")[0] not in LIBRARIES:
        return None
    if module not in PUBLIC:
        return module
    if name is None:
        return None
    full = f"{module}.{name}"
    if name.startswith("_") and name != "__version__":
        return full
    try:  # a submodule reached as an attribute (st.runtime), not a function (st.navigation)
        reached = getattr(importlib.import_module(module), name, None)
    except ImportError:
        return full
    if full not in PUBLIC and (isinstance(reached, types.ModuleType)
                               or (reached is None and is_module(full))):
        return full
    return None


def findings(path: Path) -> list[str]:
    """Every use of an internal, and every patch, in the file ``path``."""
    return found_in(path.read_text("utf-8"))


def found_in(source: str) -> list[str]:
    """Every use of an internal, and every patch, in ``source``."""
    tree = ast.parse(source)
    found, bound = [], {}  # bound: a local name -> the library module or object it names
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if (why := internal(alias.name)):
                    found.append(f"imports {why}")
                if alias.name.split(".")[0] in LIBRARIES:
                    bound[alias.asname or alias.name.split(".")[0]] = (
                        alias.name if alias.asname else alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                if (why := internal(node.module, alias.name)):
                    found.append(f"imports {why}")
                if node.module.split(".")[0] in LIBRARIES:
                    bound[alias.asname or alias.name] = f"{node.module}.{alias.name}"

    def dotted(node: ast.AST) -> list[str] | None:
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        return [node.id, *reversed(parts)] if isinstance(node, ast.Name) else None

    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            chain = dotted(node)
            if chain and chain[0] in bound and len(chain) == 2:
                origin = bound[chain[0]]
                module = origin if is_module(origin) else origin.rsplit(".", 1)[0]
                name = chain[1] if is_module(origin) else f"{origin.rsplit('.', 1)[1]}.{chain[1]}"
                if is_module(origin) and (why := internal(module, name)):
                    found.append(f"reaches {why}")
                elif not is_module(origin) and chain[1].startswith("_") \
                        and chain[1] != "__version__":
                    found.append(f"reaches {module}.{name}")
        targets = []
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Delete):
            targets = node.targets if isinstance(node, ast.Assign | ast.Delete) \
                else [node.target]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in ("setattr", "delattr") and node.args:
            targets = [ast.Attribute(value=node.args[0], attr="?", ctx=ast.Store())]
        for target in targets:
            chain = dotted(target) if isinstance(target, ast.Attribute) else None
            if chain and chain[0] in bound:
                found.append(f"patches {bound[chain[0]]}.{'.'.join(chain[1:])}")
    return found


def test_the_check_finds_each_kind_and_lets_the_public_api_pass():
    got = found_in("import streamlit as st\nfrom streamlit import file_util\n"
                   "from streamlit.errors import X\nfrom plotly.validator_cache import V\n"
                   "import starlette.staticfiles\nV._json_cache = 1\nst.__file__\n"
                   "st.runtime\nsetattr(st, 'a', 1)\nimport plotly.graph_objects as go\n"
                   "go.Figure._data = 1\n")
    assert sorted(got) == sorted([
        "imports streamlit.file_util", "imports streamlit.errors",
        "imports plotly.validator_cache", "imports starlette.staticfiles",
        "reaches streamlit.__file__", "reaches streamlit.runtime",
        "patches plotly.validator_cache.V._json_cache", "patches streamlit.?",
        "patches plotly.graph_objects.Figure._data"]), got
    assert not found_in("import streamlit as st\nimport plotly.graph_objects as go\n"
                        "from plotly.subplots import make_subplots\nst.components.v2.component\n"
                        "st.session_state['a'] = 1\nfig = go.Figure()\nfig.layout.height = 3\n"
                        "st.__version__\n")


@pytest.mark.parametrize("path", [p for p in FILES if WING not in p.parents],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_nothing_outside_the_wing_reaches_into_streamlit_or_plotly(path):
    assert not findings(path)


def test_the_wing_is_where_they_are():
    """The check is not vacuous: the wing's server patches are found by it."""
    wing = {p.name: findings(p) for p in WING.glob("*.py")}
    assert any("patches starlette.staticfiles.StaticFiles.__call__" in f
               for f in wing["base_url.py"])
    assert wing["mount.py"] and wing["fonts.py"] and wing["prefetch.py"]
