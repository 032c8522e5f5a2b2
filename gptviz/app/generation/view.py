"""The Generation page's views of one step: P_T and the choice, three temperatures, N
samples against P_T, the attention behind the new token, the history as a table; and the
views of whole texts: the tree of branches and beam search (branching.py, beams.py)."""

from __future__ import annotations

import numpy as np
import streamlit as st
import torch

from gptviz.app.attention.formulas import attention_row
from gptviz.app.generation import bars
from gptviz.app.generation import figures as figs
from gptviz.app.generation import formulas as tex
from gptviz.app.generation.beams import beam_view
from gptviz.app.generation.branching import branch_view
from gptviz.app.generation.controls import STEP, token_info
from gptviz.app.generation.state import History
from gptviz.app.generation.turn import Viewed, sampling_caption
from gptviz.app.shared.cache import activations, vocab_labels
from gptviz.app.shared.chips import Shown, token_label
from gptviz.app.shared.heatmaps import heatmap
from gptviz.app.shared.inputs import layer_and_head
from gptviz.app.shared.picker import Picked
from gptviz.app.shared.tex import percent
from gptviz.app.shared.widgets import csv_download, plot
from gptviz.generation import sampling as gen
from gptviz.generation.sampling import Sampling
from gptviz.model.names import act_name, generation_page_names
from gptviz.words import counted

TEMPERATURES = [0.0, 0.2, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0]  # the Lesson's 0.2 and 2 among them
MAX_SAMPLES = 10_000


def symbol(step: gen.Step, s: Sampling) -> str:
    """The name of the distribution drawn from: P_T, or P' when top-k / top-p / min-p kept
    only part of the vocabulary S ≠ V and renormalised over it (valid LaTeX and plain text)."""
    filters = bool(s.top_k) or (s.top_p is not None and s.top_p < 1) or bool(s.min_p)
    kept = int((step.probs > 0).sum())
    return "P'" if filters and not s.greedy and kept < step.probs.numel() else "P_T"


def viewed(hist: History, picked: Picked, sampling: Sampling) -> Viewed:
    """The replay slider (1 … steps taken); before any step, the step "Next token" would take."""
    n = len(hist.turns)
    if n == 0:
        return Viewed(hist.preview(picked.checkpoint.model, sampling), sampling, 0)
    if st.session_state.get(STEP) not in range(1, n + 1):
        st.session_state[STEP] = n
    i = n if n == 1 else st.select_slider(
        "Replay a step", list(range(1, n + 1)), key=STEP,
        help="Every step keeps its choice, its probability and its entropy; its "
             "distribution is computed again from the text when you replay it.")
    turn = hist.turns[i - 1]
    model = picked.checkpoint.model
    return Viewed(hist.step(i - 1, model.config.context_length, model), turn.sampling, i,
                  turn.origin)


def step_view(v: Viewed, hist: History, picked: Picked, sampling: Sampling) -> None:
    """Top-k bars with the choice marked, P_T and H filled in, the seeds' ↦ chain."""
    labels, step = vocab_labels(picked), v.step
    chosen = labels[step.chosen]
    how = {"picked": "and you chose **`{c}`** by hand (a branch); it has probability {p}",
           "link": "and the link says **`{c}`** came next; it has probability {p}"}.get(
        v.origin, "and drew **`{c}`** with probability {p}")
    if v.taken:
        st.markdown(f"**Step {v.index}** ({sampling_caption(v.sampling)}): the model read "
                    f"{counted(len(step.context), 'token')} " + how.format(
                        c=chosen, p=percent(float(step.probs[step.chosen]))) + ".")
    else:
        st.markdown(f"**The next step** ({sampling_caption(v.sampling)}): press *Next token* to "
                    + (f"append the most probable token, **`{chosen}`**." if v.sampling.greedy
                       else "append a token drawn from this distribution (with this seed: "
                       f"**`{chosen}`**)."))
    left, right = st.columns([1, 1.3])
    k = min(10, int((step.probs > 0).sum()))
    sym = symbol(step, v.sampling)
    chosen_id = step.chosen if v.taken else None
    left.html(bars.topk_html(bars.candidates(labels, step.probs, chosen_id, step.logits,
                                             k=max(k, 1)), chosen_id,
                             title=f"top {k} of {sym} (of |V| = {len(labels):,})"))
    with right:
        s, best = v.sampling, int(step.probs.argmax())
        kept = int((step.probs > 0).sum())
        y = float(step.logits[best])
        log_z = log_z_all = 0.0
        if not s.greedy:
            scaled = step.logits.double() / s.temperature  # (|V|,) y_N / T
            log_z = float(torch.logsumexp(scaled[step.probs > 0], 0))  # over S
            log_z_all = float(torch.logsumexp(scaled, 0))  # over V
        p_max = 1.0 if s.greedy else float(  # max_j P_T(j), for min-p's threshold
            np.exp(float(step.logits.max()) / s.temperature - log_z_all))
        st.latex(tex.pt_formula(labels[best], best, y, s.temperature, log_z,
                                float(step.probs[best]), kept, len(labels),
                                log_z_all if sym == "P'" else None, s.min_p, p_max))
        st.latex(tex.entropy_formula(step.entropy, sym))
        mode = ("**Greedy**: $\\arg\\max_i P(i)$, no randomness." if s.greedy else
                f"**Sampling**: the token is drawn at random, $t_{{N+1}}\\sim {sym}$."
                + (" $S_k$, $S_p$, $S_{\\min}$ are the ids top-k, top-p and min-p keep (a "
                   "filter that is off keeps all of $V$); the bars, the entropy and the draws "
                   "here are those of $P'$." if sym != "P_T" else ""))
        st.markdown(mode + (f" {step.cropped:,} earlier tokens were cut to fit the context "
                            f"window N = {picked.checkpoint.config.context_length}."
                            if step.cropped else ""))
    st.markdown("The seeds' picture of generation, live (the underline is what the model "
                "reads; the boxed token is the one just appended):")
    for line in chain(hist, picked, v, sampling):
        st.latex(line)


def chain(hist: History, picked: Picked, v: Viewed, sampling: Sampling,
          shown: int = 3) -> list[str]:
    """The seeds' lines "text ↦ {candidate: p%}": the viewed step, the one after it (its
    choice boxed), and the steps before it, ``shown`` lines in all."""
    tok = picked.checkpoint.tokenizer
    last = v.index if v.taken else len(hist.turns)  # 0-based: the step after the viewed one
    lines = []
    for row, j in enumerate(range(max(0, last - shown + 1), last + 1)):
        if j < len(hist.turns):  # a taken step: what its Turn kept is enough
            turn = hist.turns[j]
            n_ids, cropped, top = len(hist.prompt_ids) + j, turn.cropped, turn.top
        else:
            step = v.step if not v.taken else hist.preview(picked.checkpoint.model, sampling)
            n_ids, cropped, top = step.cropped + len(step.context), step.cropped, step.top
        boxed = n_ids > len(hist.prompt_ids)
        pieces = tex.chain_pieces([tok.id_to_bytes(i) for i in hist.ids[:n_ids]], boxed)
        cands = [(tex.token_text(tok.id_to_bytes(i)), p) for i, p in top[:4] if p > 0]
        lines.append(tex.mapsto_line(pieces, cropped, boxed, cands, continued=row > 0))
    return lines


def temperatures(v: Viewed, picked: Picked) -> None:
    """The same y_N at several temperatures, side by side, with their entropies."""
    s = v.sampling  # the page's own T is one of the choices (a link from the Lesson has it)
    options = sorted({*TEMPERATURES, float(s.temperature)})
    chosen = st.pills("Temperatures", options, selection_mode="multi",
                      default=[0.5, 1.0, 2.0], key="gen_temps", bind="query-params",
                      format_func=lambda t: f"{t:g}")
    if not chosen:
        st.info("Choose at least one temperature above.", icon=":material/touch_app:")
        return
    panels = []
    for t in sorted(chosen)[:4]:
        p = gen.next_token_probs(v.step.logits, t, s.top_k, s.top_p, s.min_p)
        panels.append((t, p.numpy(), gen.entropy(p)))
    if len(chosen) > 4:
        st.caption("Showing the four lowest temperatures chosen.")
    kept = bool(s.top_k) or (s.top_p is not None and s.top_p < 1) or bool(s.min_p)
    dist, head = ((r"P'", r"P'_T = \sigma(y_N / T)\text{ renormalised over the kept set }S_T")
                  if kept else ("P", r"P_T = \sigma(y_N / T)"))
    st.latex(r"\begin{gathered}" + head + r"\\ " + r",\quad ".join(
        rf"H({dist}_{{{t:g}}}) = {abs(h):.3f}" for t, _, h in panels) +
        rf"\quad(\text{{uniform: }} \log|V| = {np.log(v.step.logits.numel()):.3f})"
        r"\end{gathered}")
    plot(figs.temperature_panels(vocab_labels(picked), panels, v.step.logits.numpy()),
         key="gen_temps_fig")
    st.caption("Same logits $y_N$, same candidates (the 10 largest logits); H in nats. Lower T "
               "sharpens, "
               "higher T flattens; T → 0 puts all mass on the argmax (H = 0), T → ∞ tends to "
               "uniform." + (f" top-k/top-p/min-p of this step applied: {sampling_caption(s)}."
                             if s.top_k or s.top_p or s.min_p else ""))


def samples(v: Viewed, picked: Picked) -> None:
    """Draw N tokens from P_T and set their histogram beside P_T."""
    n = st.number_input("N, the number of draws", 0, MAX_SAMPLES, 1000, step=100,
                        key="gen_samples", bind="query-params", help=f"Up to {MAX_SAMPLES:,}.")
    if n == 0:
        st.info("N = 0 draws gives no histogram: choose N ≥ 1 (try 100, then 10,000, and "
                "watch the bars meet P_T).", icon=":material/bar_chart:")
        return
    counts = gen.sample_counts(v.step.probs, int(n), seed=v.sampling.seed).numpy()
    tv = figs.total_variation(counts, v.step.probs.numpy())
    sym = symbol(v.step, v.sampling)
    a, b = st.columns(2)
    a.metric("Draws", f"{int(counts.sum()):,}")
    b.metric(f"Distance ½Σ|c_i/N − {sym}(i)|", f"{tv:.4f}")
    st.latex(rf"\hat P(i) = \frac{{c_i}}{{N}},\ N = {int(n):,}:\qquad \tfrac12\sum_i "
             rf"\big|\hat P(i) - {sym}(i)\big| = {tv:.4f} \xrightarrow[N\to\infty]{{}} 0")
    plot(figs.sample_histogram(vocab_labels(picked), counts, v.step.probs.numpy(), symbol=sym),
         key="gen_hist")


def attention(v: Viewed, picked: Picked) -> None:
    """Which context tokens the last position read when it produced the new token."""
    cfg = picked.checkpoint.config
    layer, head = layer_and_head(cfg.n_layer, cfg.n_head)
    cache, _ = activations(picked, v.step.context, generation_page_names(layer))
    rows = cache[act_name("pattern", layer)][0, :, -1].numpy()  # (n_head, T): the last query
    scores = cache[act_name("scores", layer)][0, head, -1].numpy()  # (T,)
    tok = picked.checkpoint.tokenizer
    infos = [token_info(tok, j) for j in v.step.context]
    labels = [token_label(t) for t in infos]
    new = vocab_labels(picked)[v.step.chosen]
    st.markdown(f"Layer {layer}, head {head}: how much the last position (**`{labels[-1]}`**, "
                f"whose output became $y_N$ and then **`{new}`**) reads each token of its "
                "context (darker = more).")
    st.html(figs.attention_chips_html(infos, rows[head]))
    st.latex(attention_row(labels[-1], len(labels) - 1, labels, scores, rows[head], cfg.d_head))
    plot(heatmap(rows, labels, [Shown(f"head {h}") for h in range(cfg.n_head)], kind="prob",
                 title=f"layer {layer}: the last position's attention, every head",
                 height=120 + 34 * cfg.n_head), key="gen_attn")


def history_view(hist: History, picked: Picked) -> None:
    """Every step as a row, downloadable."""
    if not hist.turns:
        st.info("No step yet: press *Next token* or *Generate n*.", icon=":material/history:")
        return
    tok, labels, ids = picked.checkpoint.tokenizer, vocab_labels(picked), hist.ids
    n_p, turns = len(hist.prompt_ids), hist.turns
    contexts = [ids[t.cropped: n_p + i] for i, t in enumerate(turns)]  # what step i read
    df = figs.history_table(
        [tok.id_to_string(c[-1]) if len(c) == 1 else
         "".join(tok.id_to_string(j) for j in c[-12:]) for c in contexts],
        [labels[t.chosen] for t in turns], [t.p_chosen for t in turns],
        [t.entropy for t in turns],
        [{"picked": "branch: chosen by hand", "link": "from the link"}.get(
            t.origin, sampling_caption(t.sampling)) for t in turns],
        [t.cropped for t in turns])
    st.dataframe(df, hide_index=True, width="stretch")
    csv_download(df, "generation_history.csv")
    st.caption("Pick a step with *Replay a step* above to see its distribution again.")


VIEWS = {"This step": step_view, "Three temperatures": temperatures, "Sample N times": samples,
         "Attention": attention, "History": history_view, "Branches": branch_view,
         "Beam search": beam_view}
