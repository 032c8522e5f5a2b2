"""The app's JavaScript and CSS: in ``.js`` and ``.css`` files beside the modules that load
them (no JavaScript left in Python strings), each ``.js`` valid ES module syntax by
``node --check``.

Node comes from Debian's ``nodejs`` package (``.ci/run`` installs it). Without it these
tests are skipped with the reason, and fail where GPTVIZ_REQUIRE_BROWSER=1 (CI). The file
goes in on standard input: Node 20 passes a ``.js`` file with a syntax error after
``export`` when it reads the file as CommonJS.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
JS = sorted((ROOT / "gptviz").rglob("*.js"))
ASSETS = sorted([*JS, *(ROOT / "gptviz").rglob("*.css")])
NODE = shutil.which("node") or shutil.which("nodejs")


def node_check(source: str) -> subprocess.CompletedProcess:
    if NODE is None:
        reason = "node not found: apt-get install -y nodejs"
        if os.environ.get("GPTVIZ_REQUIRE_BROWSER") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    return subprocess.run([NODE, "--check", "--input-type=module"], input=source,
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("path", JS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_js_file_is_valid_syntax(path):
    out = node_check(path.read_text("utf-8"))
    assert out.returncode == 0, out.stderr


def test_the_check_catches_a_syntax_error():
    assert node_check("export default function () { const a = ; }").returncode != 0


@pytest.mark.parametrize("path", ASSETS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_js_and_css_file_is_loaded_by_a_module_beside_it(path):
    beside = " ".join(p.read_text("utf-8") for p in path.parent.glob("*.py"))
    assert f'"{path.name}"' in beside, f"nothing in {path.parent.name}/ loads {path.name}"


def test_no_javascript_is_left_in_python_strings():
    found = [str(p.relative_to(ROOT)) for p in (ROOT / "gptviz").rglob("*.py")
             if re.search(r"export default function|addEventListener\(|querySelector\(",
                          p.read_text("utf-8"))]
    assert not found
