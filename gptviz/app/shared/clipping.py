"""Colours for a signed heatmap whose few largest cells stand far out: the scale stops at a
percentile, the values stay exact, and a sentence on the page says so."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from gptviz.app.shared.heatmaps import as_float32
from gptviz.i18n import ngettext, number, separators

# A cell this many times the 99th percentile of |values| stands out: a Gaussian matrix's
# largest cell is ~1.6× it (4σ against 2.6σ) and a Laplace one's ~2.5×; a learned position
# table's first row is 5–9× (clipped_range).
OUTLIER = 3.0


def clipped_range(z) -> tuple[float, float]:
    """(r, top): a signed heatmap's colours span ±r, and top = max |z|.

    r is top, unless a few cells stand far out: a learned position table's first row often
    has several times the norm of the others, and alone it would take the whole colour
    scale, leaving every other cell one pale colour. Then (top > OUTLIER × the 99th percentile
    of |z|) r is that percentile, and the cells beyond it show the scale's end colours.

    >>> S = np.ones((20, 20)); S[0, 0] = 9.0
    >>> clipped_range(S)
    (1.0, 9.0)
    >>> clipped_range(np.eye(3) * 2)
    (2.0, 2.0)
    """
    a = np.abs(as_float32(z))
    a = a[np.isfinite(a)]
    top = float(a.max()) if a.size else 0.0
    p99 = float(np.percentile(a, 99)) if a.size else 0.0
    return (p99 if p99 > 0 and top > OUTLIER * p99 else top), top


def clip_colours(fig: go.Figure, z, what: str) -> go.Figure:
    """A signed heatmap of ``z`` over ±r of ``clipped_range``: its values stay exact (hover
    reads them), its colours stop at ±r. When it clips, the sentence that says so (``what``
    names the matrix) travels with the figure, for ``clip_note``, so that a cached figure
    brings its note without the matrix being read again.

    >>> S = np.ones((20, 20)); S[3, 4] = -9.0
    >>> fig = clip_colours(go.Figure(go.Heatmap(z=S)), S, "P")
    >>> fig.data[0].zmax, clip_note(fig)  # doctest: +NORMALIZE_WHITESPACE
    (1.0, 'The colours of P stop at ±1, the 99th percentile of its |values|: 1 of its 400
    cells goes beyond, up to −9 at row 3, column 4, and shows the end colour. Hover reads
    every value.')
    >>> clip_note(clip_colours(go.Figure(go.Heatmap(z=np.eye(3))), np.eye(3), "I")) is None
    True
    """
    r, top = clipped_range(z)
    if r > 0:
        fig.update_traces(zmin=-r, zmax=r)
    if r < top:
        a = as_float32(z)
        i, j = np.unravel_index(int(np.nanargmax(np.abs(a))), a.shape)
        beyond = int((np.abs(a) > r).sum())
        dec = separators()[0]

        def g3(x: float) -> str:  # 3 significant digits, "−" for minus, the reader's decimal
            return f"{x:.3g}".replace("-", "−").replace(".", dec)

        note = ngettext(
            "The colours of {what} stop at ±{r}, the 99th percentile of its |values|: {n} of "
            "its {size} cells goes beyond, up to {top} at row {i}, column {j}, and shows the "
            "end colour. Hover reads every value.",
            "The colours of {what} stop at ±{r}, the 99th percentile of its |values|: {n} of "
            "its {size} cells go beyond, up to {top} at row {i}, column {j}, and show the "
            "end colours. Hover reads every value.", beyond).format(
            what=what, r=g3(r), n=number(beyond, 0, grouping=True),
            size=number(a.size, 0, grouping=True), top=g3(float(a[i, j])), i=i, j=j)
        fig.update_layout(meta={"clip": note})
    return fig


def clip_note(fig: go.Figure) -> str | None:
    """The sentence ``clip_colours`` left in ``fig`` when it clipped, else None."""
    meta = fig.layout.meta
    return meta.get("clip") if isinstance(meta, dict) else None
