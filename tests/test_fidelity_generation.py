"""The Generation page's numbers against a direct float64 computation from the checkpoint
(tests/fidelity.py), on every view and every bundled model: P_T of the next token and its
entropy, three temperatures, N draws against P_T, the attention behind the next token, and
the probabilities and entropies of a few generated steps."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

from tests.fidelity import entropy, forward
from tests.fidelity_read import (
    NUM,
    Checks,
    after,
    check_views,
    checkpoint,
    drawn,
    latex_with,
    numbers,
    prompt_text,
    table,
    worked_row,
)
from tests.helpers import MODELS, array_of, figures, metric, rerun, run_page

pytestmark = pytest.mark.skipif(not MODELS, reason="no bundled models in assets/models")
STEPS = 3  # tokens generated for the History view



def next_logits(ckpt, ids) -> torch.Tensor:
    """y_N for the last ``context_length`` ids."""
    return forward(ckpt, ids[-ckpt.config.context_length:]).logits[0, -1]  # (|V|,)


def settings(at) -> tuple[float, int, float]:
    """T, top-k (0 = off) and top-p (1 = off) as the widgets hold them."""
    return (float(at.slider(key="temperature").value), int(at.number_input(key="top_k").value),
            float(at.slider(key="top_p").value))


def p_t(at, y: torch.Tensor, t: float | None = None) -> torch.Tensor:
    """P_T over S: the top-k ids by logit, then the smallest prefix of them whose mass (after
    renormalising over the top k) is at least p; e^(y_i/T) / Σ_{j∈S} e^(y_j/T) on S, else 0."""
    temp, k, top_p = settings(at)
    order = torch.argsort(-y, stable=True)
    keep = order[:k] if 0 < k < len(y) else order
    mass = torch.softmax(y[keep] / (t or temp), -1).cumsum(0)
    if top_p < 1:
        keep = keep[:int((mass < top_p).sum()) + 1]
    out = torch.zeros_like(y)
    out[keep] = torch.softmax(y[keep] / (t or temp), -1)
    return out


def bar_drawn(at, chk, what: str, want) -> None:
    """Some bar trace's values (x or y) start with ``want``."""
    want = np.asarray(want, dtype=np.float64)
    values = [array_of(t[axis]) for f in figures(at) for t in f["data"] if t["type"] == "bar"
              for axis in ("x", "y") if axis in t and not isinstance(t[axis], str)]
    values += [np.array([float(x) for x in re.findall(r'data-p="([^"]+)"', h.value)])
               for h in at.get("html") if "gv-topk" in h.value]  # bars drawn as HTML
    chk.count += 1
    if not any(v.dtype.kind in "fiu" and len(v) >= len(want) and np.allclose(
            v[:len(want)], want, atol=1e-5, rtol=1e-4) for v in values):
        chk.misses.append(f"{chk.where}: no bar chart shows {what}")


def this_step(at, ckpt, ids, chk):
    t = settings(at)[0]
    y = next_logits(ckpt, ids)
    p = p_t(at, y)
    best = int(p.argmax())
    tex = latex_with(at, "P_T(i)", pattern=r"\\frac\{e\^\{" + NUM + r"\}\}")
    top, log_z = re.search(r"\\frac\{e\^\{(" + NUM + r")\}\}\{e\^\{(" + NUM + r")\}\}",
                           tex).groups()
    chk.shown("y/T of the most probable token", top, y[best] / t)
    chk.shown("log Σ_{j∈S} e^(y_j/T)", log_z, torch.logsumexp(y[p > 0] / t, 0))
    chk.shown("P_T of that token", numbers(tex)[-1], p[best])
    if (y_best := re.search(r"e\^\{(" + NUM + ")/", tex)) is not None:  # e^{y/T}, T written
        chk.shown("y_N of that token", y_best.group(1), y[best])
    if (size := re.search(r"\|S\| = (\d+)", tex)) is not None:
        chk.equal("|S|", int(size.group(1)), int((p > 0).sum()))
    if "m_S" in tex:  # the renormalisation over S, written out
        unfiltered = torch.softmax(y / t, -1)
        mass = float(unfiltered[p > 0].sum())
        chk.shown("m_S, the mass of S under P_T", after(tex, r"m_S\s*&?="), mass)
        num, den = re.search(r"\\frac\{(" + NUM + r")\}\{(" + NUM + r")\}", tex).groups()
        chk.shown("P_T of that token (before renormalising)", num, unfiltered[best])
        chk.shown("m_S in the fraction", den, mass)
    h = entropy(p)
    tex = latex_with(at, "e^{H}")
    chk.shown("H of the distribution drawn from", after(tex, r"H\(P"), h)
    chk.shown("e^H", after(tex, r"e\^\{H\}"), np.exp(h))
    order = torch.argsort(-p, stable=True)
    chain = latex_with(at, r"\mapsto")
    for k, shown in enumerate(re.findall(r"&\s*(\d+\.\d)\\%", chain)):
        chk.shown(f"candidate {k} (%)", shown, 100 * p[order[k]])
    bar_drawn(at, chk, "the top 10 of P_T (those > 0)", p[order[:min(10, int((p > 0).sum()))]])


def temperatures(at, ckpt, ids, chk):
    y = next_logits(ckpt, ids)
    tex = latex_with(at, r"\log|V|", pattern=r"H\(P'?_")
    pairs = re.findall(r"H\(P'?_\{([\d.]+)\}\)\s*=\s*(" + NUM + ")", tex)  # P_T, or P'_T
    chk.equal("temperatures shown", [float(t) for t, _ in pairs], [0.5, 1.0, 2.0])
    for t, shown in pairs:
        chk.shown(f"H(P_{t})", shown, entropy(p_t(at, y, float(t))))
    chk.shown("log |V|", after(tex, r"\\log\|V\|"), np.log(ckpt.config.vocab_size))


def samples(at, ckpt, ids, chk):
    n, seed = int(at.number_input(key="gen_samples").value), int(at.number_input(
        key="seed").value)
    p = p_t(at, next_logits(ckpt, ids))
    gen = torch.Generator().manual_seed(seed)
    counts = torch.bincount(torch.multinomial(p.float(), n, replacement=True, generator=gen),
                            minlength=p.numel()).double()
    tv = 0.5 * float((counts / n - p).abs().sum())
    chk.equal("draws", int(metric(at, "Draws").replace(",", "")), n)
    shown = next(m.value for m in at.metric if m.label.startswith("Distance"))
    chk.shown("½ Σ |c_i/N − P_T(i)|", shown, tv)
    chk.shown("the same distance in the formula", numbers(latex_with(at, r"\hat P"))[-1], tv)
    order = torch.argsort(-p, stable=True)[:10]
    bar_drawn(at, chk, "P_T of the 10 most probable tokens", p[order])
    bar_drawn(at, chk, "c_i / N of those tokens", counts[order] / n)


def attention(at, ckpt, ids, chk):
    layer, head = (int(at.segmented_control(key=k).value) for k in ("layer", "head"))
    g = forward(ckpt, ids[-ckpt.config.context_length:]).layers[layer]
    worked_row(chk, latex_with(at, r"\underset", pattern="softmax"), g["scores"][0, head],
               g["pattern"][0, head], f"L{layer} H{head}")
    drawn(at, chk, {"the last row of every head": g["pattern"][0, :, -1]})


def history(at, ckpt, ids, chk):
    at.number_input(key="gen_n").set_value(STEPS)
    at.button(key="gen_run").click()
    rerun(at)
    made = list(at.session_state["gen_history"].ids)
    chk.equal("tokens generated", len(made) - len(ids), STEPS)
    df = table(at, "P(chosen)", "entropy (nats)")
    for k in range(len(df)):
        p = p_t(at, next_logits(ckpt, made[:len(ids) + k]))
        chk.shown(f"P(chosen) at step {k + 1}", f"{df['P(chosen)'].iloc[k]:.4f}",
                  p[made[len(ids) + k]])
        chk.shown(f"entropy at step {k + 1}", f"{df['entropy (nats)'].iloc[k]:.4f}", entropy(p))


def branches(at, ckpt, ids, chk):
    """The P of each token offered at the viewed step (T = 1, no filter), and each branch's
    log P(text | prompt) = Σ log P(token | the text before it)."""
    made = [int(i) for i in at.session_state["gen_history"].ids]
    step = int(at.session_state["gen_step"]) - 1 if len(made) > len(ids) else 0
    p = torch.softmax(next_logits(ckpt, made[:len(ids) + step]), -1)
    for option in at.selectbox(key="gen_branch_token").options:
        shown, j = re.search(r"P = (\S+)\s+\(id (\d+)\)", option).groups()
        scale = 100 if shown.endswith("%") else 1  # tex.percent: 0.02%, then 2.1e-5
        chk.shown(f"P of id {j} at step {step + 1}", shown, scale * p[int(j)])
    if len(made) > len(ids):
        logp = sum(float(torch.log_softmax(next_logits(ckpt, made[:k]), -1)[made[k]])
                   for k in range(len(ids), len(made)))
        df = table(at, "branch", "log P(text | prompt)")
        chk.shown("log P of the one branch", f"{df['log P(text | prompt)'].iloc[0]:.4f}", logp)


def beams(ckpt, prompt: list[int], width: int, n: int) -> list[list[tuple]]:
    """Beam search in float64: after each step, the k best (score, log P of the last token,
    parent beam, token) of every beam × every token; ties to the lower index."""
    seqs, scores, out = [list(prompt)], torch.zeros(1, dtype=torch.float64), []
    for _ in range(n):
        logp = torch.stack([torch.log_softmax(next_logits(ckpt, s), -1) for s in seqs])
        cand = (scores[:, None] + logp).flatten()
        best = cand.sort(descending=True, stable=True).indices[:width]
        rows = [(float(cand[b]), float(logp[b // logp.shape[1], b % logp.shape[1]]),
                 int(b // logp.shape[1]), int(b % logp.shape[1])) for b in best]
        seqs = [seqs[parent] + [token] for _, _, parent, token in rows]
        scores = cand[best]
        out.append(rows)
    return out


def beam_search(at, ckpt, ids, chk):
    width, n = int(at.slider(key="beam").value), int(at.slider(key="beam_n").value)
    found = beams(ckpt, ids, width, n)
    greedy = beams(ckpt, ids, 1, n)[-1][0][0]
    t = int(at.session_state["beam_step"]) if n > 1 else n
    df = table(at, "beam", "score = log P(text | prompt)")
    chk.close(f"scores after step {t}", df["score = log P(text | prompt)"],
              [r[0] for r in found[t - 1]], atol=6e-4)
    chk.close(f"log P(last token) after step {t}", df["log P(last token | its beam)"],
              [r[1] for r in found[t - 1]], atol=6e-4)
    chk.equal("parent beams", df["from beam"].tolist(), [r[2] for r in found[t - 1]])
    tex = latex_with(at, "greedy")
    beam_shown, greedy_shown = numbers(tex)[:2]
    chk.shown("log P of the best beam", beam_shown, found[-1][0][0])
    chk.shown("log P of the greedy text", greedy_shown, greedy)
    captions = [c.value for c in at.caption if c.value.startswith("log P(text | prompt) =")]
    chk.shown("greedy's caption", re.search(NUM, captions[0]).group(), greedy)
    chk.shown("beam's caption", re.search(NUM, captions[1]).group(), found[-1][0][0])


@pytest.mark.parametrize("model", MODELS)
def test_generation(model):
    check_views("generation", model, {
        "step_view": this_step, "temperatures": temperatures, "samples": samples,
        "attention": attention, "history_view": history, "branch_view": branches,
        "beam_view": beam_search})


@pytest.mark.parametrize("model", MODELS)
def test_generation_with_top_k_and_top_p(model):
    """P_T renormalised over S, the ids top-k and top-p keep, at T = 0.7."""
    ckpt = checkpoint(model)
    text = prompt_text(ckpt)
    ids = ckpt.tokenizer.encode(text)
    at = run_page("generation", model=model, prompt=text)
    at.slider(key="temperature").set_value(0.7)
    at.number_input(key="top_k").set_value(8)
    at.slider(key="top_p").set_value(0.9)
    rerun(at)
    misses = []
    for view, check in (("This step", this_step), ("Three temperatures", temperatures),
                        ("Sample N times", samples)):
        at.session_state["view"] = view
        rerun(at)
        chk = Checks(f"generation / {view} / {model} / T = 0.7, top-k 8, top-p 0.9")
        check(at, ckpt, ids, chk)
        misses += chk.misses
    assert not misses, "\n".join(misses)
