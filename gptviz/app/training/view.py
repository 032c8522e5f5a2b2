"""Sections of the Training page: the data lesson, the plan and Start button, the live
panel (a fragment that redraws while the background thread trains), and what to do
with the result (register it, download it, compare it with its untrained self).
"""

from __future__ import annotations

import math
import re

import pandas as pd
import streamlit as st

from gptviz.app.serving.trainers import trainer_slots
from gptviz.app.shared.cache import per_model, untrained_twin
from gptviz.app.shared.chips import show_bytes, visible
from gptviz.app.shared.notes import agree, counted, duration
from gptviz.app.shared.picker import Picked, add_session_model
from gptviz.app.shared.tex import grouped
from gptviz.app.shared.widgets import on_demand, plain_table, plot, text_block
from gptviz.app.training.controls import Setup, caps
from gptviz.app.training.figures import loss_figure, prediction_pairs, smooth, windows_html
from gptviz.app.training.formulas import cross_entropy_latex, perplexity_latex
from gptviz.checkpoints.folder import Checkpoint, checkpoint_to_zip
from gptviz.model import parameter_counts
from gptviz.train.before_after import Continuation, continuation
from gptviz.train.jobs import SessionTrainer, Snapshot, TrainingJob
from gptviz.train.plan import default_prompt, n_params

REDRAW_S = 0.5  # the live panel's refresh interval while a job is queued or running


def data_lesson(s: Setup, loss: float | None, step: int | None) -> None:
    """Sliding windows as input/target pairs, then the loss they train, with live numbers."""
    tok, ids, spec = s.tokenizer, s.ids, s.spec
    N, k = spec.context_length, spec.stride
    st.markdown(
        f"**{s.corpus_name}**: {len(s.text):,} characters → {len(ids):,} tokens "
        f"({spec.tokenizer} tokenizer, $|V| = {tok.vocab_size:,}$). The dataset cuts the token "
        f"stream into windows of $N = {N}$ tokens whose starts are the stride $s = {k}$ apart; "
        "the target $y$ is the input $x$ shifted by one token:")
    st.latex(rf"x^{{(j)}} = (t_{{js+1}},\dots,t_{{js+N}}),\qquad "
             rf"y^{{(j)}} = (t_{{js+2}},\dots,t_{{js+N+1}}),\qquad N={N},\ s={k}")
    labels = [show_bytes(tok.id_to_bytes(int(i))) for i in ids[:2 * k + N + 2]]
    st.html(windows_html(labels, N, k))
    n_train = len(ids) - round(0.1 * len(ids))
    windows = max(0, math.ceil((n_train - N) / k))
    st.markdown(
        f"The first 90 % of the tokens give **{windows:,} training windows**; the last 10 % are "
        f"held out to measure the validation loss. Each step draws $B = {spec.batch_size}$ "
        f"windows at random and, thanks to the causal mask, every window trains $N$ predictions "
        f"at once: **{spec.batch_size * N:,} next-token predictions per step**. Those of the "
        "first window:")
    plain_table(prediction_pairs(labels, N))
    st.latex(cross_entropy_latex(tok.vocab_size, loss, step))
    st.latex(perplexity_latex(tok.vocab_size, loss))


def plan(s: Setup, holder: SessionTrainer) -> str:
    """The run's size and estimated time, its problems and the sample prompt (returned;
    ``start`` draws the button that uses it)."""
    active = holder.job is not None and holder.job.active
    if s.run is not None:
        m, t = s.run.model, s.run.train
        c = st.columns(4)
        c[0].metric("Parameters", f"{n_params(m):,}")
        c[1].metric("Tokens in the corpus", f"{len(s.ids):,}")
        c[2].metric("Tokens seen in training", f"{t.steps * t.batch_size * m.context_length:,}")
        c[3].metric("Estimated time", duration(s.estimate_s),
                    help="Timed on this server: a throwaway copy of this run takes a few "
                         "steps, an evaluation and a sample, and the plan adds them up "
                         "(steps, and an evaluation with a sample every eval interval).")
        with on_demand("Parameters per component", key="tr_param_counts") as shown:
            if shown:
                counts = parameter_counts(m)
                plain_table(pd.DataFrame({"component": list(counts),
                                          "parameters": [f"{n:,}" for n in counts.values()]}))
    for note in s.notes:
        st.info(note, icon=":material/info:")
    for problem in s.problems:
        st.error(problem, icon=":material/error:")
    prompt = st.text_area("Sample prompt", value=default_prompt(s.text), height=68,
                          key=f"tr_prompt-{s.corpus_name}", disabled=active,
                          help="At every evaluation the model continues this text.")
    cap = caps()
    st.caption(f"Limits on this server: {cap.max_params:,} parameters, {cap.max_steps:,} steps, "
               f"context {cap.max_context}, batch {cap.max_batch}, "
               f"{duration(cap.max_seconds)} per run; "
               f"{counted(trainer_slots().limit, 'run')} at a time.")
    return prompt


def start(s: Setup, holder: SessionTrainer, prompt: str) -> None:
    """Start training, with the estimate beside it: drawn at the top of the page, so it is
    in the first screen once a preset is picked (the setup is below)."""
    active = holder.job is not None and holder.job.active
    cap = caps()
    row = st.container(horizontal=True, vertical_alignment="center")
    clicked = row.button("Start training", type="primary", icon=":material/play_arrow:",
                         disabled=bool(s.problems) or active, key="tr_start")
    if s.run is not None:
        row.caption(f"{n_params(s.run.model):,} parameters · {s.run.train.steps:,} steps · "
                    f"about {duration(s.estimate_s)} on this server")
    if s.problems:
        row.caption("Fix the problems in the setup below to start.")
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
            st.warning(f"Not started: {exc}", icon=":material/warning:")
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
        st.caption("No run yet in this session: press Start training.")
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
    return f" · about {duration(elapsed_s * (total - step) / step)} left"


def _draw(job: TrainingJob, snap: Snapshot) -> None:
    v = job.run.model.vocab_size
    if snap.status == "queued":
        st.info(f"Waiting for a free trainer: this server trains "
                f"{counted(trainer_slots().limit, 'model')} at a time and "
                f"{counted(snap.others_running, 'run')} "
                f"{agree(snap.others_running, 'is', 'are')} in progress, so yours is queued. "
                "It starts by itself when one ends — keep this tab open.",
                icon=":material/hourglass_top:")
        st.button("Cancel", key="tr_cancel", on_click=job.stop, icon=":material/close:")
        return
    if snap.status == "running":
        text = (f"step {snap.step:,} / {snap.total:,} · {duration(snap.elapsed_s)}"
                f"{time_left(snap.step, snap.total, snap.elapsed_s)} · "
                f"{snap.tokens_per_s / 1000:.1f}k tokens/s" if snap.step else
                "Building the model and measuring the untrained loss…")
        st.progress(snap.step / snap.total, text=text)
        st.button("Stop", key="tr_stop", on_click=job.stop, icon=":material/stop:",
                  help="Ends after the current step and keeps the model trained so far.")
    else:
        _outcome(job, snap, v)
    last_val = snap.evals[-1] if snap.evals else None
    c = st.columns(4)
    c[0].metric("Step", f"{snap.step:,} / {snap.total:,}")
    if snap.losses:
        c[1].metric("Training loss (smoothed)", f"{smooth([x for _, x in snap.losses])[-1]:.3f}")
    if last_val is not None:
        c[2].metric("Validation loss", f"{last_val.val_loss:.3f}",
                    delta=f"{last_val.val_loss - math.log(v):+.3f} vs ln|V|", delta_color="inverse")
        c[3].metric("Validation perplexity", f"{last_val.val_perplexity:,.2f}",
                    help=f"e^L; an untrained model has about |V| = {v:,}.")
    evals = [(e.step, e.train_loss, e.val_loss) for e in snap.evals]
    plot(loss_figure(snap.losses, evals, v, snap.total), key="tr_curves")
    if snap.samples:
        last = snap.samples[-1]
        st.markdown(f"**Sample at step {last.step}** (validation loss {last.val_loss:.3f}), "
                    f"continuing “{visible(job.prompt)}”:")
        text_block(job.prompt + last.text)
        _bytes_note([x.text for x in snap.samples])
        with on_demand(f"All {len(snap.samples)} samples", key="all_samples",
                       icon=":material/notes:") as shown:
            if shown:
                st.dataframe(pd.DataFrame({
                    "step": [x.step for x in snap.samples],
                    "validation loss": [round(x.val_loss, 3) for x in snap.samples],
                    "sample": [x.text.replace("\n", " ↵ ") for x in snap.samples]}),
                    hide_index=True, width="stretch")


def _bytes_note(texts: list[str], container=st) -> None:
    """Say what ‹e2 80› means when a sample has one."""
    if any("‹" in t for t in texts):
        container.caption("‹e2 80›: bytes the model wrote that make no whole UTF-8 "
                          "character (a byte-level model can stop in the middle of one, or "
                          "write a byte that fits nowhere), shown in hex as the token chips "
                          "show them rather than as “�”. \\x1b is a control character.")


def _outcome(job: TrainingJob, snap: Snapshot, vocab_size: int) -> None:
    if snap.status == "failed":
        st.error(snap.message, icon=":material/error:")
        return
    if snap.status == "cancelled":
        st.info(snap.message, icon=":material/info:")
        return
    name = f" It is now **{job.registered_as}** in the model list of every page." \
        if job.registered_as else ""
    st.success(snap.message + name, icon=":material/check_circle:")
    if snap.evals and snap.evals[-1].val_loss > math.log(vocab_size):
        st.warning(f"The validation loss ended above ln|V| = {math.log(vocab_size):.2f}: worse "
                   "than a uniform guess. The learning rate is probably too high (it "
                   "diverged); try 3e-3.", icon=":material/warning:")


@per_model
def _continue(ckpt: Checkpoint, untrained: bool, prompt: str) -> Continuation:
    """80 sampled tokens after ``prompt`` from the model or, ``untrained``, from its
    untrained twin, cached per model and prompt: for every session when the model is
    bundled (a class opening this page pays once), for this session alone when it is its
    own. The twin is built only when its text is not cached, and dropped once written."""
    model = untrained_twin(ckpt) if untrained else ckpt.model
    return continuation(model, ckpt.tokenizer, prompt, 80)


def _file_name(name: str) -> str:
    """The download's file name: only letters, digits, ``.``, ``_`` and ``-``.

    >>> _file_name("trained-math (2)")
    'trained-math-2.zip'
    """
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-") + ".zip"


def afterwards(picked: Picked) -> None:
    """Download the picked model, and run it and its untrained self on the same prompt."""
    ckpt = picked.checkpoint
    st.download_button(
        f"Download {picked.name} as a checkpoint zip", icon=":material/download:",
        data=lambda: checkpoint_to_zip(ckpt.model, ckpt.tokenizer, ckpt.card, ckpt.snapshots),
        file_name=_file_name(picked.name), mime="application/zip", key="tr_download",
        help="model.safetensors + config.json + tokenizer.json + card.json; upload it in the "
             "sidebar of any page (here or on another server).")
    prompt = st.text_area("Prompt for both", value=ckpt.card.get("prompt") or "The ",
                          key=f"tr_compare-{picked.name}", height=68)
    cols = st.columns(2)
    steps = ckpt.card.get("steps", "?")
    shown = []
    for col, untrained, title in ((cols[0], True, "Before training (step 0, same seed)"),
                                  (cols[1], False, f"After training ({steps} steps)")):
        try:
            out = _continue(picked, untrained, prompt)
        except ValueError as exc:
            col.error(f"Cannot continue this prompt: {exc}", icon=":material/error:")
            continue
        col.markdown(f"**{title}**")
        if math.isfinite(out.prompt_loss):
            col.latex(rf"L(\text{{prompt}}) = {out.prompt_loss:.3f},\quad "
                      rf"e^{{L}} = {grouped(math.exp(out.prompt_loss), 1)}")
        text_block(prompt + out.text, col)
        shown.append(out.text)
    _bytes_note(shown)
