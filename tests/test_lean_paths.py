"""The lean data paths a GPT-2-sized model needs give what the direct computations give.

Each path below avoids a copy or a product the size of the vocabulary times d (PCA in
blocks, neighbours without a normalised copy of E, W_U taken to float64 in blocks, the
commitment a stage at a time, the unembedding of the one row a check reads, the induction
test without logits), and each is held here to the direct computation it replaces. The
shared stores compute a result once when sessions ask for it together.
"""

from __future__ import annotations

import platform
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gptviz.analysis import attention as am
from gptviz.analysis import attribution as A
from gptviz.analysis import circuits as C
from gptviz.analysis import core as analysis
from gptviz.analysis import induction
from gptviz.analysis import positions as P
from gptviz.analysis.positions import last_logits
from gptviz.app.embeddings.untrained import fresh_embedding, fresh_neighbours, fresh_neighbours_of
from gptviz.app.serving.lru import ByteLRU
from gptviz.app.shared import cache as model_cache
from gptviz.app.shared.picker import Picked
from gptviz.checkpoints.folder import Checkpoint, initial_model
from gptviz.model import GPTConfig, hooks
from gptviz.model.names import act_name, block_page_names
from gptviz.tokenizers.char import CharTokenizer
from tests.helpers import tiny_gpt


def direct_pca(X: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """PCA as written in one piece: the whole matrix to float64, centred, eigh."""
    x = np.asarray(X, dtype=np.float64)
    centred = x - x.mean(axis=0)
    eigvals, eigvecs = np.linalg.eigh(centred.T @ centred)
    order = np.argsort(eigvals)[::-1][:k]
    axes = eigvecs[:, order]
    axes *= np.sign(axes[np.abs(axes).argmax(axis=0), range(k)])
    return (centred @ axes).astype(np.float32), eigvals[order] / eigvals.clip(min=0).sum()


@settings(max_examples=20, deadline=None)
@given(n=st.integers(3, 3 * analysis.PCA_ROWS), d=st.integers(3, 9), seed=st.integers(0, 99))
def test_pca_in_blocks_is_the_direct_pca(n, d, seed):
    X = np.random.default_rng(seed).normal(size=(n, d)).astype(np.float32) * 0.02 + 0.5
    coords, ratio = analysis.pca(X, 3)
    want_coords, want_ratio = direct_pca(X, 3)
    # atol: n = d = 3 centred has rank 2, a third ratio of 0 against -7e-19
    np.testing.assert_allclose(ratio, want_ratio, rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose(coords, want_coords, atol=1e-6)


def test_pca_fits_the_given_rows_and_projects_every_row():
    X = np.random.default_rng(1).normal(size=(500, 6)).astype(np.float32)
    X[-3:] += 40.0  # three far rows, left out of the fit (as special tokens are)
    rows = np.arange(497)
    coords, ratio = analysis.pca(X, 2, fit_rows=rows)
    mean, axes, want_ratio = analysis.pca_basis(X[:497].astype(np.float64), 2)
    np.testing.assert_allclose(coords, (X.astype(np.float64) - mean) @ axes, atol=1e-5)
    np.testing.assert_allclose(ratio, want_ratio, rtol=1e-6)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 999), k=st.integers(1, 8))
def test_neighbours_without_a_normalised_copy_are_the_cosine_neighbours(seed, k):
    E = torch.from_numpy(np.random.default_rng(seed).normal(size=(60, 7)).astype(np.float32))
    unit = E / E.norm(dim=1, keepdim=True)
    token = seed % 60
    sims = unit @ unit[token]
    sims[token] = -float("inf")
    want = torch.topk(sims, k)
    ids, got = analysis.nearest_neighbours(E, token, k)
    np.testing.assert_allclose(got, want.values.numpy(), atol=1e-6)
    np.testing.assert_allclose(sims[ids].numpy(), want.values.numpy(), atol=1e-6)  # near-ties


def test_one_hot_rows_are_the_one_hot_product():
    E = torch.randn(30, 5)
    oh, rows = analysis.one_hot_embed([4, 0, 29, 4], E)
    np.testing.assert_array_equal(rows, (torch.from_numpy(oh) @ E).numpy())


def test_untrained_neighbours_of_a_whole_prompt_in_one_pass():
    config = GPTConfig(vocab_size=300, context_length=16, d_model=24, n_layer=1, n_head=2)
    fe = fresh_embedding(config, 7, chunk=256)
    E = initial_model(config, 7).embed.weight.detach()
    tokens = [5, 299, 0, 5, 140]  # a repeat, both ends
    ids, sims = fresh_neighbours_of(fe, tokens, 6)
    assert ids.shape == sims.shape == (5, 6)
    for row, token in enumerate(tokens):
        want_ids, want = analysis.nearest_neighbours(E, token, 6)
        assert ids[row].tolist() == want_ids.tolist()
        np.testing.assert_allclose(sims[row], want, atol=1e-6)
        one_ids, _ = fresh_neighbours(fe, token, 6)
        assert one_ids.tolist() == ids[row].tolist()


def test_untrained_embedding_never_imports_torch_dynamo():
    """Recording GPT(config)'s fills on the meta device imported torch._dynamo (~70 MB a
    server kept): torch wraps a dispatch mode's hook, and meta's normal_, to keep its
    compiler out. The recording does neither."""
    code = ("import sys\n"
            "from gptviz.app.embeddings.untrained import fresh_embedding\n"
            "from gptviz.model import GPTConfig\n"
            "c = GPTConfig(vocab_size=300, context_length=16, d_model=24, n_layer=2, n_head=2)\n"
            "print(fresh_embedding(c, 7, chunk=256).rows, 'torch._dynamo' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).parents[1],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["300", "False"]


@pytest.fixture(scope="module")
def tied():
    model = tiny_gpt(50, n_layer=2, n_head=2, context_length=12)
    ids = [3, 7, 1, 49, 0, 3, 7]
    logits, cache = model.run_with_cache(ids, names_filter=block_page_names(2) + [
        act_name("z", 0), act_name("z", 1), act_name("mlp_out", 0), act_name("mlp_out", 1)])
    return model, ids, logits, cache


def test_ov_logits_in_blocks_are_the_whole_product(tied, monkeypatch):
    model, *_ = tied
    monkeypatch.setattr(C, "UNEMBED_ROWS", 7)  # blocks that do not divide |V|
    for layer, head, source in [(0, 0, 3), (1, 1, 49)]:
        e = model.embed.weight.detach().double()[source]
        want = e @ C.ov_circuit(C.head_weights(model, layer, head)) @ C.unembedding(model)
        torch.testing.assert_close(C.ov_token_logits(model, layer, head, source), want,
                                   rtol=1e-12, atol=1e-12)


def test_commitment_a_stage_at_a_time_is_the_lens_of_all_stages(tied):
    model, ids, logits, cache = tied
    com = A.commitment_layers(model, cache)
    states = torch.stack([analysis.layernorm_input(cache, 0)] + [
        cache[act_name("resid_post", ly)][0] for ly in range(2)])  # (S, T, d)
    want = model.unembed(model.ln_final(states)).argmax(-1)  # (S, T)
    assert torch.equal(com.top1, want)
    assert torch.equal(com.top1[-1], logits[0].argmax(-1))


def test_attribution_still_adds_up_to_the_logit(tied):
    model, ids, logits, cache = tied
    for pos, token in [(-1, 5), (2, 49)]:
        a = A.logit_attribution(model, cache, pos, token)
        assert a.total == pytest.approx(float(logits[0, pos, token]), abs=1e-4)


@pytest.mark.parametrize("config", [{}, {"positional": "rope"}, {"positional": "none"}])
def test_the_order_checks_last_row_is_the_full_passes(config, monkeypatch):
    model = tiny_gpt(40, n_layer=2, context_length=10, **config)
    ids = [4, 9, 1, 33, 2, 8]
    hows = ({}, {"positions": False}, {"positions": False, "causal": False})
    got = [last_logits(model, ids, **how) for how in hows]
    monkeypatch.setattr(P, "_last_row", lambda x, name: x)  # every row unembedded
    for how, row in zip(hows, got, strict=True):
        torch.testing.assert_close(row, last_logits(model, ids, **how), rtol=0, atol=1e-5)
    with torch.no_grad():
        torch.testing.assert_close(got[0], model(ids)[0, -1].double(), rtol=0, atol=1e-5)


def test_ablation_reads_one_row_and_gives_the_full_passes_row():
    model = tiny_gpt(40, n_layer=2, context_length=10)
    ids = [4, 9, 1, 33, 2, 8]
    for position in (-1, 2):
        for heads in (None, {0: [1], 1: [0, 1]}):
            got = am.probs_with_heads_off(model, ids, heads, position)
            with torch.no_grad(), hooks(model, []), am.ablate_heads(model, heads or {}):
                want = torch.softmax(model(ids)[0, position].float(), -1).numpy()
            np.testing.assert_allclose(got, want, atol=1e-6)


def test_induction_scores_without_logits_are_the_scores_with_them():
    tok = CharTokenizer()
    tok.train("abcdefghijklmnopqrstuvwxyz0123456789")
    model = tiny_gpt(tok.vocab_size, n_layer=2, context_length=48)
    for length in (10, 20):
        full = induction.induction_test(model, tok, length, n=4)
        lean = induction.induction_test(model, tok, length, n=4, copy=False)
        torch.testing.assert_close(lean.scores, full.scores, rtol=0, atol=1e-6)
        assert 0 <= full.copy_accuracy <= 1 and np.isnan(lean.copy_accuracy)


def test_concurrent_askers_compute_a_missing_key_once():
    lru, calls = ByteLRU(10_000), []

    def slow() -> np.ndarray:
        calls.append(1)
        time.sleep(0.2)
        return np.arange(10)

    got: list[np.ndarray] = []
    threads = [threading.Thread(target=lambda: got.append(lru.get_or_compute("k", slow)))
               for _ in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and len(got) == 5 and all(g is got[0] for g in got)
    assert "k" in lru and "other" not in lru


def test_a_failed_computation_is_not_kept_and_the_next_asker_tries_again():
    lru = ByteLRU(10_000)

    def fail() -> None:
        raise ValueError("no")

    with pytest.raises(ValueError):
        lru.get_or_compute("k", fail)
    assert lru.get_or_compute("k", lambda: 3) == 3


def test_the_vocabulary_pca_is_fitted_once_and_its_2d_is_the_3d_first_two_columns():
    tok = CharTokenizer()
    tok.train("abcdefghijklmnopqrstuvwxyz ,.")
    model = initial_model(GPTConfig(vocab_size=tok.vocab_size, context_length=8, d_model=16,
                                    n_layer=1, n_head=2), 3).eval()
    picked = Picked("tiny-pca-test", Checkpoint(model, tok), bundled=True)
    model_cache._wide().clear()
    three, r3 = model_cache.vocab_pca(picked, 3)
    two, r2 = model_cache.vocab_pca(picked, 2)
    assert np.shares_memory(two, three)  # one fit
    E = model.embed.weight.detach().numpy()
    rows = analysis.ordinary_rows(tok.special_tokens, len(E))
    want, want_ratio = analysis.pca(E, 2, fit_rows=rows)
    np.testing.assert_allclose(two[rows], want[rows], atol=1e-6)
    np.testing.assert_allclose(r2, want_ratio, rtol=1e-6)
    stored = model_cache._wide().keys()
    keys = [k for k in stored if k[1] == "tiny-pca-test"]
    assert len(keys) == 1
    model_cache._wide().clear()


def test_a_figures_bytes_count_its_arrays_and_its_hover_texts():
    import plotly.graph_objects as go

    from gptviz.app.serving.lru import nbytes

    z = np.zeros((100, 100))
    small = go.Figure(go.Heatmap(z=z))
    texts = [[f"row {i}, column {j}: 0.000" for j in range(100)] for i in range(100)]
    hovered = go.Figure(go.Heatmap(z=z, text=texts))
    assert nbytes(small) >= z.nbytes
    assert nbytes(hovered) - nbytes(small) >= sum(len(t) for row in texts for t in row)


def test_a_released_session_lease_collects_and_trims_once(monkeypatch):
    from gptviz.app.serving import sessions

    done = threading.Event()
    monkeypatch.setattr(sessions, "TRIM_AFTER_S", 0.01)
    monkeypatch.setattr(sessions, "collect_and_trim", done.set)
    sessions.Lease().close()
    assert done.wait(5)
    assert isinstance(sessions.give_back(), bool)


def test_the_prompts_stores_are_emptied_once_no_session_has_been_connected_for_a_while(
        monkeypatch):
    """Two sessions leave: the registered stores are emptied once Streamlit no longer keeps
    them and IDLE_S has passed, not before and not if a session arrived meanwhile."""
    from gptviz.app.serving import sessions
    from gptviz.app.serving.lru import ByteLRU

    emptied = threading.Event()
    monkeypatch.setattr(sessions, "IDLE_S", 0.05)
    monkeypatch.setattr(sessions, "_kept_s", lambda: 0.0)
    monkeypatch.setattr(sessions, "_clears", [])
    monkeypatch.setattr(sessions, "_live", 0)
    store = ByteLRU(1 << 20)
    store.get_or_compute("prompt", lambda: np.ones(100))
    sessions.when_idle(store.clear)
    sessions.when_idle(emptied.set)
    a, b = sessions.Lease(), sessions.Lease()
    a.close()
    assert not emptied.wait(0.3) and "prompt" in store  # b is still connected
    b.close()
    assert emptied.wait(5) and "prompt" not in store
    emptied.clear()
    store.get_or_compute("prompt", lambda: np.ones(100))
    monkeypatch.setattr(sessions, "IDLE_S", 1e9)  # the check below is called by hand
    c = sessions.Lease()
    seen = sessions._arrivals
    c.close()
    sessions.Lease()  # arrives before the idle check: nothing is emptied
    assert not sessions.empty_if_idle(seen) and "prompt" in store


def test_a_class_s_expired_sessions_are_shut_down_and_let_go(monkeypatch):
    """Streamlit's store of disconnected sessions hides an expired one from reads but keeps
    it, never shut down, until its next write: once the class has left, the expired ones,
    and only those, are shut down on the runtime's loop, their state emptied, and dropped."""
    import gc
    import weakref
    from types import SimpleNamespace

    from streamlit.runtime import Runtime
    from streamlit.runtime.caching.ttl_cache import TTLCache
    from streamlit.runtime.memory_session_storage import MemorySessionStorage
    from streamlit.runtime.session_manager import SessionInfo
    from streamlit.runtime.state.session_state import SessionState

    from gptviz.app.speedups.session import end_expired_sessions

    events: list[str] = []

    class Session:  # what the store and the ending read of an AppSession
        def __init__(self, sid: str) -> None:
            self.id, self.session_state = sid, SessionState()
            self.session_state["history"] = np.ones(1000)
            self.session_state._new_widget_state.widget_metadata["button"] = np.ones(10)

        def shutdown(self) -> None:
            events.append(f"shutdown {self.id} on {threading.current_thread().name}")

    class Loop:  # the runtime's loop, on a thread of its own
        def call_soon_threadsafe(self, fn):
            threading.Thread(target=fn, name="loop").start()

    now = [0.0]
    storage = MemorySessionStorage()
    storage._cache = TTLCache(maxsize=128, ttl=10, timer=lambda: now[0])
    runtime = SimpleNamespace(_session_mgr=SimpleNamespace(_session_storage=storage),
                              _get_async_objs=lambda: SimpleNamespace(eventloop=Loop()))
    monkeypatch.setattr(Runtime, "instance", staticmethod(lambda: runtime))
    gone = Session("gone")
    storage.save(SessionInfo(client=None, session=gone))
    now[0] = 5.0
    storage.save(SessionInfo(client=None, session=Session("recent")))
    held, state = weakref.ref(gone), gone.session_state
    del gone
    now[0] = 12.0  # "gone" expired, "recent" not
    gc.collect()
    assert [i.session.id for i in storage.list()] == ["recent"]
    assert held() is not None  # hidden from reads, still held
    assert end_expired_sessions() == 1
    assert events == ["shutdown gone on loop"]
    assert "history" not in state  # its state emptied, for whatever still reaches it
    assert not state._new_widget_state.widget_metadata  # widgets' callbacks hold arguments
    gc.collect()
    assert held() is None
    assert [i.session.id for i in storage.list()] == ["recent"]
    assert end_expired_sessions() == 0 and len(events) == 1


MAPPED_PROBE = """
import ctypes, sys
from gptviz.app.serving.memory import MAPPED_BYTES, blocks_mapped_apart
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
def rss():
    return next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmRSS"))
libc.free(libc.malloc(24 * 2**20))  # freeing a mapped 24 MB block lifts glibc's threshold
size = MAPPED_BYTES + 2**20
with blocks_mapped_apart() if sys.argv[1] == "apart" else open("/dev/null"):
    block = libc.malloc(size)
    ctypes.memset(block, 1, size)
    pin = libc.malloc(1 << 16)  # something after it on the heap
    before = rss()
    libc.free(block)
    print((before - rss()) * 1024 / size)
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists()
                    or platform.libc_ver()[0] != "glibc", reason="glibc's malloc, on Linux")
def test_a_block_of_a_few_mb_goes_back_to_the_system_inside_blocks_mapped_apart():
    """glibc's default puts a block of a few MB on the heap once a larger one was freed,
    and freeing it leaves a hole the process keeps; inside ``blocks_mapped_apart`` it is
    mapped apart and freeing it returns its pages."""
    def returned(mode: str) -> float:
        out = subprocess.run([sys.executable, "-c", MAPPED_PROBE, mode], capture_output=True,
                             text=True, check=True, cwd=Path(__file__).resolve().parents[1])
        return float(out.stdout.strip())

    assert returned("apart") > 0.95
    assert returned("default") < 0.05
