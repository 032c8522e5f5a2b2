"""Cached model computations for the pages, keyed on (model, inputs, settings).

Bundled models are shared by every session, so their results go in one global
``st.cache_data`` keyed on the model's name. A model trained or uploaded in a
session goes in a session-scoped cache keyed on ``Picked.cache_key``, so no other
user ever sees it (or collides with a model of the same name). ``per_model`` is
the one decorator that makes that choice; each cached computation below is a
plain function of a ``Checkpoint`` under it.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np
import streamlit as st
import torch

from gptviz import i18n
from gptviz.analysis import attention as am
from gptviz.analysis import core as analysis
from gptviz.app.serving.lru import ByteLRU
from gptviz.app.serving.memory import then_give_back
from gptviz.app.serving.threads import one_thread
from gptviz.app.shared.chips import show_bytes
from gptviz.app.shared.picker import Picked
from gptviz.checkpoints.folder import Checkpoint, freeze, initial_model, training_seed
from gptviz.model import GPT
from gptviz.model.hooks import ActivationCache
from gptviz.model.names import act_name

R = TypeVar("R")


SHARED_BYTES = 64 * 2**20  # results for bundled models, kept for every session
SESSION_BYTES = 16 * 2**20  # results for one session's own models
SESSION_RESULTS = "gptviz_results"  # st.session_state key of that session's ByteLRU


@st.cache_resource(show_spinner=False)
def _shared() -> ByteLRU:
    """One store per server, bounded in bytes (a count of entries says nothing of memory:
    a 256-token forward pass holds ~10 MB, a 20-token one ~0.3 MB)."""
    return ByteLRU(SHARED_BYTES)


def _private() -> ByteLRU:
    """This session's store: freed with the session."""
    return st.session_state.setdefault(SESSION_RESULTS, ByteLRU(SESSION_BYTES))


def _store(picked: Picked) -> ByteLRU:
    return _shared() if picked.bundled else _private()


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
    for fn, model, args in reversed(_store(picked).keys()):  # the most recent first
        if fn == _forward.__qualname__ and model == picked.cache_key and args[0] == ids \
                and args[1] and want <= set(args[1]):
            return args[1]
    return None


@per_model
def _vocab_pca(ckpt: Checkpoint, k: int) -> tuple[np.ndarray, np.ndarray]:
    E = ckpt.model.embed.weight.detach().float().numpy()
    rows = analysis.ordinary_rows(ckpt.tokenizer.special_tokens, E.shape[0])
    coords, ratio = analysis.pca(E, k, fit_rows=rows)  # (|V|, k), (k,)
    left_out = np.setdiff1d(np.arange(E.shape[0]), rows)
    coords[left_out] = np.nan  # not drawn
    return coords, ratio


def vocab_pca(picked: Picked, k: int) -> tuple[np.ndarray, np.ndarray]:
    """PCA of the embedding matrix E on its ordinary rows (``analysis.ordinary_rows``):
    coordinates (|V|, k), NaN for the special tokens left out, and explained-variance
    ratios (k,)."""
    return _vocab_pca(picked, int(k))


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


@per_model
def vocab_labels(ckpt: Checkpoint) -> list[str]:
    """Every vocabulary entry as visible text, by id, e.g. ['\\x00', …, '·the', …]."""
    tok = ckpt.tokenizer
    return [show_bytes(tok.id_to_bytes(i)) for i in range(tok.vocab_size)]


@st.cache_resource(max_entries=24, show_spinner=False)
def _shared_figure(name: str, model_key: str, lang: str, args: tuple,
                   _build: Callable[[], Any]) -> Any:
    return _build()


@st.cache_resource(max_entries=8, show_spinner=False, scope="session")
def _private_figure(name: str, model_key: str, lang: str, args: tuple,
                    _build: Callable[[], Any]) -> Any:
    return _build()


def cached_figure(picked: Picked, name: str, args: tuple, build: Callable[[], Any]) -> Any:
    """``build()`` once per (model, name, args, the reader's language): for figures that
    cost more to build than to send (a plotly figure is only read by ``st.plotly_chart``,
    never changed, so one object can be shared). ``args`` must hold everything else the
    figure depends on; its titles and numbers are written in the language it is built in.

    >>> picked, build = Picked("tiny", Checkpoint(model, tokenizer), bundled=True), dict
    >>> cached_figure(picked, "grid", (1, 0), build) is cached_figure(picked, "grid", (1, 0), build)
    True
    """
    store = _shared_figure if picked.bundled else _private_figure
    return store(name, picked.cache_key, i18n.current(), args, build)


def untrained_twin(ckpt: Checkpoint) -> GPT:
    """The model before its first step: same shapes, and the seed its card records, so it
    is exactly the trainer's step 0 (read-only). Built at each call (~20 ms for the
    bundled models) and not kept: callers cache what they compute with it, not its weights
    (4 MB for the default model, up to 12 MB for one the Training page trains)."""
    return freeze(initial_model(ckpt.config, training_seed(ckpt.card)))
