"""Cached model computations for the pages, keyed on (model, inputs, settings).

Bundled models are shared by every session, so their results go in one global
``st.cache_data`` keyed on the model's name. A model trained or uploaded in a
session goes in a session-scoped cache keyed on ``Picked.cache_key``, so no other
user ever sees it (or collides with a model of the same name). ``per_model`` is
the one decorator that makes that choice; each cached computation below is a
plain function of a ``Checkpoint`` under it. Figures have their own store
(``figure_cache``).
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np
import streamlit as st
import torch

from gptviz.analysis import attention as am
from gptviz.analysis import core as analysis
from gptviz.app.serving.lru import ByteLRU
from gptviz.app.serving.memory import then_give_back
from gptviz.app.serving.sessions import when_idle
from gptviz.app.serving.threads import one_thread
from gptviz.app.shared.chips import show_bytes
from gptviz.app.shared.picker import Picked
from gptviz.app.speedups.session import in_script_run
from gptviz.checkpoints.folder import Checkpoint, freeze, initial_model, training_seed
from gptviz.i18n import _, number
from gptviz.model import GPT
from gptviz.model.hooks import ActivationCache
from gptviz.model.names import act_name

R = TypeVar("R")


SHARED_BYTES = 64 * 2**20  # results for bundled models, kept for every session
SESSION_BYTES = 16 * 2**20  # results for one session's own models


@st.cache_resource(show_spinner=False)
def _shared() -> ByteLRU:
    """One store per server, bounded in bytes (a count of entries says nothing of memory:
    a 256-token forward pass holds ~10 MB, a 20-token one ~0.3 MB); emptied when the
    class has left (``serving.sessions``)."""
    return ByteLRU(SHARED_BYTES)


@st.cache_resource(show_spinner=False, scope="session")
def _session_results() -> ByteLRU:
    return ByteLRU(SESSION_BYTES)


_UNATTACHED = ByteLRU(SESSION_BYTES)  # outside a session's script run (a test, a script)


def in_session() -> bool:
    """Whether this thread runs a session's script (session-scoped caches need one)."""
    return in_script_run()  # the wing asks Streamlit (speedups.session)


def _private() -> ByteLRU:
    """This session's store: released when it disconnects (``serving.sessions``); outside a
    session's run, one store of its own."""
    return _session_results() if in_session() else _UNATTACHED


def _store(picked: Picked) -> ByteLRU:
    return _shared() if picked.bundled else _private()


WIDE_BYTES = 48 * 2**20  # results that read a whole model, every model of the server together


@st.cache_resource(show_spinner=False)
def _wide() -> ByteLRU:
    """Results that read a whole model (its vocabulary's PCA, every head on the induction
    test): one store per server, apart from the prompts' results so that a class's prompts
    never push them out, and bounded in bytes like them (a few MB per model); emptied when
    the class has left, like them."""
    return ByteLRU(WIDE_BYTES)


when_idle(_shared.clear)  # the stores are dropped, and made anew when next asked for
when_idle(_wide.clear)


def once_per_model(message: str | Callable[[Checkpoint], str]
                   ) -> Callable[[Callable[..., R]], Callable[..., R]]:
    """``fn(checkpoint, *args)`` becomes ``cached(picked, *args)``, computed once per server
    and model (a session's own model: once in that session), when a page first needs it,
    under a spinner that says ``message`` (or ``message(checkpoint)``) and the seconds it
    has taken. Sessions that ask meanwhile wait for that one computation."""
    def wrap(fn: Callable[..., R]) -> Callable[..., R]:
        @functools.wraps(fn)
        def cached(picked: Picked, *args: Any) -> R:
            store = _wide() if picked.bundled else _private()
            key = (fn.__qualname__, picked.cache_key, args)

            def compute() -> R:
                with one_thread(picked.checkpoint.model):
                    return fn(picked.checkpoint, *args)

            if key in store:
                return store.get_or_compute(key, compute)
            text = message(picked.checkpoint) if callable(message) else _(message)  # N_
            said = (_("{what}: once for the whole class, then every view reuses it…")
                    if picked.bundled else
                    _("{what}: once for this session, then every view reuses it…"))
            with st.spinner(said.format(what=text),
                            show_time=True):
                return store.get_or_compute(key, then_give_back(compute))

        return cached

    return wrap


def once(key: tuple, message: str, compute: Callable[[], R]) -> R:
    """``compute()`` once per server for ``key``, in the store of whole-model results, under
    a spinner saying ``message`` the first time: for what depends on no session's data (a
    model's shapes and seed). ``key`` must hold everything the result depends on."""
    store = _wide()
    if key in store:
        return store.get_or_compute(key, compute)
    with st.spinner(_("{what}: once for the whole class, then every view reuses it…").format(
                        what=message),
                    show_time=True):
        return store.get_or_compute(key, then_give_back(compute))


def shared_result(key: tuple, compute: Callable[[], R], message: str | None = None) -> R:
    """``compute()`` once per ``key`` among the prompts' results every session shares (what
    depends on a model's shapes and a prompt, not on a session's own model), under a spinner
    saying ``message`` while it is computed, if given."""
    store = _shared()
    if message is None or key in store:
        return store.get_or_compute(key, then_give_back(compute))
    with st.spinner(message):
        return store.get_or_compute(key, then_give_back(compute))


def wide_result(picked: Picked, name: str, args: tuple, compute: Callable[[], R],
                message: str) -> R:
    """``compute()`` once per (model, ``name``, ``args``) in the store of whole-model results
    (a session's own model: in that session's store), under a spinner saying ``message``
    while it is computed: for what reads the whole model for one input (the Learning page's
    gradient of every parameter), which a class's prompts must not push out."""
    store = _wide() if picked.bundled else _private()
    key = (name, picked.cache_key, args)

    def run() -> R:
        with one_thread(picked.checkpoint.model):
            return compute()

    if key in store:
        return store.get_or_compute(key, run)
    with st.spinner(message, show_time=True):
        return store.get_or_compute(key, then_give_back(run))


def cached_result(picked: Picked, name: str, args: tuple, compute: Callable[[], R]) -> R:
    """``compute()`` once per (model, ``name``, ``args``), kept like ``per_model``'s results:
    for a computation that reads more than the checkpoint (a stored forward pass, the
    prompt's tokens). ``args`` must hold everything the result depends on."""
    def run() -> R:
        with one_thread(picked.checkpoint.model):
            return compute()

    return _store(picked).get_or_compute((name, picked.cache_key, args), then_give_back(run))


def per_model(fn: Callable[..., R]) -> Callable[..., R]:
    """``fn(checkpoint, *args)`` becomes ``cached(picked, *args)``: shared across sessions
    for a bundled model, kept in this session only for one trained or uploaded here.
    ``args`` must be hashable (tuples, ints, strings). Results are shared, never copied:
    their arrays are read-only."""
    @functools.wraps(fn)
    def cached(picked: Picked, *args: Any) -> R:
        def compute() -> R:
            with one_thread(picked.checkpoint.model):  # small ops: one thread is faster
                return fn(picked.checkpoint, *args)

        return _store(picked).get_or_compute(  # what a new result's pass freed leaves RSS
            (fn.__qualname__, picked.cache_key, args), then_give_back(compute))

    return cached


@per_model
def _forward(ckpt: Checkpoint, ids: tuple[int, ...], names: tuple[str, ...]
             ) -> tuple[dict[str, np.ndarray], np.ndarray]:
    logits, cache = ckpt.model.run_with_cache(list(ids), names_filter=list(names) or None)
    store = {k: analysis.to_numpy(v) for k, v in cache.items() if k != act_name("logits")}
    return store, analysis.to_numpy(logits[0, -1])


def activations(picked: Picked, ids: Sequence[int], names: Sequence[str]
                ) -> tuple[ActivationCache, np.ndarray]:
    """The forward pass of ``ids``: the named activations and the last logits (|V|,).

    >>> picked = Picked("tiny", Checkpoint(model, tokenizer), bundled=True)
    >>> cache, last = activations(picked, (5, 9, 2), [act_name("pattern", 0)])
    >>> list(cache), last.shape
    (['blocks.0.attn.hook_pattern'], (10,))
    """
    ids, names = tuple(int(i) for i in ids), tuple(names)
    store, last = _forward(picked, ids, _covering(picked, ids, names) or names)
    if names:  # only those asked for, in the forward order the pass stored them
        wanted = set(names)
        store = {k: v for k, v in store.items() if k in wanted}
    with warnings.catch_warnings():  # the shared arrays are read-only; so are these views
        warnings.filterwarnings("ignore", "The given NumPy array is not writable")
        return ActivationCache({k: torch.from_numpy(v) for k, v in store.items()}), last


def _covering(picked: Picked, ids: tuple[int, ...], names: tuple[str, ...]
              ) -> tuple[str, ...] | None:
    """The names of a stored forward pass of ``ids`` that kept all of ``names``, if any:
    the Lesson's pass holds what the Positional, Attention and Block pages read of the same
    prompt, so they share its arrays instead of running and storing their own.

    >>> picked = Picked("tiny", Checkpoint(model, tokenizer), bundled=True)
    >>> _ = activations(picked, (5, 9), ["hook_embed", "hook_pos_embed"])
    >>> _covering(picked, (5, 9), ("hook_pos_embed",)), _covering(picked, (5,), ("hook_embed",))
    (('hook_embed', 'hook_pos_embed'), None)
    """
    want = set(names)
    if not want:  # no names: every activation, which no filtered pass holds
        return None
    for key in reversed(_store(picked).keys()):  # the most recent first
        if len(key) != 3:  # a ``shared_result`` of its own shape, not a model's
            continue
        fn, model, args = key
        if fn == _forward.__qualname__ and model == picked.cache_key and args[0] == ids \
                and args[1] and want <= set(args[1]):
            return args[1]
    return None


PCA_AXES = 3  # the vocabulary's PCA keeps 3 axes; its 2-D view is the first two of them


@once_per_model(lambda ckpt: _("Finding the principal axes of all {n} rows of E").format(
    n=number(ckpt.config.vocab_size, 0, grouping=True)))
def _vocab_pca(ckpt: Checkpoint) -> tuple[np.ndarray, np.ndarray]:
    E = ckpt.model.embed.weight.detach().float().numpy()  # (|V|, d): the weights, not a copy
    rows = analysis.ordinary_rows(ckpt.tokenizer.special_tokens, E.shape[0])
    coords, ratio = analysis.pca(E, min(PCA_AXES, E.shape[1]), fit_rows=rows)  # (|V|, 3), (3,)
    left_out = np.setdiff1d(np.arange(E.shape[0]), rows)
    coords[left_out] = np.nan  # not drawn
    return coords, ratio


def vocab_pca(picked: Picked, k: int) -> tuple[np.ndarray, np.ndarray]:
    """PCA of the embedding matrix E on its ordinary rows (``analysis.ordinary_rows``):
    coordinates (|V|, k), NaN for the special tokens left out, and explained-variance
    ratios (k,). Computed once per model for k = 3 (the axes are eigenvectors in order,
    each signed on its own, so the 2-D view is the 3-D one's first two columns)."""
    coords, ratio = _vocab_pca(picked)
    return coords[:, :k], ratio[:k]


@per_model
def _ablation(ckpt: Checkpoint, ids: tuple[int, ...], heads: tuple[tuple[int, int], ...]
              ) -> tuple[np.ndarray, np.ndarray]:
    chosen: dict[int, list[int]] = {}
    for layer, head in heads:
        chosen.setdefault(layer, []).append(head)
    return am.ablation_effect(ckpt.model, list(ids), chosen)  # (|V|,), (|V|,)


def ablation(picked: Picked, ids: Sequence[int], heads: Sequence[tuple[int, int]]
             ) -> tuple[np.ndarray, np.ndarray]:
    """P(next token) (|V|,) with all heads, and with ``heads`` [(layer, head), …] zeroed."""
    return _ablation(picked, tuple(int(i) for i in ids),
                     tuple(sorted((int(ly), int(h)) for ly, h in heads)))


@once_per_model(lambda ckpt: _("Writing out the {n} vocabulary entries").format(
    n=number(ckpt.config.vocab_size, 0, grouping=True)))
def vocab_labels(ckpt: Checkpoint) -> list[str]:
    """Every vocabulary entry as visible text, by id, e.g. ['\\x00', …, '·the', …]."""
    tok = ckpt.tokenizer
    return [show_bytes(tok.id_to_bytes(i)) for i in range(tok.vocab_size)]


def untrained_twin(ckpt: Checkpoint) -> GPT:
    """The model before its first step: same shapes, and the seed its card records, so it
    is exactly the trainer's step 0 (read-only). Built at each call (~20 ms for the
    bundled models) and not kept: callers cache what they compute with it, not its weights
    (4 MB for the default model, up to 12 MB for one the Training page trains)."""
    return freeze(initial_model(ckpt.config, training_seed(ckpt.card)))
