"""The model picker and the cached model loaders every model page shares.

Bundled models, and those the server's owner names (``named.py``: ``--models``,
``GPTVIZ_MODELS``, the Hugging Face cache), are loaded once per server
(``st.cache_resource``) and are strictly read-only: eval mode, no gradients. A named
model that is refused never replaces the one in use. Models a user trains or uploads
live in that user's ``st.session_state`` only, so nobody else sees them, and
count against one memory budget per server (``budget.py``): when it is full,
the oldest are unloaded and their session is told.
"""

from __future__ import annotations

import gc
from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from gptviz.app.serving.budget import ModelBudget, Shelf, model_bytes
from gptviz.app.serving.memory import give_back
from gptviz.app.shared.describe import describe, induction_line  # noqa: F401 - pages' import
from gptviz.app.shared.missing_model import SESSION_TAG, asked_name, missing_model_note
from gptviz.app.shared.named import label, load_named, named_list, named_models
from gptviz.app.shared.presenter import presenting
from gptviz.app.shared.spinner import said
from gptviz.checkpoints.folder import (
    DEFAULT_MODEL,
    MODELS_DIR,
    Checkpoint,
    CheckpointError,
    Limits,
    bundled_models,
    freeze,
    load_checkpoint,
    load_checkpoint_zip,
)
from gptviz.i18n import N_, _, current, number
from gptviz.train.plan import TrainingCaps

SESSION_MODELS = "gptviz_session_models"  # st.session_state key: a Shelf, name -> Checkpoint
# The model the pages last drew; why a chosen one was refused; the one to choose next run.
IN_USE, REFUSED, PENDING = "gptviz_model_in_use", "gptviz_model_refused", "gptviz_model_next"
MISSING = "gptviz_model_missing"  # a link's ?model= that is not here, for the notice
CHECKPOINT_UPLOAD_LIMIT = 20_000_000  # bytes of an uploaded checkpoint zip
# An upload may cost the server no more than a model the Training page trains: these follow
# from memory (a crafted zip must not make it allocate over ~100 MB), not from the format.
UPLOAD_LIMITS = Limits(
    params=TrainingCaps.from_env().max_params,  # the Training page's cap (3M: 12 MB)
    layers=48,  # a block costs ~50 kB of Python objects and ~8 ms to build, whatever its width
    attention=16_000_000,  # one full context's attention maps (64 MB); the Training page's
    # largest model (12 layers, 16 heads, context 256) has 12.6M
    bytes=64_000_000,  # the four files unpacked: ~3x the zip's limit
    json_bytes=2_000_000,  # each JSON file: up to ~50 MB of Python objects once parsed
)
MODEL_BUDGET = 256_000_000  # bytes of parameters and buffers of every session's models together


@dataclass(frozen=True)
class Picked:
    name: str
    checkpoint: Checkpoint
    bundled: bool

    @property
    def cache_key(self) -> str:
        """What caches key this model on: a bundled model's name is unique on the server; a
        session's model adds its identity (two sessions may each train a "trained-x")."""
        return self.name if self.bundled else f"{self.name}#{id(self.checkpoint.model)}"

    @property
    def link_value(self) -> str:
        """What ``?model=`` holds for it: the picker's label (a session's model is tagged)."""
        return self.name if self.bundled else f"{self.name}{SESSION_TAG}"


def _freeze(ckpt: Checkpoint) -> Checkpoint:
    freeze(ckpt.model)
    return ckpt


@said(st.cache_resource, N_("Loading the model…"))
def load_bundled(name: str) -> Checkpoint:
    """A bundled checkpoint, shared by every session: never modify it."""
    folder = bundled_models().get(name)
    if folder is None:
        raise CheckpointError(_("there is no bundled model named {name} in {folder}.").format(
            name=repr(name), folder=MODELS_DIR))
    return _freeze(load_checkpoint(folder))


def bundled_status() -> tuple[list[str], dict[str, str]]:
    """``_bundled_status``, each broken model's message in the reader's language."""
    good, broken = _bundled_status()
    return good, (_broken_bundled(tuple(broken), current()) if broken else {})


@st.cache_resource(show_spinner=False)
def _broken_bundled(names: tuple[str, ...], lang: str) -> dict[str, str]:
    """Why each broken bundled model does not load, said in ``lang`` (loaded again: the
    loader writes its message in the language being served)."""
    out = {}
    for name in names:
        folder = bundled_models().get(name)
        try:
            load_checkpoint(folder)
        except CheckpointError as exc:
            out[name] = f"{Path(folder).name}: {exc}"
    return out


@st.cache_resource(show_spinner=False)
def _bundled_status() -> tuple[list[str], dict[str, str]]:
    """Names of the bundled models that load, default first, and a message per broken one.
    Each is loaded to find out; only the default one is kept (every page opens on it): the
    others are dropped at once, and ``load_bundled`` loads one again when it is chosen
    (mathematics-char alone holds ~6 MB that a session which never picks it would pay)."""
    good, broken = [], {}
    for name, folder in bundled_models().items():
        try:
            if name == DEFAULT_MODEL:
                load_bundled(name)
            else:
                load_checkpoint(folder)
            good.append(name)
        except CheckpointError as exc:  # the loader's one error, unreadable files included
            broken[name] = f"{Path(folder).name}: {exc}"
    good.sort(key=lambda n: (n != DEFAULT_MODEL, n))
    # Reading a model frees ~2.5x its weights (file bytes, parsed tensors, the random
    # initial ones) in the middle of a malloc heap: hand those pages back (~6 MB).
    give_back()
    # What is alive now (the imports of torch, pandas and plotly, the bundled models) lives
    # as long as the server: take it out of the cyclic collector's scans, which otherwise
    # walk ~400k objects each time the oldest generation is collected.
    gc.freeze()
    return good, broken


@st.cache_resource(show_spinner=False)
def server_budget() -> ModelBudget:
    """The one memory budget of this server's trained and uploaded models."""
    return ModelBudget(MODEL_BUDGET)


def session_models() -> Shelf:
    """This session's trained and uploaded models by name (the budget may unload them)."""
    return st.session_state.setdefault(SESSION_MODELS, Shelf())


def add_session_model(name: str, ckpt: Checkpoint, origin: str = "trained") -> str:
    """Register a model for this session only, charged to the server's budget (which may
    unload older models, anyone's); returns the (unique) name used. ``origin`` is
    "trained" or "uploaded", for the note its session gets if it is unloaded in turn."""
    models = session_models()
    base, k = name, 2
    while name in models or name in bundled_models() or name in named_models(
            tuple(bundled_models())):
        name, k = f"{base} ({k})", k + 1
    note = (_("Your uploaded model {name} was unloaded to free memory for the class; upload "
              "it again.") if origin == "uploaded" else
            _("Your trained model {name} was unloaded to free memory for the class; train it "
              "again.")).format(name=repr(name))
    server_budget().admit(models, name, _freeze(ckpt), model_bytes(ckpt.model), note)
    return name


def _upload_checkpoint() -> None:
    # Behind a switch: a file uploader's code is fetched by every page that shows one, and
    # the sidebar is on every page (a bare page with one loads ~1.1x slower).
    if not st.sidebar.toggle(_("Upload a checkpoint"), key="upload_open",
                             help=_("Use a model trained elsewhere: a .zip as the Training "
                                    "page downloads it.")):
        return
    upload = st.sidebar.file_uploader(
        _("Upload a checkpoint (.zip)"), type=["zip"], key="model_upload",
        help=_("A zip of model.safetensors, config.json, tokenizer.json and card.json, as the "
               "Training page downloads it. Pickled files are never loaded."))
    if upload is None or st.session_state.get("model_upload_done") == upload.file_id:
        return
    st.session_state["model_upload_done"] = upload.file_id
    try:
        data = upload.getvalue()
        if len(data) > CHECKPOINT_UPLOAD_LIMIT:
            raise CheckpointError(_("the file is {size} MB; the limit is {limit} MB.").format(
                size=number(len(data) / 1e6, 1), limit=number(CHECKPOINT_UPLOAD_LIMIT / 1e6, 0)))
        ckpt = load_checkpoint_zip(data, UPLOAD_LIMITS)
        name = add_session_model(Path(upload.name).stem, ckpt, origin="uploaded")
        st.session_state["model"] = name
        st.sidebar.success(_("Loaded {name}: it is now in the model list.").format(
            name=repr(name)))
    except CheckpointError as exc:  # the loader raises nothing else on any upload
        st.sidebar.error(_("Cannot use {name}: {error}").format(name=upload.name, error=exc),
                         icon=":material/error:")


def model_picker() -> Picked | None:
    """Sidebar: choose a bundled, server-named, trained-in-this-session or uploaded model."""
    good, broken = bundled_status()
    for message in broken.values():
        st.sidebar.warning(_("Skipped a broken bundled model — {problem}").format(
            problem=message), icon=":material/warning:")
    named = named_models(tuple(bundled_models()))
    listed = {n: f for n, f in named.items() if not f.problem}
    named_list(named)
    box = st.sidebar.container()  # the list above the upload switch, drawn after it runs
    _upload_checkpoint()
    for note in session_models().take_notes():
        st.sidebar.warning(note, icon=":material/warning:")
    mine = dict(session_models())  # one view for this run: the budget may unload any time
    options = [*good, *listed, *mine]
    if not options:
        st.error(_("No model could be loaded. Train one on the Training page, or turn on "
                   "\"Upload a checkpoint\" in the sidebar."), icon=":material/error:")
        return None
    fallback = st.session_state.get(IN_USE) if st.session_state.get(IN_USE) in options \
        else options[0]
    if (pending := st.session_state.pop(PENDING, None)) in options:
        st.session_state["model"] = pending  # the run before refused what a link chose
    def shown_as(n: str) -> str:  # the pills' label, which is what the URL holds too
        return n if n in good or n in listed else f"{n}{SESSION_TAG}"

    raw = st.query_params.get("model")
    if raw in mine:  # a session's model named without its tag: the pills know only the label
        st.session_state["model"] = raw
    elif raw and raw not in map(shown_as, options):
        st.session_state[MISSING] = asked_name(raw)  # said once a model is shown instead
    if st.session_state.get("model") not in options:
        st.session_state.pop("model", None)
    # Pills, not a select box: every model in view at once, and no widget code to fetch
    # (a select box's made a bare page ~1.2x slower to open; pills share the page's bundle).
    name = box.pills(
        _("Model"), options, key="model", bind="query-params", persist_state="session",
        # a fixed default, as a select box's first option: the link names every other model
        required=True, default=options[0],
        format_func=shown_as,
        on_change=_keep_or_refuse, args=(listed, fallback),
        help=_("Bundled models and those the server names are shared and read-only; models "
               "you train or upload are visible to you only."))
    if refused := st.session_state.pop(REFUSED, None):
        st.sidebar.error(refused, icon=":material/error:")
    if name in listed:
        st.sidebar.caption(label(listed[name]))
    # the box's choice (None when the pills come back empty, e.g. after a page switch or an
    # empty ?model=), else the model in use, else ours
    for choice in dict.fromkeys(c for c in (name, fallback, *good) if c is not None):
        try:
            picked = (Picked(choice, mine[choice], bundled=False) if choice in mine else
                      Picked(choice, load_named(listed[choice]), bundled=True) if choice in
                      listed else Picked(choice, load_bundled(choice), bundled=True))
        except CheckpointError as exc:  # a link's choice, or files gone since they were listed
            st.session_state[REFUSED] = _("Cannot use {name}: {error}").format(
                name=choice, error=exc)
            continue
        if choice != name:  # show the model in use in the box too: run again with it chosen
            st.session_state[PENDING] = choice
            st.rerun()
        st.session_state[IN_USE] = choice
        if wanted := st.session_state.pop(MISSING, None):
            st.warning(missing_model_note(wanted, choice, [*good, *listed], getattr(
                named.get(wanted), "problem", "")), icon=":material/link_off:")
        return picked
    st.sidebar.error(st.session_state.pop(REFUSED), icon=":material/error:")
    return None


def _keep_or_refuse(listed: dict, fallback: str) -> None:
    """The box's callback: load a named model now; if it is refused, say why and go back to
    the model in use."""
    wanted = st.session_state.get("model")
    if wanted not in listed:
        return
    fallback = st.session_state.get(IN_USE, fallback)  # the model in use now, not at the run
    try:
        load_named(listed[wanted])
    except CheckpointError as exc:
        st.session_state[REFUSED] = _("Cannot use {name}: {error}").format(
            name=wanted, error=exc)
        st.session_state["model"] = fallback


def picked_or_stop() -> Picked:
    """The sidebar picker plus the model's one-line caption; stops the page when no model loads."""
    picked = model_picker()
    if picked is None:
        st.stop()
    if presenting():  # one line: the rest on hover
        st.caption(_("Model **{name}**").format(name=picked.name), help=describe(picked))
    else:
        st.caption(_("Model **{name}**").format(name=picked.name) + f" — {describe(picked)}")
    if note := picked.checkpoint.card.get("note"):
        st.caption(str(note))
    return picked
