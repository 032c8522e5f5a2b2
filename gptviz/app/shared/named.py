"""Models the server's owner names (``--models``, ``GPTVIZ_MODELS``, the Hugging Face
cache): found once a minute, each loaded once per server and shared read-only like a
bundled model, within one memory budget (``budget.named_model_budget``). A model over
the budget is listed with its size and refused with the figures; the least recently
used ones are unloaded to make room for another.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import streamlit as st

from gptviz.app.serving.budget import Resident, named_model_budget
from gptviz.app.shared.spinner import said
from gptviz.checkpoints.folder import Checkpoint, CheckpointError, Limits, freeze, load_checkpoint
from gptviz.checkpoints.model_dirs import FoundModel, find_models, hf_cache, named_dirs
from gptviz.i18n import N_, _, current, number


def size_text(n_bytes: int) -> str:
    """Bytes for a person.

    >>> size_text(497_759_232), size_text(1_421_000_000)
    ('498 MB', '1.42 GB')
    """
    if n_bytes >= 1e9:
        return _("{n} GB").format(n=number(n_bytes / 1e9, 2))
    return _("{n} MB").format(n=number(n_bytes / 1e6, 0, grouping=True))


@st.cache_resource(show_spinner=False)
def named_budget() -> int:
    return named_model_budget()


@st.cache_resource(show_spinner=False)
def _resident() -> Resident:
    return Resident(named_budget())


@st.cache_resource(ttl=60, show_spinner=False)
def _catalogue(dirs: tuple[tuple[str, str], ...], cache: str | None,
               taken: tuple[str, ...], lang: str) -> dict[str, FoundModel]:
    """The named models, with why each unusable one is (``problem``) said in ``lang``."""
    found = find_models([(Path(d), s) for d, s in dirs], Path(cache) if cache else None, taken)
    return {f.name: f for f in found}


def named_models(taken: tuple[str, ...]) -> dict[str, FoundModel]:
    """Name -> the server's named models (those that cannot be used carry a ``problem``),
    named apart from ``taken`` (the bundled models)."""
    dirs = tuple((str(p), source) for p, source in named_dirs(sys.argv, os.environ))
    cache = hf_cache(os.environ)
    return _catalogue(dirs, str(cache) if cache else None, taken, current())


@said(st.cache_resource, N_("Loading the model (once for the whole server)…"))
def _load(path: str, max_params: int) -> Checkpoint:
    """A named model, shared by every session: never modify it."""
    ckpt = load_checkpoint(path, limits=Limits(params=max_params, bytes=8 * max_params))
    freeze(ckpt.model)
    return ckpt


def over_budget(found: FoundModel) -> str:
    """Why ``found`` does not fit this server's budget, or ""."""
    budget = named_budget()
    if found.bytes <= budget:
        return ""
    return _("{name} has {params} parameters: {size} as float32, more than the {budget} this "
             "server gives the models it names (set GPTVIZ_MODEL_MEMORY_MB to change that, if "
             "the machine has the memory).").format(
        name=found.name, params=number(found.params, 0, grouping=True),
        size=size_text(found.bytes), budget=size_text(budget))


def load_named(found: FoundModel) -> Checkpoint:
    """The model loaded (once per server), after unloading the least recently used named
    models it needs room from; CheckpointError when it is refused."""
    if found.problem or (problem := over_budget(found)):
        raise CheckpointError(found.problem or problem)
    key = str(found.path)
    for old in _resident().make_room(key, found.bytes):
        _load.clear(old, named_budget() // 4)
    try:
        return _load(key, named_budget() // 4)
    except CheckpointError:  # the loader's one error, unreadable files included
        _resident().forget(key)
        raise


def label(found: FoundModel) -> str:
    """How the picker lists it, e.g. 'gpt2 · 124M params, 498 MB · --models'."""
    head = _("{name} · {millions}M params, {size}").format(
        name=found.name, millions=number(found.params / 1e6, 1, grouping=True),
        size=size_text(found.bytes))
    if over_budget(found):
        return head + " · " + _("too big for this server ({budget})").format(
            budget=size_text(named_budget()))
    return f"{head} · {found.source}"


def named_list(named: dict[str, FoundModel]) -> None:
    """Sidebar: every model the server names, with its size and source, or why it
    cannot be used (nothing when it names none)."""
    if not named:
        return
    bad = sum(bool(f.problem) for f in named.values())
    title = (_("Models this server names ({n}, {bad} unusable)") if bad
             else _("Models this server names ({n})")).format(n=len(named), bad=bad)
    with st.sidebar.expander(title, icon=":material/warning:" if bad else ":material/folder:"):
        for f in named.values():
            if f.problem:
                st.warning(f.problem)
            else:
                st.markdown(f"- {label(f)}")
