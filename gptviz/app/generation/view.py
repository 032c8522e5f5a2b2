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
from gptviz.app.generation.prose import sentences
from gptviz.app.generation.state import History
from gptviz.app.generation.turn import Viewed, sampling_caption, short
from gptviz.app.shared.cache import activations, vocab_labels
from gptviz.app.shared.chips import Shown, token_label
from gptviz.app.shared.heatmaps import heatmap
from gptviz.app.shared.inputs import layer_and_head
from gptviz.app.shared.picker import Picked
from gptviz.app.shared.tex import grouped, num, percent
from gptviz.app.shared.widgets import csv_download, data_grid, plot
from gptviz.generation import sampling as gen
from gptviz.generation.sampling import Sampling
from gptviz.i18n import N_, _, ngettext, number, pgettext
from gptviz.model.names import act_name, generation_page_names

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
        _("Replay a step"), list(range(1, n + 1)), key=STEP,
        help=_("Every step keeps its choice, its probability and its entropy; its "
               "distribution is computed again from the text when you replay it."))
    turn = hist.turns[i - 1]
    model = picked.checkpoint.model
    return Viewed(hist.step(i - 1, model.config.context_length, model), turn.sampling, i,
                  turn.origin)


def step_view(v: Viewed, hist: History, picked: Picked, sampling: Sampling) -> None:
    """Top-k bars with the choice marked, P_T and H filled in, the seeds' ↦ chain."""
    labels, step = vocab_labels(picked), v.step
    chosen = labels[step.chosen]
    facts = dict(i=v.index, how=sampling_caption(v.sampling), c=chosen,
                 n=number(len(step.context), 0, grouping=True),
                 p=percent(float(step.probs[step.chosen])))
    if v.taken:
        st.markdown(_step_sentence(v.origin, len(step.context)).format(**facts))
    elif v.sampling.greedy:
        st.markdown(_("**The next step** ({how}): press *Next token* to append the most "
                      "probable token, **`{c}`**.").format(**facts))
    else:
        st.markdown(_("**The next step** ({how}): press *Next token* to append a token drawn "
                      "from this distribution (with this seed: **`{c}`**).").format(**facts))
    left, right = st.columns([1, 1.3])
    k = min(10, int((step.probs > 0).sum()))
    sym = symbol(step, v.sampling)
    chosen_id = step.chosen if v.taken else None
    left.html(bars.topk_html(bars.candidates(labels, step.probs, chosen_id, step.logits,
                                             k=max(k, 1)), chosen_id,
                             title=_("top {k} of {sym} (of |V| = {v})").format(
                                 k=k, sym=sym, v=number(len(labels), 0, grouping=True))))
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
        mode = (_("**Greedy**: $\\arg\\max_i P(i)$, no randomness.") if s.greedy else
                sentences(_("**Sampling**: the token is drawn at random, $t_{{N+1}}\\sim "
                            "{sym}$.").format(sym=sym), _(
                    "$S_k$, $S_p$, $S_{\\min}$ are the ids top-k, top-p and min-p keep (a "
                    "filter that is off keeps all of $V$); the bars, the entropy and the draws "
                    "here are those of $P'$.") if sym != "P_T" else ""))
        cut = ngettext("{n} earlier token was cut to fit the context window N = {n_ctx}.",
                       "{n} earlier tokens were cut to fit the context window N = {n_ctx}.",
                       step.cropped).format(n=number(step.cropped, 0, grouping=True),
                                            n_ctx=picked.checkpoint.config.context_length)
        st.markdown(sentences(mode, cut if step.cropped else ""))
    st.markdown(_("The seeds' picture of generation, live (the underline is what the model "
                  "reads; the boxed token is the one just appended):"))
    for line in chain(hist, picked, v, sampling):
        st.latex(line)


def _step_sentence(origin: str, n: int) -> str:
    """What a taken step did, by where its token came from (``{i}``, ``{how}``, ``{n}``,
    ``{c}`` and ``{p}`` to fill in)."""
    if origin == "picked":
        return ngettext("**Step {i}** ({how}): the model read {n} token and you chose **`{c}`** "
                        "by hand (a branch); it has probability {p}.",
                        "**Step {i}** ({how}): the model read {n} tokens and you chose "
                        "**`{c}`** by hand (a branch); it has probability {p}.", n)
    if origin == "link":
        return ngettext("**Step {i}** ({how}): the model read {n} token and the link says "
                        "**`{c}`** came next; it has probability {p}.",
                        "**Step {i}** ({how}): the model read {n} tokens and the link says "
                        "**`{c}`** came next; it has probability {p}.", n)
    return ngettext("**Step {i}** ({how}): the model read {n} token and drew **`{c}`** with "
                    "probability {p}.", "**Step {i}** ({how}): the model read {n} tokens and "
                    "drew **`{c}`** with probability {p}.", n)


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
    chosen = st.pills(_("Temperatures"), options, selection_mode="multi",
                      default=[0.5, 1.0, 2.0], key="gen_temps", bind="query-params",
                      format_func=short)
    if not chosen:
        st.info(_("Choose at least one temperature above."), icon=":material/touch_app:")
        return
    panels = []
    for t in sorted(chosen)[:4]:
        p = gen.next_token_probs(v.step.logits, t, s.top_k, s.top_p, s.min_p)
        panels.append((t, p.numpy(), gen.entropy(p)))
    if len(chosen) > 4:
        st.caption(_("Showing the four lowest temperatures chosen."))
    kept = bool(s.top_k) or (s.top_p is not None and s.top_p < 1) or bool(s.min_p)
    dist, head = ((r"P'", r"P'_T = \sigma(y_N / T)\ \text{" + _("renormalised over the kept set")
                   + r"}\ S_T") if kept else ("P", r"P_T = \sigma(y_N / T)"))
    st.latex(r"\begin{gathered}" + head + r"\\ " + r",\quad ".join(
        rf"H({dist}_{{{short(t).replace(',', '{,}')}}}) = {num(abs(h))}" for t, _p, h in panels)
        + r"\quad(\text{" + _("uniform:") + rf"}}\ \log|V| = {num(np.log(v.step.logits.numel()))})"
        r"\end{gathered}")
    plot(figs.temperature_panels(vocab_labels(picked), panels, v.step.logits.numpy()),
         key="gen_temps_fig")
    st.caption(sentences(_(
        "Same logits $y_N$, same candidates (the 10 largest logits); H in nats. Lower T "
        "sharpens, higher T flattens; T → 0 puts all mass on the argmax (H = 0), T → ∞ tends "
        "to uniform."), _("top-k/top-p/min-p of this step applied: {how}.").format(
            how=sampling_caption(s)) if s.top_k or s.top_p or s.min_p else ""))


def samples(v: Viewed, picked: Picked) -> None:
    """Draw N tokens from P_T and set their histogram beside P_T."""
    n = st.number_input(_("N, the number of draws"), 0, MAX_SAMPLES, 1000, step=100,
                        key="gen_samples", bind="query-params",
                        help=_("Up to {most}.").format(most=_grouped(MAX_SAMPLES)))
    if n == 0:
        st.info(_("N = 0 draws gives no histogram: choose N ≥ 1 (try 100, then {many}, and "
                  "watch the bars meet P_T).").format(many=_grouped(10_000)),
                icon=":material/bar_chart:")
        return
    counts = gen.sample_counts(v.step.probs, int(n), seed=v.sampling.seed).numpy()
    tv = figs.total_variation(counts, v.step.probs.numpy())
    sym = symbol(v.step, v.sampling)
    a, b = st.columns(2)
    a.metric(_("Draws"), _grouped(int(counts.sum())))
    b.metric(_("Distance ½Σ|c_i/N − {sym}(i)|").format(sym=sym), number(tv, 4))
    st.latex(rf"\hat P(i) = \frac{{c_i}}{{N}},\ N = {grouped(int(n))}:\qquad \tfrac12\sum_i "
             rf"\big|\hat P(i) - {sym}(i)\big| = {num(tv, 4)} \xrightarrow[N\to\infty]{{}} 0")
    plot(figs.sample_histogram(vocab_labels(picked), counts, v.step.probs.numpy(), symbol=sym),
         key="gen_hist")


def attention(v: Viewed, picked: Picked) -> None:
    """Which context tokens the last position read when it produced the new token."""
    cfg = picked.checkpoint.config
    layer, head = layer_and_head(cfg.n_layer, cfg.n_head)
    cache, _last = activations(picked, v.step.context, generation_page_names(layer))
    rows = cache[act_name("pattern", layer)][0, :, -1].numpy()  # (n_head, T): the last query
    scores = cache[act_name("scores", layer)][0, head, -1].numpy()  # (T,)
    tok = picked.checkpoint.tokenizer
    infos = [token_info(tok, j) for j in v.step.context]
    labels = [token_label(t) for t in infos]
    new = vocab_labels(picked)[v.step.chosen]
    st.markdown(_("Layer {layer}, head {head}: how much the last position (**`{last}`**, whose "
                  "output became $y_N$ and then **`{new}`**) reads each token of its context "
                  "(darker = more).").format(layer=layer, head=head, last=labels[-1], new=new))
    st.html(figs.attention_chips_html(infos, rows[head]))
    st.latex(attention_row(labels[-1], len(labels) - 1, labels, scores, rows[head], cfg.d_head))
    plot(heatmap(rows, labels, [Shown(_("head {h}").format(h=h)) for h in range(cfg.n_head)],
                 kind="prob", title=_("layer {layer}: the last position's attention, every "
                                      "head").format(layer=layer),
                 height=120 + 34 * cfg.n_head), key="gen_attn")


def history_view(hist: History, picked: Picked) -> None:
    """Every step as a row, downloadable."""
    if not hist.turns:
        st.info(_("No step yet: press *Next token* or *Generate n*."), icon=":material/history:")
        return
    tok, labels, ids = picked.checkpoint.tokenizer, vocab_labels(picked), hist.ids
    n_p, turns = len(hist.prompt_ids), hist.turns
    contexts = [ids[t.cropped: n_p + i] for i, t in enumerate(turns)]  # what step i read
    origins = {"picked": N_("branch: chosen by hand"), "link": N_("from the link")}
    df = figs.history_table(
        [tok.id_to_string(c[-1]) if len(c) == 1 else
         "".join(tok.id_to_string(j) for j in c[-12:]) for c in contexts],
        [labels[t.chosen] for t in turns], [t.p_chosen for t in turns],
        [t.entropy for t in turns],
        [origins.get(t.origin) or sampling_caption(t.sampling, plain=True) for t in turns],
        [t.cropped for t in turns])  # as the CSV has it: English headers, plain numbers
    shown = df.assign(settings=[_(origins[t.origin]) if t.origin in origins else
                                sampling_caption(t.sampling) for t in turns])
    data_grid(shown.rename(columns=lambda c: pgettext("run step", "step") if c == "step"
                           else _(c)), hide_index=True, width="stretch")
    csv_download(df, "generation_history.csv")
    st.caption(_("Pick a step with *Replay a step* above to see its distribution again."))


def _grouped(n: int) -> str:
    return number(n, 0, grouping=True)


# The tabs' labels: each is also the view's name in the link (?view=), so it stays English;
# the tabs show it translated.
VIEWS = {N_("This step"): step_view, N_("Three temperatures"): temperatures,
         N_("Sample N times"): samples, N_("Attention"): attention, N_("History"): history_view,
         N_("Branches"): branch_view, N_("Beam search"): beam_view}
