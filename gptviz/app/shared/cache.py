"""Cached model computations for the model pages, keyed on (model, inputs, settings).

Bundled models are shared by every session, so their results go in one global
``st.cache_data`` keyed on the model's name. A model trained or uploaded in a
session goes in a session-scoped cache, keyed on its name and identity, so no
other user ever sees it (or collides with a model of the same name).

The work itself is in plain functions of a ``Checkpoint`` (``COMPUTE``); the
cache only decides where a result is kept.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import streamlit as st
import torch

from gptviz import analysis
from gptviz import attention_math as am
from gptviz.app.shared.chips import show_bytes
from gptviz.app.shared.picker import Picked
from gptviz.checkpoints import Checkpoint
from gptviz.model import GPT, GPTConfig
from gptviz.model.hooks import ActivationCache

FRESH_SEED = 0  # the "freshly initialised" model is GPT(config) under this seed


def _activations(ckpt: Checkpoint, ids: tuple[int, ...], names: tuple[str, ...]
                 ) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Named activations (float32 numpy, batch kept) and the last position's logits (|V|,)."""
    logits, cache = ckpt.model.run_with_cache(list(ids), names_filter=list(names) or None)
    store = {k: analysis.to_numpy(v) for k, v in cache.items() if k != "hook_logits"}
    return store, analysis.to_numpy(logits[0, -1])


def _pca(ckpt: Checkpoint, k: int) -> tuple[np.ndarray, np.ndarray]:
    return analysis.pca(ckpt.model.embed.weight, k)  # (|V|, k), (k,)


def _ablation(ckpt: Checkpoint, ids: tuple[int, ...], heads: tuple[tuple[int, int], ...]
              ) -> tuple[np.ndarray, np.ndarray]:
    chosen: dict[int, list[int]] = {}
    for layer, head in heads:
        chosen.setdefault(layer, []).append(head)
    return am.ablation_effect(ckpt.model, list(ids), chosen)  # (|V|,), (|V|,)


def _vocab_labels(ckpt: Checkpoint) -> list[str]:
    tok = ckpt.tokenizer
    return [show_bytes(tok.id_to_bytes(i)) for i in range(tok.vocab_size)]


COMPUTE: dict[str, Callable[..., Any]] = {
    "activations": _activations, "pca": _pca, "ablation": _ablation,
    "vocab_labels": _vocab_labels,
}


@st.cache_data(max_entries=48, show_spinner=False)
def _shared(what: str, model_key: str, args: tuple, _ckpt: Checkpoint) -> Any:
    return COMPUTE[what](_ckpt, *args)


@st.cache_data(max_entries=16, show_spinner=False, scope="session")
def _private(what: str, model_key: str, args: tuple, _ckpt: Checkpoint) -> Any:
    return COMPUTE[what](_ckpt, *args)


def compute(picked: Picked, what: str, *args: Any) -> Any:
    """``COMPUTE[what](checkpoint, *args)``, cached where ``picked`` may be seen.

    >>> compute(picked, "pca", 2)[0].shape      # (|V|, 2)
    """
    if picked.bundled:
        return _shared(what, picked.name, args, picked.checkpoint)
    key = f"{picked.name}#{id(picked.checkpoint.model)}"
    return _private(what, key, args, picked.checkpoint)


@st.cache_resource(max_entries=24, show_spinner=False)
def _shared_figure(name: str, model_key: str, args: tuple, _build: Callable[[], Any]) -> Any:
    return _build()


@st.cache_resource(max_entries=8, show_spinner=False, scope="session")
def _private_figure(name: str, model_key: str, args: tuple, _build: Callable[[], Any]) -> Any:
    return _build()


def cached_figure(picked: Picked, name: str, args: tuple, build: Callable[[], Any]) -> Any:
    """``build()`` once per (model, name, args): for figures that cost more to build than to
    send (a plotly figure is only read by ``st.plotly_chart``, never changed, so one object
    can be shared). ``args`` must hold everything the figure depends on.

    >>> fig = cached_figure(picked, "grid", (ids, layer, head), lambda: attention_grid(...))
    """
    if picked.bundled:
        return _shared_figure(name, picked.name, args, build)
    return _private_figure(name, f"{picked.name}#{id(picked.checkpoint.model)}", args, build)


def activations(picked: Picked, ids: Sequence[int], names: Sequence[str]
                ) -> tuple[ActivationCache, np.ndarray]:
    """The forward pass of ``ids``: the named activations and the last logits (|V|,).

    >>> cache, last = activations(picked, (5, 9, 2), ["blocks.0.attn.hook_pattern"])
    """
    store, last = compute(picked, "activations", tuple(int(i) for i in ids), tuple(names))
    return ActivationCache({k: torch.from_numpy(v) for k, v in store.items()}), last


def vocab_pca(picked: Picked, k: int) -> tuple[np.ndarray, np.ndarray]:
    """PCA of the embedding matrix E: coordinates (|V|, k) and explained-variance ratios (k,)."""
    return compute(picked, "pca", int(k))


def ablation(picked: Picked, ids: Sequence[int], heads: Sequence[tuple[int, int]]
             ) -> tuple[np.ndarray, np.ndarray]:
    """P(next token) (|V|,) with all heads, and with ``heads`` [(layer, head), …] zeroed."""
    return compute(picked, "ablation", tuple(int(i) for i in ids),
                   tuple(sorted((int(ly), int(h)) for ly, h in heads)))


def vocab_labels(picked: Picked) -> list[str]:
    """Every vocabulary entry as visible text, by id, e.g. ['\\x00', …, '·the', …]."""
    return compute(picked, "vocab_labels")


@st.cache_resource(max_entries=4, show_spinner=False)
def _fresh(config_json: str) -> GPT:
    """GPT(config) as initialised, before any training (no user data: safe to share)."""
    with torch.random.fork_rng():
        torch.manual_seed(FRESH_SEED)
        model = GPT(GPTConfig.from_dict(json.loads(config_json))).eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return model


def fresh_model(config: GPTConfig) -> GPT:
    """The untrained twin of a model: same shapes, weights as initialisation left them."""
    return _fresh(json.dumps(config.to_dict(), sort_keys=True))


@st.cache_data(max_entries=8, show_spinner=False)
def fresh_pca(config_json: str, k: int) -> tuple[np.ndarray, np.ndarray]:
    return analysis.pca(_fresh(config_json).embed.weight, k)


def fresh_vocab_pca(config: GPTConfig, k: int) -> tuple[np.ndarray, np.ndarray]:
    """PCA of the untrained embedding matrix (|V|, k), (k,)."""
    return fresh_pca(json.dumps(config.to_dict(), sort_keys=True), int(k))
