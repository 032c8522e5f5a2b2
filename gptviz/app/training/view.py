"""Sections of the Training page: the data lesson, the plan and Start button, the live
panel (a fragment that redraws while the background thread trains), and what to do
with the result (register it, download it, compare it with its untrained self).
"""

from __future__ import annotations

import math

import pandas as pd
import streamlit as st

from gptviz.app.block.names import component_name
from gptviz.app.generation.prose import sentences
from gptviz.app.serving.trainers import trainer_slots
from gptviz.app.shared.chips import show_bytes, visible
from gptviz.app.shared.notes import duration
from gptviz.app.shared.picker import add_session_model
from gptviz.app.shared.tex import grouped
from gptviz.app.shared.widgets import (
    cap_text,
    csv_download,
    data_grid,
    on_demand,
    plain_table,
    plot,
    text_block,
)
from gptviz.app.training.afterwards import bytes_note
from gptviz.app.training.controls import Setup, caps
from gptviz.app.training.figures import loss_figure, prediction_pairs, smooth, windows_html
from gptviz.app.training.formulas import cross_entropy_latex, perplexity_latex
from gptviz.i18n import N_, _, ngettext, number, pgettext
from gptviz.model import parameter_counts
from gptviz.train.jobs import SessionTrainer, Snapshot, TrainingJob
from gptviz.train.plan import default_prompt, n_params

REDRAW_S = 0.5  # the live panel's refresh interval while a job is queued or running


def data_lesson(s: Setup, loss: float | None, step: int | None) -> None:
    """Sliding windows as input/target pairs, then the loss they train, with live numbers."""
    tok, ids, spec = s.tokenizer, s.ids, s.spec
    N, k = spec.context_length, spec.stride
    st.markdown(_(
        "**{name}**: {chars} characters → {n} tokens ({kind} tokenizer, $|V| = {v}$). The "
        "dataset cuts the token stream into windows of $N = {N}$ tokens whose starts are the "
        "stride $s = {k}$ apart; the target $y$ is the input $x$ shifted by one token:").format(
            name=s.corpus_name, chars=_n(len(s.text)), n=_n(len(ids)), kind=spec.tokenizer,
            v=grouped(tok.vocab_size), N=N, k=k))
    st.latex(rf"x^{{(j)}} = (t_{{js+1}},\dots,t_{{js+N}}),\qquad "
             rf"y^{{(j)}} = (t_{{js+2}},\dots,t_{{js+N+1}}),\qquad N={N},\ s={k}")
    labels = [show_bytes(tok.id_to_bytes(int(i))) for i in ids[:2 * k + N + 2]]
    st.html(windows_html(labels, N, k))
    n_train = len(ids) - round(0.1 * len(ids))
    windows = max(0, math.ceil((n_train - N) / k))
    st.markdown(ngettext(
        "The first 90 % of the tokens give **{n} training window**; the last 10 % are held out "
        "to measure the validation loss. Each step draws $B = {B}$ windows at random and, "
        "thanks to the causal mask, every window trains $N$ predictions at once: **{per} "
        "next-token predictions per step**. Those of the first window:",
        "The first 90 % of the tokens give **{n} training windows**; the last 10 % are held out "
        "to measure the validation loss. Each step draws $B = {B}$ windows at random and, "
        "thanks to the causal mask, every window trains $N$ predictions at once: **{per} "
        "next-token predictions per step**. Those of the first window:", windows).format(
            n=_n(windows), B=spec.batch_size, per=_n(spec.batch_size * N)))
    pairs = prediction_pairs(labels, N)
    plain_table(pairs)  # its English headers shown translated
    csv_download(pairs, f"training-window-{s.corpus_name}.csv")
    st.latex(cross_entropy_latex(tok.vocab_size, loss, step))
    st.latex(perplexity_latex(tok.vocab_size, loss))


def plan(s: Setup, holder: SessionTrainer) -> str:
    """The run's size and estimated time, its problems and the sample prompt (returned;
    ``start`` draws the button that uses it)."""
    active = holder.job is not None and holder.job.active
    if s.run is not None:
        m, t = s.run.model, s.run.train
        c = st.columns(4)
        c[0].metric(_("Parameters"), _n(n_params(m)))
        c[1].metric(_("Tokens in the corpus"), _n(len(s.ids)))
        c[2].metric(_("Tokens seen in training"), _n(t.steps * t.batch_size * m.context_length))
        c[3].metric(_("Estimated time"), duration(s.estimate_s),
                    help=_("Timed on this server: a throwaway copy of this run takes a few "
                           "steps, an evaluation and a sample, and the plan adds them up "
                           "(steps, and an evaluation with a sample every eval interval)."))
        with on_demand(_("Parameters per component"), key="tr_param_counts") as shown:
            if shown:
                counts = parameter_counts(m)
                plain_table(pd.DataFrame({N_("component"): [component_name(k) for k in counts],
                                          N_("parameters"): [_n(n) for n in counts.values()]}))
                csv_download(pd.DataFrame({"component": list(counts),  # the code's names
                                           "parameters": list(counts.values())}),
                             f"parameters-{s.corpus_name}.csv")
    for note in s.notes:
        st.info(note, icon=":material/info:")
    for problem in s.problems:
        st.error(problem, icon=":material/error:")
    prompt = cap_text(st.text_area(_("Sample prompt"), value=default_prompt(s.text), height=68,
                                   key=f"tr_prompt-{s.corpus_name}", disabled=active,
                                   help=_("At every evaluation the model continues this text.")))
    cap, slots = caps(), trainer_slots().limit
    st.caption(ngettext(
        "Limits on this server: {params} parameters, {steps} steps, context {context}, batch "
        "{batch}, {time} per run; {runs} run at a time.",
        "Limits on this server: {params} parameters, {steps} steps, context {context}, batch "
        "{batch}, {time} per run; {runs} runs at a time.", slots).format(
            params=_n(cap.max_params), steps=_n(cap.max_steps), context=cap.max_context,
            batch=cap.max_batch, time=duration(cap.max_seconds), runs=slots))
    return prompt


def start(s: Setup, holder: SessionTrainer, prompt: str) -> None:
    """Start training, with the estimate beside it: drawn at the top of the page, so it is
    in the first screen once a preset is picked (the setup is below)."""
    active = holder.job is not None and holder.job.active
    cap = caps()
    row = st.container(horizontal=True, vertical_alignment="center")
    clicked = row.button(_("Start training"), type="primary", icon=":material/play_arrow:",
                         disabled=bool(s.problems) or active, key="tr_start")
    if s.run is not None:
        row.caption(_("{params} parameters · {steps} steps · about {time} on this server").format(
            params=_n(n_params(s.run.model)), steps=_n(s.run.train.steps),
            time=duration(s.estimate_s)))
    if s.problems:
        row.caption(_("Fix the problems in the setup below to start."))
    if clicked:
        pos = s.run.model.positional  # named unless the default: two runs tell apart
        card = {"name": f"trained-{s.corpus_name}-{s.spec.tokenizer}"
                        + ("" if pos == "learned" else f"-{pos}"), "corpus": s.corpus_name,
                "corpus_chars": len(s.text), "tokens": len(s.ids), "tokenizer": s.spec.tokenizer,
                "prompt": prompt, "source": "the Training page"}
        try:
            holder.submit(TrainingJob(s.run, s.ids, s.tokenizer, slots=trainer_slots(),
                                      prompt=prompt, card=card, max_seconds=cap.max_seconds))
        except RuntimeError as exc:  # a second click while the first run is starting
            st.warning(_("Not started: {why}").format(why=exc), icon=":material/warning:")
            return
        st.rerun()  # redraw with the setup locked and the live panel ticking


def register_finished(holder: SessionTrainer) -> bool:
    """Put a finished job's model in this session's picker (once) and select it.

    Returns whether the job was still active when looked at. The live panel must draw
    from this same observation: a job that ends later in this run is drawn as active,
    and its panel reruns the page, which registers it before anything says "Stopped".
    """
    job = holder.job
    if job is None:
        return False
    if job.active:
        return True
    if job.checkpoint is None or job.registered_as:
        return False
    job.registered_as = add_session_model(job.card["name"], job.checkpoint)
    job.checkpoint = None  # the picker holds it now: once the budget unloads it, it is freed
    holder.history.append(job.registered_as)
    st.session_state["model"] = job.registered_as
    return False


def live_panel(holder: SessionTrainer, active: bool) -> None:
    """Progress, curves and samples; a fragment redraws it every 0.5 s while training.

    ``active`` is what ``register_finished`` saw at the top of this run.
    """
    job = holder.job
    if job is None:
        st.caption(_("No run yet in this session: press Start training."))
        return

    @st.fragment(run_every=REDRAW_S if active else None)
    def panel() -> None:
        snap = job.snapshot()
        if active and not snap.active:
            # Ended since the top of this run: rerun the whole page first, so the model
            # is in the picker before the panel says "Finished" or "Stopped".
            st.rerun()
        _draw(job, snap)

    panel()


def time_left(step: int, total: int, elapsed_s: float) -> str:
    """" · about … left" at this run's own pace so far (the estimate before the start came
    from earlier runs, and a busy server is slower); nothing before 5 % of the steps.

    >>> time_left(100, 800, 10.0), time_left(10, 800, 1.0)
    (' · about 1 min 10 s left', '')
    """
    if step < max(1, total // 20) or elapsed_s <= 0:
        return ""
    return " · " + _("about {time} left").format(time=duration(elapsed_s * (total - step) / step))


def _draw(job: TrainingJob, snap: Snapshot) -> None:
    v = job.run.model.vocab_size
    if snap.status == "queued":
        slots, others = trainer_slots().limit, snap.others_running
        running = ngettext("{n} run is in progress", "{n} runs are in progress",
                           others).format(n=others)
        st.info(ngettext("Waiting for a free trainer: this server trains {n} model at a time "
                         "and {running}, so yours is queued. It starts by itself when one ends "
                         "— keep this tab open.",
                         "Waiting for a free trainer: this server trains {n} models at a time "
                         "and {running}, so yours is queued. It starts by itself when one ends "
                         "— keep this tab open.", slots).format(n=slots, running=running),
                icon=":material/hourglass_top:")
        st.button(_("Cancel"), key="tr_cancel", on_click=job.stop, icon=":material/close:")
        return
    if snap.status == "running":
        text = (_("step {step} / {total} · {time}").format(
                    step=_n(snap.step), total=_n(snap.total), time=duration(snap.elapsed_s))
                + time_left(snap.step, snap.total, snap.elapsed_s) + " · "
                + _("{k}k tokens/s").format(k=number(snap.tokens_per_s / 1000, 1))
                if snap.step else _("Building the model and measuring the untrained loss…"))
        st.progress(snap.step / snap.total, text=text)
        st.button(_("Stop"), key="tr_stop", on_click=job.stop, icon=":material/stop:",
                  help=_("Ends after the current step and keeps the model trained so far."))
    else:
        _outcome(job, snap, v)
    last_val = snap.evals[-1] if snap.evals else None
    c = st.columns(4)
    c[0].metric(_("Step"), f"{_n(snap.step)} / {_n(snap.total)}")
    if snap.losses:
        c[1].metric(_("Training loss (smoothed)"),
                    number(float(smooth([x for _s, x in snap.losses])[-1]), 3))
    if last_val is not None:
        gap = last_val.val_loss - math.log(v)
        c[2].metric(_("Validation loss"), number(last_val.val_loss, 3),
                    delta=_("{gap} vs ln|V|").format(gap=("+" if gap >= 0 else "")
                                                     + number(gap, 3)), delta_color="inverse")
        c[3].metric(_("Validation perplexity"),
                    number(last_val.val_perplexity, 2, grouping=True),
                    help=_("e^L; an untrained model has about |V| = {v}.").format(v=_n(v)))
    evals = [(e.step, e.train_loss, e.val_loss) for e in snap.evals]
    plot(loss_figure(snap.losses, evals, v, snap.total), key="tr_curves")
    if snap.samples:
        last = snap.samples[-1]
        st.markdown(_("**Sample at step {step}** (validation loss {loss}), continuing "
                      "“{prompt}”:").format(step=last.step, loss=number(last.val_loss, 3),
                                            prompt=visible(job.prompt)))
        text_block(job.prompt + last.text)
        bytes_note([x.text for x in snap.samples])
        with on_demand(ngettext("All {n} sample", "All {n} samples", len(snap.samples)).format(
                n=len(snap.samples)), key="all_samples", icon=":material/notes:") as shown:
            if shown:
                data_grid(pd.DataFrame({
                    pgettext("run step", "step"): [x.step for x in snap.samples],
                    _("validation loss"): [x.val_loss for x in snap.samples],
                    _("sample"): [x.text.replace("\n", " ↵ ") for x in snap.samples]}),
                    hide_index=True, width="stretch", column_config={
                        _("validation loss"): st.column_config.NumberColumn(format="%.3f")})


def _outcome(job: TrainingJob, snap: Snapshot, vocab_size: int) -> None:
    if snap.status == "failed":
        st.error(snap.message, icon=":material/error:")
        return
    if snap.status == "cancelled":
        st.info(snap.message, icon=":material/info:")
        return
    name = _("It is now **{name}** in the model list of every page.").format(
        name=job.registered_as) if job.registered_as else ""
    st.success(sentences(snap.message, name), icon=":material/check_circle:")
    if snap.evals and snap.evals[-1].val_loss > math.log(vocab_size):
        st.warning(_("The validation loss ended above ln|V| = {ln_v}: worse than a uniform "
                     "guess. The learning rate is probably too high (it diverged); try "
                     "3e-3.").format(ln_v=number(math.log(vocab_size), 2)),
                   icon=":material/warning:")


def _n(n: int) -> str:
    return number(n, 0, grouping=True)
