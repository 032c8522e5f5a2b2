"""Retraining the four runs of the comparison in this session: a background job (one per
session, one trainer slot shared with the Training page), a progress line that redraws
while it runs, and the results kept in this session only."""

from __future__ import annotations

import streamlit as st

from gptviz.analysis.compare_positions import KINDS, CompareJob, Recipe
from gptviz.app.positional.figures import kind_name
from gptviz.app.serving.trainers import trainer_slots
from gptviz.checkpoints.folder import Checkpoint, freeze
from gptviz.i18n import _, number

RUNS = "pc_runs"  # st.session_state key: this session's retrained runs, kind -> Checkpoint
REDRAW_S = 1.0


class Holder:
    """This session's job, and whether its results were taken over yet."""

    def __init__(self) -> None:
        self.job: CompareJob | None = None
        self.adopted = False

    def close(self) -> None:
        if self.job is not None:
            self.job.stop()


@st.cache_resource(scope="session", show_spinner=False, on_release=Holder.close)
def holder() -> Holder:
    """Released (thread stopped) when the session ends."""
    return Holder()


def adopt_finished() -> bool:
    """Move a finished job's runs into this session's state (once); True while it runs."""
    h = holder()
    if h.job is None:
        return False
    p = h.job.progress()
    if p.status == "done" and not h.adopted:
        st.session_state[RUNS] = {k: Checkpoint(freeze(c.model), c.tokenizer, c.card)
                                  for k, c in p.runs.items()}
        h.adopted = True
    return p.status in ("queued", "running")


def _start() -> None:
    h = holder()
    if h.job is not None and h.job.progress().status in ("queued", "running"):
        return
    h.job, h.adopted = CompareJob(Recipe(), trainer_slots()), False
    h.job.start()


def _stop() -> None:
    if holder().job is not None:
        holder().job.stop()


def _bundled_again() -> None:
    st.session_state.pop(RUNS, None)


def ended(p) -> str:
    """Why a retraining stopped, in the reader's language (the job, in its own thread, says
    it in English)."""
    if p.status == "stopped":
        return (_("Stopped during the {kind} run.").format(kind=kind_name(p.kind)) if p.kind
                else _("Cancelled before it started."))
    if p.message.startswith(FAILED):
        return _("Retraining failed: {error}").format(error=p.message.removeprefix(FAILED))
    return _("Retraining ended without a result.")


FAILED = "Retraining failed: "  # how the job's message starts when an exception ended it


def retrain_panel(cpu_s: float, active: bool) -> None:
    """The button, how long it takes, and the progress of this session's job.

    ``active`` is what ``adopt_finished`` saw at the top of this run.
    """
    r = Recipe()
    st.markdown("#### " + _("Retrain them here"))
    st.markdown(_(
        "The same recipe, in this session: four runs of {steps} steps (batch {batch}, seed "
        "{seed}), then the {texts} long texts. The shipped runs took {cpu} s of one CPU core "
        "in all to train; on a shared server expect a few times that (the progress shows it). "
        "The results replace the figures above for this session only: nobody else sees them, "
        "and reloading the page brings back the shipped runs. Training on the Training page "
        "and this share one trainer, so one waits for the other.").format(
        steps=r.steps, batch=r.batch_size, seed=r.seed, texts=r.long_texts,
        cpu=number(cpu_s, 0, grouping=True)))
    left, mid, right = st.columns(3)
    left.button(_("Retrain them here"), icon=":material/model_training:", on_click=_start,
                disabled=active, key="pc_retrain")
    if active:
        mid.button(_("Stop"), icon=":material/stop:", on_click=_stop, key="pc_stop")
    if st.session_state.get(RUNS):
        right.button(_("Back to the shipped runs"), icon=":material/undo:",
                     on_click=_bundled_again, key="pc_bundled")
    job = holder().job
    if job is None:
        return

    @st.fragment(run_every=REDRAW_S if active else None)
    def progress() -> None:
        p = job.progress()
        if active and p.status not in ("queued", "running"):
            st.rerun()  # the whole page, so that the figures show the new runs
        if p.status == "queued":
            st.info(_("Waiting for the trainer: someone on this server is training a model. "
                      "It starts by itself when that ends; keep this tab open."),
                    icon=":material/hourglass_top:")
        elif p.status == "running" and not p.kind:
            st.progress(0.0, text=_("Reading the corpus and training the character "
                                    "tokenizer…"))
        elif p.status == "running":
            n = KINDS.index(p.kind) if p.kind in KINDS else 0
            st.progress(min(1.0, p.done / max(1, p.total)),
                        text=_("Training the {kind} model ({n} of {runs}): step {step} of "
                               "{steps}, {seconds} s so far").format(
                            kind=kind_name(p.kind), n=n + 1, runs=len(KINDS),
                            step=p.done - n * job.recipe.steps, steps=job.recipe.steps,
                            seconds=f"{p.elapsed_s:.0f}"))
        elif p.status == "done":
            shown = (_("The figures above show these runs.") if st.session_state.get(RUNS) else
                     _("The figures above show the shipped runs again, as you asked."))
            st.success(_("Retrained all four in {seconds} s.").format(
                seconds=f"{p.elapsed_s:.0f}") + " " + shown, icon=":material/check:")
        else:
            still = (_("The figures above still show the runs retrained earlier.")
                     if st.session_state.get(RUNS) else
                     _("The figures above still show the shipped runs."))
            st.warning(ended(p) + " " + still, icon=":material/warning:")

    progress()
