"""Positional page, P Pᵀ: one long row (a learned table's position 0) must not take the whole
colour scale; the cells it clips are few, named on the page, and the values stay exact."""

import numpy as np
import pytest

from gptviz.analysis import core as analysis
from gptviz.checkpoints.folder import bundled_models, load_checkpoint
from tests.helpers import figure, run_page, texts, z_of

CHAR = "mathematics-char"


@pytest.mark.skipif(CHAR not in bundled_models(), reason="no bundled char model")
def test_learned_similarity_is_not_washed_out_by_position_0():
    at = run_page("positional", view="This model's positions", model=CHAR)
    P = load_checkpoint(bundled_models()[CHAR]).model.state_dict()["pos.P.weight"].numpy()
    S = analysis.pe_similarity(P)  # (N, N)
    trace = figure(at, "similarity P P")["data"][0]
    np.testing.assert_allclose(z_of(trace), S, rtol=1e-6, atol=1e-6)  # values unchanged
    lo, hi = trace["zmin"], trace["zmax"]
    assert lo == -hi and 0 < hi < np.abs(S).max()  # signed around 0, and clipped
    assert (np.abs(S) > hi).mean() <= 0.011  # about 1 % of the cells saturate, no more
    # without the clip, 99 % of the cells would share the lowest tenth of the scale
    assert np.quantile(np.abs(S), 0.99) < 0.15 * np.abs(S).max()
    i, j = np.unravel_index(np.abs(S).argmax(), S.shape)
    note = texts(at, "caption")
    assert f"The colours of P Pᵀ stop at ±{hi:.3g}" in note
    assert f"up to {S[i, j]:.3g} at row {i}, column {j}" in note
    beyond = int((np.abs(S) > hi).sum())
    assert f"{beyond:,} of its {S.size:,} cells go beyond" in note
    # the table P itself: the same rule, its own note
    table = figure(at, "positions ×")["data"][0]
    np.testing.assert_allclose(z_of(table), P, rtol=1e-6)
    assert 0 < table["zmax"] < np.abs(P).max() and (np.abs(P) > table["zmax"]).mean() <= 0.011
    assert f"The colours of this model's PE stop at ±{table['zmax']:.3g}" in note


def test_sinusoidal_similarity_is_drawn_whole():
    at = run_page("positional")  # the first view: the sinusoidal table
    for title in ("similarity P P", "positions ×"):
        trace = figure(at, title)["data"][0]
        z = z_of(trace)
        assert trace["zmax"] == pytest.approx(np.abs(z).max(), rel=1e-6)
        assert trace["zmin"] == -trace["zmax"]
    assert "stop at" not in texts(at, "caption")
