"""The Generation page's tree of branches: at the replayed step, take another of its most
probable tokens instead and go on from there; every branch stays in a tree that is drawn
(each edge with its probability) and can be revisited (click a node, or pick it below).

Each change happens in a button callback, as the page's other buttons do, and the page
writes the tree into its link at the end of the run (link.py).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from gptviz.app.generation import tree
from gptviz.app.generation.branch_figure import branch_tree
from gptviz.app.generation.controls import STEP
from gptviz.app.generation.state import History, Path
from gptviz.app.generation.turn import Viewed
from gptviz.app.shared.cache import vocab_labels
from gptviz.app.shared.inputs import fresh_choice
from gptviz.app.shared.picker import Picked
from gptviz.app.shared.tex import percent
from gptviz.app.shared.widgets import csv_download, data_grid, plot
from gptviz.generation.sampling import Sampling
from gptviz.i18n import N_, _, ngettext, number
from gptviz.model import GPT

TOKEN, GOTO, CHART = "gen_branch_token", "gen_goto", "gen_tree"  # widget keys
N_CHOICES = 10  # tokens offered at a step: its most probable ones


def _key(path: Path) -> str:
    return ".".join(str(i) for i in path)


def _unkey(text: str) -> Path:
    return tuple(int(i) for i in text.split(".")) if text else ()


def _moved(hist: History, note: str) -> None:
    st.session_state[STEP] = len(hist.turns)
    hist.note = note


def _branch(hist: History, i: int, expected: Path, model: GPT, sampling: Sampling,
            labels: list[str], then_generate: bool) -> None:
    token = st.session_state.get(TOKEN)
    if token is None:
        hist.note = _("Choose a token to branch with first.")
        return
    old = hist.turns[i].chosen if i < len(hist.turns) and hist.path[:i] == expected else None
    try:
        hist.branch(i, int(token), expected, model, sampling)
    except ValueError as exc:
        hist.note = _("Cannot branch: {why}").format(why=exc)
        return
    facts = dict(i=i + 1, new=labels[int(token)], old=labels[old] if old is not None else "")
    if old is None:
        note = (_("Branched at step {i}: `{new}`. The text goes on from there now.")
                if then_generate else _("Branched at step {i}: `{new}`. The text goes on from "
                                        "there: press Next token or Generate n."))
    else:
        note = (_("Branched at step {i}: `{new}` instead of `{old}`. The text goes on from there "
                  "now.") if then_generate else
                _("Branched at step {i}: `{new}` instead of `{old}`. The text goes on from "
                  "there: press Next token or Generate n."))
    _moved(hist, note.format(**facts))
    if then_generate:
        hist.start(int(st.session_state.get("gen_n", 20) or 20))


def _select(hist: History, path: Path) -> None:
    try:
        hist.select(path)
    except ValueError as exc:
        hist.note = _("Cannot go there: {why}").format(why=exc)
        return
    _moved(hist, _("The text is now the branch ending at step {i}.").format(i=len(path)) if path
           else _("The text is now the prompt alone: Next token starts a new branch from it."))


def _clicked(hist: History) -> None:
    points = ((st.session_state.get(CHART) or {}).get("selection") or {}).get("points") or []
    data = points[0].get("customdata") if points else None
    if data is not None:
        _select(hist, _unkey(str(data[0] if isinstance(data, list) else data)))


def _picked_goto(hist: History) -> None:
    path = st.session_state.get(GOTO)
    st.session_state[GOTO] = None  # a menu for going, not a state: it stays empty
    if path is not None:
        _select(hist, tuple(path))


def branch_view(v: Viewed, hist: History, picked: Picked, sampling: Sampling) -> None:
    """Branch at the replayed step; the tree; every branch with its log-probability."""
    labels = vocab_labels(picked)
    i = v.index - 1 if v.taken else len(hist.turns)  # 0-based step that can branch
    probs = _softmax(v.step.logits.numpy())  # (|V|,) the model's own P at that step
    here = hist.turns[i].chosen if v.taken else None
    options = [int(j) for j in np.argsort(-probs, kind="stable")[:N_CHOICES + 1]
               if j != here][:N_CHOICES]
    st.markdown((_("**Branch at step {i}** (the replayed step: the text has `{here}` here): take "
                   "another of the {n} most probable tokens and go on from there. Pick another "
                   "step with *Replay a step* above.") if here is not None else
                 _("**Branch at step {i}** (the next step: choose its token yourself): take "
                   "another of the {n} most probable tokens and go on from there. Pick another "
                   "step with *Replay a step* above.")).format(
                       i=i + 1, here=labels[here] if here is not None else "", n=N_CHOICES))
    a, b, c = st.columns([3, 1, 1.4], vertical_alignment="bottom")
    # a replayed step brings other candidates (left alone, the box held the old choice's
    # label, not an id, and the first Branch failed with "invalid literal for int()")
    fresh_choice(TOKEN, options, options[0] if options else None, (i, tuple(options)))
    a.selectbox(_("Token"), options, key=TOKEN,
                format_func=lambda j: f"{labels[j]}   ·  P = {percent(probs[j])}  (id {j})",
                help=_("P is the model's own probability of the token at this step (T = 1, no "
                       "filter), the number on the tree's edges."))
    args = (hist, i, hist.path[:i], picked.checkpoint.model, sampling, labels)
    b.button(_("Branch"), icon=":material/call_split:", key="gen_branch", on_click=_branch,
             args=(*args, False), disabled=hist.full)
    c.button(_("Branch and continue"), key="gen_branch_run", on_click=_branch,
             args=(*args, True), disabled=hist.full,
             help=_("Branch, then append n tokens as *Generate n* does (n is set above)."))
    if not hist.nodes:
        st.info(_("No tokens yet: the tree is the prompt alone. Take a step (Next token) or "
                  "branch above."), icon=":material/account_tree:")
        return
    _tree(hist, labels)


def _softmax(y: np.ndarray) -> np.ndarray:
    e = np.exp(y.astype(np.float64) - float(y.max()))  # (|V|,)
    return e / e.sum()


def _tree(hist: History, labels: list[str]) -> None:
    """The figure, the menu of forks and leaves, and the table of branches."""
    nodes = hist.nodes
    xy = tree.layout(nodes)
    logp = {p: turn.logp for p, turn in nodes.items()}  # log P(token | before), T = 1
    plot(branch_tree(
        xy, {p: labels[p[-1]] for p in nodes}, {p: float(np.exp(lp)) for p, lp in logp.items()},
        hist.path, {p: _key(p) for p in xy},
        title=_counts(len(tree.leaves(nodes)), len(nodes))),
        key=CHART, on_select=lambda: _clicked(hist), selection_mode="points")
    leaf_paths, kids = tree.leaves(nodes), tree.children(nodes)
    stops = [()] + [p for p in xy if p and (len(kids[p]) > 1 or not kids[p])]
    rows = {leaf: n for n, leaf in enumerate(leaf_paths)}

    def name(p: Path) -> str:
        if not p:
            return _("the prompt (step 0)")
        end = "".join(labels[j] for j in p[-6:])
        kind = _("fork") if len(kids.get(p, ())) > 1 else _("end of branch {n}").format(
            n=rows.get(p, "?"))
        return (f"{kind} · " + _("step {i}").format(i=len(p)) + f" · …{end[-40:]}"
                + (" " + _("(the text now)") if p == hist.path else ""))

    st.selectbox(_("Go to a fork or the end of a branch (or click a node in the tree)"), stops,
                 index=None, key=GOTO, format_func=name,
                 placeholder=_("Choose a node to make it the text…"),
                 on_change=_picked_goto, args=(hist,))
    table = []
    for n, leaf in enumerate(leaf_paths):
        on = leaf[:len(hist.path)] == hist.path and bool(hist.path)
        table.append({  # English headers and words (the CSV's); the page shows them translated
            N_("branch"): n,
            N_("tokens"): len(leaf),
            N_("leaves branch n − 1 at step"): str(_fork_step(leaf_paths, n)) if n else "—",
            N_("end of the text"): "".join(labels[j] for j in leaf[-12:])[-40:],
            N_("log P(text | prompt)"): round(sum(logp[leaf[:k]]
                                                  for k in range(1, len(leaf) + 1)), 4),
            N_("current text"): (N_("◀ ends here") if leaf == hist.path else
                                 N_("◀ passes here")) if on else "",
        })
    df = pd.DataFrame(table)
    shown = df.assign(**{"current text": [_(v) if v else v for v in df["current text"]]})
    data_grid(shown.rename(columns=_), hide_index=True, width="stretch")
    csv_download(df, "branches.csv")
    st.caption(_("log P(text | prompt) = Σ log P(token | the text before it), the same score "
                 "beam search maximises (see *Beam search*)."))


def _counts(branches: int, tokens: int) -> str:
    """The tree's title: its branches, its tokens, what an edge shows."""
    return (ngettext("{n} branch", "{n} branches", branches).format(n=_n(branches)) + ", "
            + ngettext("{n} token", "{n} tokens", tokens).format(n=_n(tokens)) + " · "
            + _("edge: P(token | the text before it)"))


def _n(n: int) -> str:
    return number(n, 0, grouping=True)


def _fork_step(leaf_paths: list[Path], n: int) -> int:
    """The step at which leaf n leaves the leaf before it (1 = the first generated token)."""
    a, b = leaf_paths[n - 1], leaf_paths[n]
    return next((k for k in range(min(len(a), len(b))) if a[k] != b[k]), min(len(a), len(b))) + 1
