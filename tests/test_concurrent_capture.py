"""Many sessions at once through the pages' cached helpers, on one shared bundled model.

Streamlit runs each session's script in its own thread, and the bundled models are
shared by all of them. Each session must get exactly what it would get alone.
"""

from __future__ import annotations

import threading

import numpy as np
import streamlit as st

from gptviz.app.shared import cache as model_cache
from gptviz.app.shared.picker import Picked, load_bundled
from gptviz.checkpoints.folder import DEFAULT_MODEL
from gptviz.model.names import act_name

PROMPTS = ["The manifold", "Let x be a point of the", "Theorem.", "a", "We prove that every",
           "Hence the map is", "Consider the group G acting on", "Suppose"]


def _in_threads(work, n: int) -> dict[int, object]:
    barrier = threading.Barrier(n)
    out: dict[int, object] = {}

    def run(i: int) -> None:
        barrier.wait()
        out[i] = work(i)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    return out


def test_eight_sessions_get_their_own_activations_through_the_page_cache():
    ckpt = load_bundled(DEFAULT_MODEL)
    picked = Picked(DEFAULT_MODEL, ckpt, bundled=True)
    n_layer = ckpt.model.config.n_layer
    names = [act_name("pattern", layer) for layer in range(n_layer)]
    names += [act_name("resid_post", n_layer - 1)]
    ids = [ckpt.tokenizer.encode(p) for p in PROMPTS]

    def capture(i: int):
        cache, last = model_cache.activations(picked, ids[i], names)
        return {k: v.numpy().copy() for k, v in cache.items()}, last.copy()

    alone = {}
    for i in range(len(PROMPTS)):
        st.cache_data.clear()  # each one computed afresh, in this thread
        alone[i] = capture(i)
    st.cache_data.clear()
    together = _in_threads(capture, len(PROMPTS))
    for i, (cache, last) in together.items():
        assert set(cache) == set(names)
        np.testing.assert_array_equal(last, alone[i][1])
        for name in names:
            np.testing.assert_array_equal(cache[name], alone[i][0][name])


def test_eight_sessions_ablating_different_heads_get_their_own_distributions():
    ckpt = load_bundled(DEFAULT_MODEL)
    picked = Picked(DEFAULT_MODEL, ckpt, bundled=True)
    ids = ckpt.tokenizer.encode("Let x be a point of the manifold")
    heads = [[(i % ckpt.model.config.n_layer, i % ckpt.model.config.n_head)] for i in range(8)]

    def ablate(i: int):
        base, changed = model_cache.ablation(picked, ids, heads[i])
        return base.copy(), changed.copy()

    alone = {}
    for i in range(8):
        st.cache_data.clear()
        alone[i] = ablate(i)
    st.cache_data.clear()
    for i, (base, changed) in _in_threads(ablate, 8).items():
        np.testing.assert_array_equal(base, alone[i][0])
        np.testing.assert_array_equal(changed, alone[i][1])
