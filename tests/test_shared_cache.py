"""The pages' shared forward passes: a page whose activations a stored pass of the same
prompt already holds reads that pass (one copy, one forward) and gets exactly what its own
pass would have given; the untrained twin is the trainer's step 0 and is not kept."""

from __future__ import annotations

import platform
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from gptviz.app.shared import cache as model_cache
from gptviz.app.shared.picker import Picked
from gptviz.checkpoints.folder import Checkpoint, initial_model
from gptviz.model import GPTConfig
from gptviz.model.names import block_page_names, embedding_names
from gptviz.tokenizers.char import CharTokenizer

LESSON = list(dict.fromkeys([*block_page_names(2), "blocks.1.attn.hook_q"]))


@pytest.fixture
def picked():
    tok = CharTokenizer()
    tok.train("abcdefgh ")
    model = initial_model(GPTConfig(vocab_size=tok.vocab_size, context_length=16, d_model=16,
                                    n_layer=2, n_head=2), 3)
    model.eval()
    model_cache._shared().clear()
    yield Picked("tiny-cache-test", Checkpoint(model, tok), bundled=True)
    model_cache._shared().clear()


def _forwards() -> list:
    """The stored forward passes (a ByteLRU's keys: (function, model, args))."""
    stored = model_cache._shared().keys()
    return [k for k in stored if k[0] == model_cache._forward.__qualname__]


def test_a_subset_reads_the_stored_pass_and_equals_its_own(picked):
    ids = picked.checkpoint.tokenizer.encode("bad cafe")
    wide, wide_last = model_cache.activations(picked, ids, LESSON)
    names = [*embedding_names(), "blocks.1.hook_resid_post"]
    narrow, last = model_cache.activations(picked, ids, names[::-1])  # order asked: any
    assert len(_forwards()) == 1  # no second pass stored
    assert list(narrow) == names  # forward order, only those asked for
    logits, direct = picked.checkpoint.model.run_with_cache(ids, names_filter=names)
    for name in names:
        assert np.shares_memory(narrow[name].numpy(), wide[name].numpy())  # one copy
        torch.testing.assert_close(narrow[name], direct[name], rtol=0, atol=0)
    np.testing.assert_array_equal(last, logits[0, -1].numpy())
    assert last is wide_last


def test_another_prompt_or_a_name_not_kept_runs_its_own_pass(picked):
    tok = picked.checkpoint.tokenizer
    model_cache.activations(picked, tok.encode("bad cafe"), LESSON)
    model_cache.activations(picked, tok.encode("bad"), embedding_names())  # another prompt
    model_cache.activations(picked, tok.encode("bad cafe"),
                            ["blocks.0.attn.hook_scores"])  # not in LESSON
    assert len(_forwards()) == 3
    assert model_cache._covering(picked, tuple(tok.encode("bad cafe")), ()) is None  # "all"


def test_the_untrained_twin_is_step_0_and_not_kept(picked):
    picked.checkpoint.card["train_config"] = {"seed": 3}
    a, b = (model_cache.untrained_twin(picked.checkpoint) for _ in range(2))
    assert a is not b  # built at each call: nothing holds its weights afterwards
    want = initial_model(picked.checkpoint.config, 3).state_dict()
    for name, tensor in a.state_dict().items():
        torch.testing.assert_close(tensor, want[name], rtol=0, atol=0)
    assert not any(p.requires_grad for p in a.parameters())


def test_a_computed_result_hands_freed_memory_back(monkeypatch):
    """then_give_back trims once per computation, after it, even when it raises."""
    from gptviz.app.serving import memory

    calls = []
    monkeypatch.setattr(memory, "give_back", lambda: calls.append("trim") or True)
    wrapped = memory.then_give_back(lambda: calls.append("compute") or 42)
    assert calls == [] and wrapped() == 42 and calls == ["compute", "trim"]

    def fails() -> None:
        raise ValueError("bad input")
    with pytest.raises(ValueError):
        memory.then_give_back(fails)()
    assert calls[-1] == "trim"


HEAP = """
import ctypes, sys, threading
from gptviz.app.serving import memory

def rss_anon_mb():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) / 1024 for line in f if line.startswith("RssAnon"))

libc = ctypes.CDLL(None)
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
"""  # the preamble of the fresh interpreters below

GIVE_BACK = HEAP + """
if memory._malloc_trim() is None:
    raise SystemExit("no malloc_trim")
blocks, pins = [], []
for _ in range(1600):  # 100 MB of heap blocks, each followed by a small live one
    blocks.append(libc.malloc(64 * 1024))
    ctypes.memset(blocks[-1], 1, 64 * 1024)  # touched: resident
    pins.append(libc.malloc(32))  # so no freed block merges into the heap's top
for b in blocks:
    libc.free(b)
kept = rss_anon_mb()
print(memory.give_back(), round(kept - rss_anon_mb()))
"""


def test_give_back_returns_free_pages_on_glibc():
    """On glibc, blocks freed in the middle of the heap stay resident until give_back():
    then RssAnon falls by most of their 100 MB. A fresh interpreter, so that what this
    test process loaded (torch, pyarrow) does not decide how its heap looks."""
    if platform.system() != "Linux":
        pytest.skip("RssAnon is Linux's; malloc_trim is glibc's")
    run = subprocess.run([sys.executable, "-c", GIVE_BACK], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[1], timeout=60)
    if "no malloc_trim" in run.stderr:
        pytest.skip("this C library has no malloc_trim")
    trimmed, freed_mb = run.stdout.split()
    assert trimmed == "True" and int(freed_mb) > 50, run.stdout + run.stderr


THREAD_HEAP = HEAP + """
libc.free(libc.malloc(30 * 2**20))  # a mapped block freed: glibc moves its thresholds up
if sys.argv[1] == "fixed":
    memory.trim_thread_heaps()

def script_run():  # 40 MB of blocks on this thread's heap, then freed
    blocks = [libc.malloc(64 * 1024) for _ in range(640)]
    for b in blocks:
        ctypes.memset(b, 1, 64 * 1024)
    for b in reversed(blocks):
        libc.free(b)

before = rss_anon_mb()
run = threading.Thread(target=script_run)
run.start()
run.join()
memory.give_back()
print(round(rss_anon_mb() - before))
"""


def test_a_finished_thread_s_heap_is_handed_back():
    """A thread (a script run) frees 40 MB at its heap's top. glibc, once its thresholds
    have moved, keeps it resident, and ``malloc_trim`` does not trim a thread's heap; after
    ``trim_thread_heaps`` at most ``TOP_BYTES`` of it stays. Fresh interpreters, as above."""
    from gptviz.app.serving.memory import TOP_BYTES

    if platform.system() != "Linux":
        pytest.skip("RssAnon is Linux's; the heaps are glibc's")
    kept = {}
    for how in ("moving", "fixed"):
        run = subprocess.run([sys.executable, "-c", THREAD_HEAP, how], capture_output=True,
                             text=True, cwd=Path(__file__).resolve().parents[1], timeout=60)
        assert run.returncode == 0, run.stderr
        kept[how] = int(run.stdout)
    if kept["moving"] < 30:
        pytest.skip(f"this C library handed the thread's heap back itself ({kept})")
    assert kept["fixed"] <= TOP_BYTES / 2**20, kept


def test_keys_and_small_values_count_against_the_budget():
    """A key holding a long prompt, and a small dataclass result, are counted: a class
    typing 20,000-character prompts cannot grow the shared store past its budget."""
    from dataclasses import dataclass

    from gptviz.app.serving.lru import ENTRY_BYTES, ByteLRU

    @dataclass(frozen=True)
    class Sample:
        text: str

    store = ByteLRU(limit=100_000)
    for k in range(50):
        store.get_or_compute(("continue", "x" * 20_000 + str(k)), lambda: Sample("y" * 500))
    assert store.used <= 100_000 and len(store.keys()) == 4  # ~21 kB each, key included
    one = store.used // len(store.keys())
    assert one >= 20_000 + 500 + ENTRY_BYTES
