r"""Readers for the numbers a page renders (inside LaTeX, in tables and captions), and a
``Checks`` list that names every mismatch with the direct computation (tests/fidelity.py).

A number is compared with the precision it is printed with:

>>> tex_float("-1.25"), tex_float("12{,}345"), tex_float(r"2.0 \times 10^{-7}")
(-1.25, 12345.0, 2e-07)
>>> shown_matches("0.685", 0.68449), shown_matches("0.684", 0.68549)
(True, False)
>>> shown_matches("2.6e-06", 2.64e-6), shown_matches(r"2.0 \times 10^{-7}", 2.2e-7)
(True, False)
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tests.helpers import tables

# A number as gptviz.app.shared.tex writes it: 0.123, -4, 12{,}345, 2.0 \times 10^{-7}.
NUM = r"-?\d+(?:\{,\}\d{3})*(?:\.\d+)?(?:\s*\\times\s*10\^\{-?\d+\})?"
NOT_INDEX = r"(?![\d.}])"  # "k=0}" in \sum_{k=0} is an index, not a value

# ---- reading the page ---------------------------------------------------------------------

def tex_float(s: str) -> float:
    """A number as the pages print it (see the module's examples)."""
    s = s.strip()
    if s in (r"-\infty", r"\infty"):
        return -math.inf if s.startswith("-") else math.inf
    s = s.rstrip("%").strip()
    m = re.fullmatch(r"(-?[\d.{},]+)\s*\\times\s*10\^\{(-?\d+)\}", s)
    if m:
        return float(m.group(1)) * 10 ** int(m.group(2))
    return float(s.replace("{,}", "").replace(",", ""))


def shown_matches(shown: str, value: float, rel: float = 2e-5) -> bool:
    """Whether ``shown`` is ``value`` printed with its decimals (±½ unit in the last place),
    allowing float32's rounding (``rel``) in the page's own computation."""
    shown = shown.strip().rstrip("%").strip()
    if math.isinf(tex_float(shown)) or math.isinf(value):
        return tex_float(shown) == value
    mantissa, _, exponent = re.sub(r"\s*\\times\s*10\^\{(-?\d+)\}", r"e\1", shown).partition("e")
    digits = re.search(r"\.(\d+)", mantissa)
    half = 0.5 * 10 ** -(len(digits.group(1)) if digits else 0) * 10 ** int(exponent or 0)
    floor = 0.0 if exponent else 1e-6  # float32 noise around 0, for fixed decimals
    return abs(tex_float(shown) - value) <= 1.01 * half + rel * abs(value) + floor


def after(tex: str, label: str) -> str:
    r"""The first number after the first ``label`` (a regex) in ``tex``, as printed.

    >>> after(r"m = \max_{j \le 3} s_{3,j} = 7.514\ \text{(…)}", r"m = \\max")
    '7.514'
    """
    m = re.search(label, tex)
    assert m, f"no {label!r} in {tex[:300]}"
    # skip sub/superscripts such as _{j \le 3} and s_{3,j}: the number follows an "="
    rest = tex[m.end():]
    n = re.search(r"=\s*(" + NUM + ")" + NOT_INDEX, rest)
    assert n, f"no number after {label!r} in {rest[:300]}"
    return n.group(1)


def numbers(tex: str) -> list[str]:
    r"""Every number that follows an "=" in ``tex``, as printed.

    >>> numbers(r"\max_{b \ne a} \cos(E_{\text{2}}, E_b) = 0.654\ \text{for } \text{3}")
    ['0.654']
    >>> numbers(r"\sum_{k=0}^{63} \cos(\omega_k) = 46.82")
    ['46.82']
    """
    return re.findall(r"=\s*(" + NUM + ")" + NOT_INDEX, tex)


def vectors(tex: str) -> list[list[str]]:
    r"""Every ``(a,\ b,\ \dots,\ z)`` of ``tex`` as its printed entries.

    >>> vectors(r"x = (0.1,\ -2.0,\ \dots,\ 3.0) + (1,\ 2)")
    [['0.1', '-2.0', '\\dots', '3.0'], ['1', '2']]
    """
    out = []
    for group in re.findall(r"\(([^()]*)\)", tex):
        parts = [p.strip() for p in group.split(r",\ ")]
        if len(parts) > 1 and all(p == r"\dots" or re.fullmatch(NUM, p) for p in parts):
            out.append(parts)
    return out


def underset_values(row: str) -> list[str]:
    r"""The numbers set over labels, ``\underset{label}{0.123}``, in order, each with the sign
    written before it in a sum (``a - \underset{label}{0.123}`` gives "-0.123")."""
    found = re.findall(r"(-\s*)?\\underset\{(?:[^{}]|\{[^{}]*\})*\}\{(" + NUM
                       + r"|-\\infty)\}", row)
    return [("-" + v if sign and not v.startswith("-") else v) for sign, v in found]


@dataclass
class Checks:
    """Comparisons of one page with the direct computation; ``done()`` lists every miss."""

    where: str  # "page / view / model"
    misses: list[str] = field(default_factory=list)
    count: int = 0

    def shown(self, what: str, shown: str, value: float) -> None:
        self.count += 1
        if not shown_matches(shown, float(value)):
            self.misses.append(f"{self.where}: {what}: shown {shown}, computed {value:.6g}")

    def close(self, what: str, shown: Any, value: Any, atol: float = 1e-4,
              rtol: float = 1e-4) -> None:
        self.count += 1
        a = np.asarray(shown, dtype=np.float64)
        b = np.asarray(value, dtype=np.float64)
        if a.shape != b.shape:
            self.misses.append(f"{self.where}: {what}: shape {a.shape}, computed {b.shape}")
        elif not np.allclose(a, b, atol=atol, rtol=rtol):
            k = int(np.abs(a - b).argmax())
            self.misses.append(f"{self.where}: {what}: entry {np.unravel_index(k, a.shape)} "
                               f"shown {a.flat[k]:.6g}, computed {b.flat[k]:.6g}")

    def vector(self, what: str, shown: list[str], value: Any) -> None:
        """A printed vector (first entries, \\dots, last) against the full one."""
        v = np.asarray(value, dtype=np.float64).ravel()
        if r"\dots" in shown:
            cut = shown.index(r"\dots")
            pairs = list(zip(shown[:cut], v[:cut], strict=False))
            tail = shown[cut + 1:]
            pairs += list(zip(tail, v[len(v) - len(tail):], strict=True))
        else:
            pairs = list(zip(shown, v, strict=True))
        for k, (s, x) in enumerate(pairs):
            self.shown(f"{what}[{k}]", s, x)

    def small(self, what: str, shown: str, bound: float) -> None:
        """A printed rounding-level number (a check's max |Δ|) is at most ``bound``."""
        self.count += 1
        if not abs(tex_float(shown)) <= bound:
            self.misses.append(f"{self.where}: {what}: shown {shown}, expected ≤ {bound:g}")

    def equal(self, what: str, shown: Any, value: Any) -> None:
        self.count += 1
        if shown != value:
            self.misses.append(f"{self.where}: {what}: shown {shown!r}, computed {value!r}")

    def done(self, at_least: int = 1) -> None:
        assert not self.misses, "\n".join(self.misses)
        assert self.count >= at_least, f"{self.where}: only {self.count} numbers compared"


def opened(at, *keys: str):
    """Open the on-demand expanders ``keys`` (``widgets.on_demand``) and run the page again:
    closed, they draw nothing."""
    for key in keys:
        at.session_state[key] = True
    at.run()
    assert not at.exception, at.exception
    return at


def table(at, *columns: str):
    """The first table with all of ``columns``."""
    found = [d.value for d in tables(at) if set(columns) <= set(d.value.columns)]
    assert found, f"no table with {columns}: {[list(d.value.columns) for d in tables(at)]}"
    return found[0]


def latex_with(at, *parts: str, pattern: str = "") -> str:
    """The first st.latex that contains every one of ``parts`` and matches ``pattern``."""
    found = [x.value for x in at.latex
             if all(p in x.value for p in parts) and re.search(pattern, x.value)]
    assert found, f"no LaTeX with {parts} {pattern}"
    return found[0]


def dims(df) -> list[str]:
    return [c for c in df.columns if re.fullmatch(r"d\d+", str(c))]


def subsequence(chk: Checks, what: str, shown: list[str], row: Any) -> None:
    """The printed values are entries of ``row`` in order (a row shown with gaps, \\dots)."""
    row = np.asarray(row, dtype=np.float64)
    j = 0
    for k, s in enumerate(shown):
        while j < len(row) and not shown_matches(s, row[j]):
            j += 1
        chk.count += 1
        if j == len(row):
            chk.misses.append(f"{chk.where}: {what}: shown value #{k} {s} is no entry of the "
                              f"computed row (in order): {np.round(row, 4).tolist()[:40]}")
            return
        j += 1


def worked_row(chk: Checks, tex: str, scores: Any, pattern: Any, what: str) -> None:
    """A worked attention row (``attention_row``): m = max over the unmasked keys, the scores,
    the masked scores, their exponentials and Σ, the weights and Σ, against row i of the
    computed ``scores`` (T, T, before the mask) and ``pattern`` (T, T); i is read off."""
    i = int(re.search(r"i = (\d+)", tex).group(1))
    s = np.asarray(scores, dtype=np.float64)[i]  # (T,) row i before the mask
    pattern = np.asarray(pattern, dtype=np.float64)[i]  # (T,)
    masked = np.where(np.arange(len(s)) <= i, s, -np.inf)
    m = masked.max()
    chk.shown(f"{what}: m", after(tex, r"m = \\max"), m)
    for line in tex.split(r"\\"):
        values = underset_values(line)
        if not values:
            continue
        if "softmax" in line:
            subsequence(chk, f"{what}: w_ij", values, pattern)
            chk.shown(f"{what}: Σ_j w_ij", numbers(line)[-1], float(np.sum(pattern)))
        elif "e^{" in line:
            subsequence(chk, f"{what}: e^(s + M − m)", values, np.exp(masked - m))
            chk.shown(f"{what}: Σ_j e^(s + M − m)", after(line, r"\\sum"),
                      float(np.exp(masked - m).sum()))
        elif "M_" in line:
            subsequence(chk, f"{what}: s + M", values, masked)
        else:
            subsequence(chk, f"{what}: s_ij", values, s)


def drawn(at, chk: Checks, wanted: dict[str, Any], atol: float = 1e-4) -> None:
    """Every ``wanted`` matrix is the z of some heatmap on the page (whatever its title)."""
    from tests.helpers import figures, z_of

    z = [z_of(t) for f in figures(at) for t in f["data"] if t["type"] == "heatmap"]
    for name, want in wanted.items():
        want = np.asarray(want, dtype=np.float64)
        chk.count += 1
        if not any(a.shape == want.shape and np.allclose(a, want, atol=atol, rtol=1e-4)
                   for a in z):
            chk.misses.append(f"{chk.where}: no heatmap equals {name} "
                              f"(heatmaps: {[a.shape for a in z]})")


# ---- one page, every view -----------------------------------------------------------------

PROMPTS = {"induction": "hcyqwbxl|hcyqwbxl\nmrvtoz|mrv",  # a repeat: induction heads fire
           "": "The homology of a space is a sequence of groups. The homology of"}


def prompt_text(ckpt) -> str:
    """A prompt in the model's corpus style (a repeat, so that copying heads show)."""
    corpus = str(ckpt.card.get("corpus", ""))
    return next((t for k, t in PROMPTS.items() if k and k in corpus), PROMPTS[""])


def labels(ckpt, ids) -> list[str]:
    """Vocabulary entries as the pages label them (bytes of a partial token as ‹e2 80›)."""
    from gptviz.app.shared.chips import show_bytes

    return [show_bytes(ckpt.tokenizer.id_to_bytes(int(i))) for i in ids]


def page_views(page: str) -> dict[str, str]:
    """The views of ``page``, tab label -> the name of the function that draws it (checks
    are keyed by that name, so that a tab may be renamed)."""
    import importlib

    views = importlib.import_module(f"gptviz.app.{page}.view").VIEWS
    return {label: draw.__name__ for label, draw in views.items()}


def checkpoint(model: str):
    """A bundled model, loaded once for every fidelity test (read-only), and again if its
    files change (a retrained model must be compared with what the page loads)."""
    from gptviz.checkpoints.folder import bundled_models

    folder = bundled_models()[model]
    return _load(str(folder), max(f.stat().st_mtime_ns for f in Path(folder).iterdir()))


@functools.cache
def _load(folder: str, mtime: int):
    from gptviz.checkpoints.folder import load_checkpoint

    return load_checkpoint(folder)


def check_views(page: str, model: str, checkers: dict, **query: str) -> None:
    """Run ``page`` once on ``model`` and the model's prompt, then every view in turn. The
    checker named after a view's function, ``(at, ckpt, ids, chk)``, compares what the view
    shows with the direct computation; every miss of every view is reported at the end."""
    from tests.helpers import rerun, run_page

    ckpt = checkpoint(model)
    text = prompt_text(ckpt)
    ids = ckpt.tokenizer.encode(text)[-ckpt.config.context_length:]
    at = run_page(page, model=model, prompt=text, **query)
    misses = []
    for view, drawer in page_views(page).items():
        assert drawer in checkers, f"{page}: no fidelity check for the view {view!r} ({drawer})"
        at.session_state["view"] = view
        rerun(at)
        chk = Checks(f"{page} / {view} / {model}")
        checkers[drawer](at, ckpt, ids, chk)
        misses += chk.misses or ([] if chk.count else [f"{chk.where}: nothing compared"])
    assert not misses, "\n".join(misses)
