"""The Positional page's comparison: the same small GPT trained with each of the four
positional options, their validation curves, and what each does past its context."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
import streamlit as st

from gptviz.analysis.compare_positions import KINDS, SCHEMES, load_runs
from gptviz.app.positional import figures as vp
from gptviz.app.positional.retrain import RUNS, adopt_finished, retrain_panel
from gptviz.app.shared.spinner import said
from gptviz.app.shared.widgets import chart, csv_download, dataframe, problem
from gptviz.checkpoints.folder import Checkpoint, CheckpointError, freeze
from gptviz.i18n import N_, _, number

Runs = Mapping[str, Checkpoint]
# summary's headers, shown as _(header); the CSV keeps them
COLUMNS = (N_("encoding"), N_("long texts read"), N_("positions 0..N-1"),
           N_("positions N..2N-1"), N_("positions 2N..4N-1"), N_("positions 2N text"),
           N_("positions 4N text"), N_("validation loss"), N_("training CPU s"))


def grouped(n: int) -> str:
    return number(n, 0, grouping=True)
N_("cropped to the last N")
WHOLE = {"rope": N_("whole text, sliding window"), "sinusoidal": N_("whole text, formula past N"),
         "none": N_("whole text")}


def scheme_label(kind: str, scheme: str, english: bool = False) -> str:
    """A curve's name in the legend (``english``: as a CSV's header names it).

    >>> scheme_label("learned", "crop"), scheme_label("rope", "whole")
    ('learned: cropped to the last N', 'RoPE: whole text, sliding window')
    """
    how = "cropped to the last N" if scheme == "crop" else WHOLE[kind]
    if english:
        return f"{'RoPE' if kind == 'rope' else kind}: {how}"
    return f"{vp.kind_name(kind)}: {_(how)}"


def segment_means(losses, n: int) -> dict[str, float]:
    """Mean loss over positions 0..N−1, N..2N−1, 2N..4N−1, and over texts of 2N and 4N.

    >>> segment_means([1, 1, 2, 2, 3, 3, 3, 3], 2)
    {'0..N-1': 1.0, 'N..2N-1': 2.0, '2N..4N-1': 3.0, '2N text': 1.5, '4N text': 2.25}
    """
    v = np.asarray(losses, np.float64)
    return {k: float(v[a:b].mean()) for k, (a, b) in {
        "0..N-1": (0, n), "N..2N-1": (n, 2 * n), "2N..4N-1": (2 * n, 4 * n),
        "2N text": (0, 2 * n), "4N text": (0, 4 * n)}.items()}


def shipped_runs() -> dict[str, Checkpoint]:
    """The runs in assets/positional, shared by every session: read-only."""
    return _shipped_runs()


@said(st.cache_resource, N_("Loading the four runs…"))
def _shipped_runs() -> dict[str, Checkpoint]:
    runs = load_runs()
    for ckpt in runs.values():
        freeze(ckpt.model)
    return runs


def curves(runs: Runs) -> dict[str, tuple[list[int], list[float]]]:
    return {k: ([e["step"] for e in runs[k].card["evals"]],
                [e["val_loss"] for e in runs[k].card["evals"]]) for k in KINDS}


def long_losses(runs: Runs) -> dict[tuple[str, str], list[float]]:
    return {(k, s): runs[k].card["long"]["losses"][s] for k in KINDS for s in SCHEMES[k]}


def summary(runs: Runs, n: int) -> pd.DataFrame:
    """One row per curve: mean loss inside N, on 2N and 4N texts, and the validation loss;
    in English, as its CSV keeps it (the page shows its words and headers translated)."""
    rows = []
    for (kind, scheme), v in long_losses(runs).items():
        card = runs[kind].card
        rows.append({"encoding": scheme_label(kind, scheme, english=True).split(": ", 1)[0],
                     "long texts read": scheme_label(kind, scheme, english=True).split(
                         ": ", 1)[1], **{f"positions {k}": m for k, m in segment_means(
                             v, n).items()}, "validation loss": card["evals"][-1]["val_loss"],
                     "training CPU s": card["train_cpu_s"]})  # headers: COLUMNS
    return pd.DataFrame(rows)


def _past(v, n: int) -> float:
    return float(np.mean(v[n:]))


def findings(runs: Runs, n: int) -> list[str]:
    """Three to five sentences on what the figures show, every number read from the runs."""
    name, card = vp.kind_name, runs[KINDS[0]].card
    final = {k: runs[k].card["evals"][-1]["val_loss"] for k in KINDS}
    order = sorted(KINDS, key=final.get)
    out = [_("After {steps} steps {best} has the lowest validation loss ({loss} nats per "
             "character), then {middle} and {last} ({last_loss}).").format(
        steps=card["steps"], best=name(order[0]), loss=number(final[order[0]], 3),
        middle=", ".join(f"{name(k)} ({number(final[k], 3)})" for k in order[1:-1]),
        last=name(order[-1]), last_loss=number(final[order[-1]], 3))]
    uni = card["unigram_loss"]
    stuck = [k for k in KINDS if final[k] > uni - 0.1]
    long = long_losses(runs)
    sin_crop, sin_whole = (_past(long["sinusoidal", s], n) for s in ("crop", "whole"))
    if stuck:
        out.append((_("The {runs} run has not left the plateau of a model that ignores its "
                      "context (character frequencies alone give {uni}); the sinusoidal "
                      "table's entries are as large as ±1 while the token embeddings start near "
                      "0.02, so X = E + PE hardly depends on the token until training has grown "
                      "E, and the formula's rows past N change nothing for it (whole text "
                      "{whole}, cropped {crop}).") if "sinusoidal" in stuck else
                    _("The {runs} run has not left the plateau of a model that ignores its "
                      "context (character frequencies alone give {uni}).")).format(
            runs=", ".join(name(k) for k in stuck), uni=number(uni, 3),
            whole=number(sin_whole, 3), crop=number(sin_crop, 3)))
    lr, ll = long["rope", "whole"], long["learned", "crop"]
    inside, past = np.mean(ll[:n]) - np.mean(lr[:n]), _past(ll, n) - _past(lr, n)
    layers = runs["rope"].config.n_layer
    out.append(_("RoPE's lead over the learned table is {inside} nats inside the window "
                 "(positions 0–{last}) and {past} past it ({n}–{end}): cropping keeps only the "
                 "last {n} characters, while RoPE slides its window over the whole text, so "
                 "through its {layers} layers a prediction can still draw on characters up to "
                 "{back} places back.").format(
        inside=number(inside, 3), past=number(past, 3), last=n - 1, n=n, end=len(lr) - 1,
        layers=layers, back=layers * (n - 1)))
    crop, whole = _past(long["none", "crop"], n), _past(long["none", "whole"], n)
    out.append((_("Without positions, reading the whole text in one pass is worse past {n} "
                  "than cropping ({whole} against {crop}; before {n} the two are the same "
                  "computation): each softmax then spreads over more characters than the "
                  "model ever saw in training.") if whole > crop else
                _("Without positions, reading the whole text in one pass is no worse past {n} "
                  "than cropping ({whole} against {crop}; before {n} the two are the same "
                  "computation): each softmax then spreads over more characters than the "
                  "model ever saw in training.")).format(
        n=n, whole=number(whole, 3), crop=number(crop, 3)))
    if "sinusoidal" not in stuck:
        out.append(_("Fed the formula's rows past N, which it never saw, the sinusoidal run "
                     "loses {whole} past N against {crop} when cropped.").format(
            whole=number(sin_whole, 3), crop=number(sin_crop, 3)))
    return out


def compare_view() -> None:
    """Validation curves, losses on long texts, a table, the findings, and the retrain button."""
    active = adopt_finished()
    mine = st.session_state.get(RUNS)
    try:
        shipped = shipped_runs()
    except (CheckpointError, OSError) as exc:
        problem(_("The shipped runs of this comparison do not load ({error}). Retrain them "
                  "below, or restore assets/positional (python scripts/make_positional.py)."
                  ).format(error=exc))
        shipped = None
    runs = mine or shipped
    if runs is not None:
        draw(runs, retrained=bool(mine))
    cpu = sum(c.card["train_cpu_s"] for c in (shipped or runs or {}).values())
    retrain_panel(cpu, active)


def draw(runs: Runs, retrained: bool) -> None:
    c = runs["learned"].config
    n, r = c.context_length, runs["learned"].card["recipe"]
    params = ", ".join(f"{vp.kind_name(k)} {grouped(runs[k].card['params'])}" for k in KINDS)
    st.markdown(_(
        "The same small GPT ({layers} layers, d = {d}, {heads} heads, context N = {n} "
        "characters) trained four times on the characters of {corpus}, once with each "
        "positional option. Everything else is the same: the seed ({seed}: the same initial "
        "weights wherever the shapes agree, the same batches in the same order) and {steps} "
        "steps of batch {batch}. Parameters: {params} (only the learned table adds any). The "
        "validation loss is measured on the last 10 % of the text, which no run trains on."
        ).format(layers=c.n_layer, d=c.d_model, heads=c.n_head, n=n, corpus=r["corpus"],
                 seed=r["seed"], steps=r["steps"], batch=r["batch_size"], params=params))
    st.caption(_("These are the runs retrained in this session.") if retrained else
               _("These are the shipped runs (assets/positional, made by "
                 "scripts/make_positional.py); retrain them below."))
    chart(vp.val_curves_figure(curves(runs), runs["learned"].card["unigram_loss"]),
          key="pc_curves")
    long = long_losses(runs)
    length = len(next(iter(long.values())))
    st.markdown("#### " + _("Past the training context: texts of {k} × N").format(
        k=length // n))
    st.markdown(_(
        "Each run reads {texts} texts of {length} characters from the validation part. The "
        "page reads them as each model can:\n"
        "- **learned**: its table has rows 0 to {last} only. Past that, each prediction sees "
        "only the last {n} characters, placed at positions 0 to {last}: what the generator "
        "does (it crops, and recomputes the window at every step).\n"
        "- **sinusoidal**: cropped the same way (solid), and the whole text in one pass "
        "(dotted) with the formula's rows {n}, {next}, … that the model never saw.\n"
        "- **none**: no table to run out of. Cropped (solid, what the generator does) and the "
        "whole text in one pass (dotted), attention over every earlier character.\n"
        "- **RoPE**: the whole text in one pass, each layer attending to the last {n} keys "
        "(a sliding window): what its generator does with its rolling KV cache.\n\n"
        "Every reading is causal, so the first {two_n} positions are also the losses on "
        "texts of 2N = {two_n} characters.").format(
        texts=runs["learned"].card["long"]["texts"], length=length, last=n - 1, n=n,
        next=n + 1, two_n=2 * n))
    labels = {key: scheme_label(*key) for key in long}
    chart(vp.long_losses_figure(long, labels, n), key="pc_long")
    df = summary(runs, n)
    shown = df.assign(**{c: df[c].map(_) for c in ("encoding", "long texts read")})
    dataframe(shown, hide_index=True, width="stretch", column_config={
        k: st.column_config.NumberColumn(format="%.3f") for k in df.columns[2:-1]})
    left, right = st.columns(2)
    with left:
        csv_download(df, "positional-compare-summary.csv", _("Download the table as CSV"))
    with right:
        per = pd.DataFrame({"position": range(length),
                            **{scheme_label(*k, english=True): v for k, v in long.items()}})
        csv_download(per, "positional-compare-per-position.csv",
                     _("Download the loss per position as CSV"))
    st.markdown("#### " + _("What the figures show"))
    st.markdown(" ".join(findings(runs, n)))
