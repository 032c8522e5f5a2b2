"""The Attention page's numbers against a direct float64 computation from the checkpoint
(tests/fidelity.py), on every view and every bundled model: patterns and the worked row,
Q, K, V and Z, the masks, ablation, the circuits W_QK and W_OV, the head taxonomy, the sum
over heads and rollout. Layer 0 head 0 first, then the last layer's last head."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import torch

from tests.fidelity import forward, unembedding, weights
from tests.fidelity_read import (
    NOT_INDEX,
    NUM,
    check_views,
    drawn,
    latex_with,
    numbers,
    opened,
    table,
    worked_row,
)
from tests.helpers import MODELS, choice_box, rerun

pytestmark = pytest.mark.skipif(not MODELS, reason="no bundled models in assets/models")



def chosen(at) -> tuple[int, int]:
    return int(at.segmented_control(key="layer").value), int(at.segmented_control(
        key="head").value)


def square(at, chk, what: str, want: torch.Tensor) -> None:
    """A (T, T) matrix is drawn as a heatmap, and equals the view's table if it has one
    (index 'query \\ key')."""
    drawn(at, chk, {what: want})
    for d in at.dataframe:
        if d.value.index.name == "query \\ key":
            chk.close(f"{what} (table)", d.value.to_numpy(), want)


def patterns(ckpt, ids) -> torch.Tensor:
    return torch.stack([g["pattern"][0] for g in forward(ckpt, ids).layers])  # (L, H, T, T)


def head_matrices(ckpt, layer: int, head: int) -> dict[str, torch.Tensor]:
    """W_Q^h, W_K^h, W_V^h (d, d_k), W_O^h (d_k, d) and b_Q^h, b_K^h (d_k,) of one head."""
    W, c = weights(ckpt), ckpt.config
    d, dk = c.d_model, c.d_head
    qkv = W[f"blocks.{layer}.attn.W_QKV.weight"]  # (3d, d): out = x qkvᵀ
    bias = W.get(f"blocks.{layer}.attn.W_QKV.bias", torch.zeros(3 * d, dtype=torch.float64))
    cols = [slice(k * d + head * dk, k * d + (head + 1) * dk) for k in range(3)]
    out = {name: qkv[s].T for name, s in zip("QKV", cols, strict=True)}
    out |= {f"b{name}": bias[s] for name, s in zip("QK", cols, strict=False)}
    out["O"] = W[f"blocks.{layer}.attn.W_O.weight"].T[head * dk:(head + 1) * dk]  # (d_k, d)
    return out


def overview_at(at, ckpt, ids, chk):
    layer, head = chosen(at)
    g = forward(ckpt, ids).layers[layer]
    P, S = g["pattern"][0, head], g["scores"][0, head]
    i = int(choice_box(at, "query").value)
    top = torch.argsort(-P[i], stable=True)[:5]
    df = table(at, "key", "weight")
    chk.equal(f"L{layer} H{head}: top keys", [int(k.split(":")[0]) for k in df["key"]],
              top.tolist())
    chk.close(f"L{layer} H{head}: top weights", df["weight"], P[i, top])
    square(at, chk, f"L{layer} H{head}: W_attn", P)
    worked_row(chk, latex_with(at, r"\underset", pattern="softmax"), S, P, f"L{layer} H{head}")
    tex = latex_with(at, "v_{", pattern=r"z_\{\d+\}")
    label = r"\\underset\{(?:[^{}]|\{[^{}]*\})*\}"  # \underset{\text{token}}{v_{j}}
    for w, j in re.findall(r"(" + NUM + r")\\,\s*" + label + r"\{v_\{(\d+)\}\}", tex):
        chk.shown(f"L{layer} H{head}: w_{{{i},{j}}} in z_i", w, P[i, int(j)])


def overview(at, ckpt, ids, chk):
    overview_at(at, ckpt, ids, chk)
    at.segmented_control(key="layer").set_value(ckpt.config.n_layer - 1)
    at.segmented_control(key="head").set_value(ckpt.config.n_head - 1)
    rerun(at)
    overview_at(at, ckpt, ids, chk)  # the other views now show this head


def steps(at, ckpt, ids, chk):
    layer, head = chosen(at)
    g = forward(ckpt, ids).layers[layer]
    opened(at, "step_tables")
    for k, name in enumerate("QKVZ"):
        if k:
            at.segmented_control(key="step_table").set_value(name)
            rerun(at)
        want = g[name.lower()][0, head]  # (T, d_k)
        df = next(d.value for d in at.dataframe if d.value.shape == tuple(want.shape))
        chk.close(f"L{layer} H{head}: {name} table", df.to_numpy(), want)
    drawn(at, chk, {"Q": g["q"][0, head], "K": g["k"][0, head], "V": g["v"][0, head],
                    "the scores": g["scores"][0, head], "W_attn": g["pattern"][0, head],
                    "Z": g["z"][0, head]})


def masks(at, ckpt, ids, chk):
    x = forward(ckpt, ids).x[0]
    S = x @ x.T
    causal = torch.softmax(S.masked_fill(torch.triu(torch.ones_like(S, dtype=torch.bool), 1),
                                         -math.inf), -1)
    drawn(at, chk, {"softmax(X Xᵀ)": torch.softmax(S, -1), "its causal form": causal})
    for tex in (latex_with(at, r"\max|\Delta|"), latex_with(at, "SDPA")):
        for k, shown in enumerate(numbers(tex)):
            chk.small(f"max |Δ| #{k} of a check that two forms agree", shown, 1e-5)


def ablation(at, ckpt, ids, chk):
    heads = tuple(tuple(h) for h in at.multiselect(key="ablate").value)
    chk.equal("ablated heads (this view's default: the chosen head)", heads, (chosen(at),))
    before, after = forward(ckpt, ids).probs(), forward(ckpt, ids, ablate=heads).probs()
    df = table(at, "id", "P all heads", "P ablated")
    top = df["id"].to_numpy()
    chk.close("P all heads", df["P all heads"], before[top], atol=1e-5)
    chk.close("P ablated", df["P ablated"], after[top], atol=1e-5)
    chk.close("change", df["change"], (after - before)[top], atol=1e-5)
    tex = latex_with(at, r"\leftarrow 0")
    p0, p1 = re.search(r"(" + NUM + r")\s*\\to\s*(" + NUM + ")", tex).groups()
    chk.shown("P(top token) with all heads", p0, before[top[0]])
    chk.shown("P(top token) ablated", p1, after[top[0]])
    chk.shown("½ Σ |P − P′|", numbers(tex)[-1], 0.5 * float((before - after).abs().sum()))


def circuits(at, ckpt, ids, chk):
    layer, head = chosen(at)
    w = head_matrices(ckpt, layer, head)
    x = forward(ckpt, ids).layers[layer]["ln1"][0]  # (T, d): x̂ = LN₁(X)
    tex = latex_with(at, r"\underbrace")
    i, j = (int(g) for g in re.search(r"s_\{(\d+),(\d+)\}", tex).groups())
    terms = [x[i] @ w["Q"] @ w["K"].T @ x[j], x[i] @ w["Q"] @ w["bK"],
             w["bQ"] @ w["K"].T @ x[j], w["bQ"] @ w["bK"]]
    shown = re.findall(r"\\underbrace\{(" + NUM + r")\}", tex)
    for k, (s, v) in enumerate(zip(shown, terms, strict=False)):
        chk.shown(f"L{layer} H{head}: term {k} of s_{{{i},{j}}}", s, v)
    score = float(sum(terms[:len(shown)])) / math.sqrt(ckpt.config.d_head)
    for s in numbers(tex)[-2:]:
        chk.shown(f"L{layer} H{head}: s_{{{i},{j}}}", s, score)
    for s in numbers(latex_with(at, r"\max_{i,j}")):
        chk.small("max |Δ| of the score identity", s, 1e-4)
    drawn(at, chk, {"W_QK": w["Q"] @ w["K"].T, "W_OV": w["V"] @ w["O"]})


def ov(at, ckpt, ids, chk):
    layer, head = chosen(at)
    w, W = head_matrices(ckpt, layer, head), weights(ckpt)
    source = int(at.selectbox(key="ov_source").value)
    chk.equal("source token (the prompt's last)", source, ids[-1])
    logits = W["embed.weight"][source] @ w["V"] @ w["O"] @ unembedding(ckpt, W)  # (|V|,)
    df = table(at, "id", "logit change")
    top = torch.argsort(-logits, stable=True)[:len(df)]
    chk.equal("ids raised most", df["id"].tolist(), top.tolist())
    chk.close("logit changes", df["logit change"], logits[top], atol=1e-5)
    chk.shown("max_t ℓ_t", numbers(latex_with(at, r"\ell_t"))[-1], logits.max())


def induction(ckpt) -> np.ndarray:
    """Each head's mean weight, on r r (r random letters or digits), from a repeat's token to
    the one after its first copy; averaged over the lengths 10 and 20 that fit."""
    from gptviz.analysis.induction import (
        STANDARD_LENGTHS,
        STANDARD_SEED,
        STANDARD_SEQUENCES,
        ordinary_ids,
        repeated_random,
    )

    out = []
    for n in (n for n in STANDARD_LENGTHS if 2 * n <= ckpt.config.context_length):
        seqs = repeated_random(ordinary_ids(ckpt.tokenizer), n, STANDARD_SEQUENCES, STANDARD_SEED)
        rows = torch.arange(n, 2 * n)
        out.append(torch.stack([g["pattern"][:, :, rows, rows - n + 1].mean((0, 2))
                                for g in forward(ckpt, seqs).layers]))
    return torch.stack(out).mean(0).numpy()  # (L, H)


def taxonomy(at, ckpt, ids, chk):
    p = patterns(ckpt, ids)  # (L, H, T, T)
    rows = torch.arange(2, len(ids))
    want = {"previous-token": p[..., rows, rows - 1].mean(-1), "first token":
            p[..., rows, 0].mean(-1), "self": p[..., rows, rows].mean(-1),
            "entropy (nats)": -(p * p.clamp_min(1e-300).log()).sum(-1).mean(-1),
            "induction": induction(ckpt)}
    df = table(at, "layer", "head", *want)
    for name, v in want.items():
        chk.close(f"{name} per head", df[name], np.asarray(v).reshape(-1), atol=1e-5)
    t = len(ids)
    uniform = np.mean([math.log(k + 1) for k in range(t)])
    shown = re.search(r"would give (\d+\.\d+) nats", " ".join(c.value for c in at.caption))
    chk.shown("uniform causal attention's entropy", shown.group(1), uniform)


def summed(at, ckpt, ids, chk):
    p = patterns(ckpt, ids)
    tex = latex_with(at, pattern=r"S\^\{\(\d+\)\}_\{\d+,\d+\}")
    m = re.search(r"S\^\{\((\d+)\)\}_\{(\d+),(\d+)\}", tex)
    layer, i, j = (int(g) for g in m.groups())
    values = re.findall(NUM + NOT_INDEX, tex[m.end():])
    per_head = p[layer, :, i, j]
    for k, s in enumerate(values[:-1]):
        chk.shown(f"A^({layer},{k})_{{{i},{j}}}", s, per_head[k])
    chk.shown(f"S^({layer})_{{{i},{j}}}", values[-1], per_head.sum())
    chk.equal("heads in the sum", len(values) - 1, ckpt.config.n_head)
    for ly in range(len(p)):
        square(at, chk, f"layer {ly}'s sum over heads", p[ly].sum(0))


def rollout(at, ckpt, ids, chk):
    p = patterns(ckpt, ids)
    R = torch.eye(len(ids), dtype=torch.float64)
    for ly, a in enumerate(p.mean(1)):  # (T, T) per layer, mean over heads
        mixed = 0.5 * a + 0.5 * torch.eye(len(ids), dtype=torch.float64)
        R = (mixed / mixed.sum(-1, keepdim=True)) @ R
        square(at, chk, f"rollout R after layer {ly}", R)
    chk.small("max |Σ_j R_ij − 1|", numbers(latex_with(at, r"R^{(-1)}"))[-1], 1e-9)


@pytest.mark.parametrize("model", MODELS)
def test_attention(model):
    check_views("attention", model, {
        "overview": overview, "head_steps": steps, "masks_and_check": masks,
        "ablation_view": ablation, "circuits_view": circuits, "ov_view": ov,
        "taxonomy_view": taxonomy, "summed_view": summed, "rollout_view": rollout})
