"""The Transformer block page's numbers against a direct float64 computation from the
checkpoint (tests/fidelity.py), on every view and every bundled model: the live tensors'
statistics, LayerNorm on real rows, GELU at one x and the share of negative inputs,
parameter counts from the weights themselves, residual norms and the logit lens."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import torch

from tests.fidelity import EPS, forward, layer_norm, unembedding, weights
from tests.fidelity_read import (
    after,
    check_views,
    labels,
    latex_with,
    numbers,
    opened,
    subsequence,
    table,
    underset_values,
    vectors,
)
from tests.helpers import MODELS, choice_box, metric, rerun

pytestmark = pytest.mark.skipif(not MODELS, reason="no bundled models in assets/models")



def stage_tensors(f, layer: int, head: int) -> list[torch.Tensor]:
    """The block's twelve stages in forward order (batch 0): X, LN₁(X), one head's pattern,
    Z with the heads side by side, Z W_O + b_O, Y (twice: the sum, then the input of LN₂),
    LN₂(Y), A = LN₂(Y) W₁ + b₁, H = act(A), H W₂ + b₂, X'."""
    g = f.layers[layer]
    t = g["z"].shape[2]
    z = g["z"][0].transpose(0, 1).reshape(t, -1)
    return [g["in"][0], g["ln1"][0], g["pattern"][0, head], z, g["attn_out"][0], g["mid"][0],
            g["mid"][0], g["ln2"][0], g["pre"][0], g["post"][0], g["mlp_out"][0],
            g["out"][0]]


def flow_at(at, ckpt, ids, chk, layer: int) -> None:
    f = forward(ckpt, ids)
    df = table(at, "stage", "mean", "std")
    want = [[float(x.mean()), float(x.std(unbiased=False)), float(x.min()), float(x.max())]
            for x in stage_tensors(f, layer, 0)]
    chk.equal(f"layer {layer}: first stage", str(df["stage"].iloc[0]), "X")
    chk.close(f"layer {layer}: mean, std, min, max of each stage",
              df[["mean", "std", "min", "max"]].to_numpy(), np.array(want))
    c, t = ckpt.config, len(ids)
    shapes = {tuple(map(int, s)) for s in re.findall(r"\\mathbb\{R\}\^\{(\d+) \\times (\d+)\}",
                                                    latex_with(at, "LN", r"\mathbb{R}"))}
    chk.equal("shapes in the block's equations", shapes - {(t, c.d_model), (t, c.d_ff),
                                                           (c.d_model, c.d_model),
                                                           (c.d_model, c.d_ff),
                                                           (c.d_ff, c.d_model)}, set())


def flow(at, ckpt, ids, chk):
    flow_at(at, ckpt, ids, chk, 0)
    last = ckpt.config.n_layer - 1
    at.segmented_control(key="layer").set_value(last)
    rerun(at)
    flow_at(at, ckpt, ids, chk, last)
    at.segmented_control(key="layer").set_value(0)
    rerun(at)


def layernorm_at(at, ckpt, ids, chk, which: str) -> None:
    g = forward(ckpt, ids).layers[0]
    x, out = (g["in"][0], g["ln1"][0]) if which == "ln1" else (g["mid"][0], g["ln2"][0])
    mu, var = x.mean(1, keepdim=True), x.var(1, unbiased=False, keepdim=True)
    xhat = (x - mu) / torch.sqrt(var + EPS)
    df = table(at, "mean before", "var before")
    for name, rows in (("before", x), ("standardised", xhat), ("after", out)):
        chk.close(f"{which}: mean {name}", df[f"mean {name}"], rows.mean(1), atol=1e-5)
        chk.close(f"{which}: var {name}", df[f"var {name}"], rows.var(1, unbiased=False))
    tex = latex_with(at, r"\hat x", pattern=r"\\mu\s*&?=")
    last = len(ids) - 1
    chk.shown(f"{which}: μ of the last row", after(tex, r"\\mu\s*&?="), mu[last, 0])
    chk.shown(f"{which}: σ² of the last row", after(tex, r"\\sigma\^2 ="), var[last, 0])
    chk.shown(f"{which}: var(x̂)", after(tex, r"\\operatorname\{var\}"), xhat[last].var(
        unbiased=False))
    chk.small(f"{which}: mean(x̂)", after(tex, r"\\operatorname\{mean\}"), 1e-6)
    xs, xhats, outs = vectors(tex)[:3]
    for name, shown, v in (("x", xs, x[last]), ("x̂", xhats, xhat[last]), ("LN(x)", outs,
                                                                          out[last])):
        chk.vector(f"{which}: {name}", shown, v)


def layernorm(at, ckpt, ids, chk):
    layernorm_at(at, ckpt, ids, chk, "ln1")
    at.segmented_control(key="which_ln").set_value("ln2")
    rerun(at)
    layernorm_at(at, ckpt, ids, chk, "ln2")


def activations(at, ckpt, ids, chk):
    x = float(at.slider(key="act_x").value)
    tex = latex_with(at, r"\Phi", "ReLU", pattern=r"tanh")
    lines = tex.split(r"\\")
    exact = 0.5 * x * (1 + math.erf(x / math.sqrt(2)))
    tanh = 0.5 * x * (1 + math.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    for key, value in ((r"\Phi", exact), ("tanh", tanh), ("ReLU", max(x, 0.0))):
        line = next(s for s in lines if key in s)
        chk.shown(f"{key} at x = {x}", numbers(line)[-1], value)
    pre = forward(ckpt, ids).layers[0]["pre"]
    share = next(m.value for m in at.metric if "< 0" in m.label)
    chk.shown("share of the FFN's inputs below 0 (%)", share.rstrip(" %"),
              100 * float((pre < 0).double().mean()))
    count = next(m.value for m in at.metric if re.fullmatch(r"[\d,]+", m.value))
    chk.equal("FFN inputs in the layer", int(count.replace(",", "")), pre.numel())
    grid = torch.linspace(-4, 4, 401, dtype=torch.float64)
    gap = (0.5 * grid * (1 + torch.erf(grid / math.sqrt(2))) - 0.5 * grid * (
        1 + torch.tanh(math.sqrt(2 / math.pi) * (grid + 0.044715 * grid ** 3)))).abs().max()
    shown = re.search(r"max \|exact − tanh\| = ([\d.]+e-\d+)",
                      " ".join(c.value for c in at.caption)).group(1)
    chk.shown("max |exact − tanh| on [−4, 4]", shown, float(gap))


def counts_of(W: dict[str, torch.Tensor]) -> dict[str, int]:
    """Parameters per component, counted from the state_dict: E, P, and over all blocks LN₁,
    W_QKV, its bias, W_O (+ b_O), LN₂, the FFN; the final LN, W_U unless tied to E."""
    tied = W["unembed.weight"].shape == W["embed.weight"].shape and torch.equal(
        W["unembed.weight"], W["embed.weight"])
    groups: dict[str, int] = {}
    for name, t in W.items():
        if name == "unembed.weight" and tied:
            continue
        key = re.sub(r"blocks\.\d+\.", "", name)
        key = (key if "W_QKV" in key else "mlp" if key.startswith("mlp.") else
               key.rsplit(".", 1)[0])
        groups[key] = groups.get(key, 0) + t.numel()
    return groups


def gpt2_small(tied: bool) -> int:
    """GPT_CONFIG_124M of the seeds with every bias but W_Q, W_K, W_V's."""
    v, n, d, n_layer, d_ff = 50257, 1024, 768, 12, 3072
    block = 2 * d + 3 * d * d + (d * d + d) + 2 * d + (2 * d * d_ff + d_ff + d)
    return v * d + n * d + n_layer * block + 2 * d + (0 if tied else v * d)


def parameters(at, ckpt, ids, chk):
    groups = counts_of(weights(ckpt))
    total = sum(groups.values())
    df = table(at, "component", "parameters")
    rows = dict(zip(df["component"], df["parameters"], strict=True))
    chk.equal("total row", int(rows.pop("total")), total)
    chk.equal("per-component counts (sorted)", sorted(v for v in rows.values() if v),
              sorted(groups.values()))
    chk.equal("positional row", next(v for k, v in rows.items() if "positional" in k),
              groups.get("pos.P", 0))
    live = re.search(r"live model has ([\d,]+) parameters", " ".join(c.value for c in at.caption))
    chk.equal("the live model's count", int(live.group(1).replace(",", "")), total)
    seeds = table(at, "component", "untied")
    chk.equal("GPT_CONFIG_124M totals", seeds.iloc[-1].tolist()[1:],
              [gpt2_small(True), gpt2_small(False)])


def residual_and_lens(at, ckpt, ids, chk):
    f = forward(ckpt, ids)
    states = [f.x[0]] + [g[k][0] for g in f.layers for k in ("mid", "out")]  # (T, d) each
    norms = table(opened(at, "norms_table"), "token", "embed")
    chk.close("‖x_t‖ at every stage", norms.iloc[:, 1:].to_numpy(),
              torch.stack([s.norm(dim=1) for s in states], 1))
    W = weights(ckpt)
    lens = table(at, "read after", "probability")
    read = [f.x[0, -1]] + [g["out"][0, -1] for g in f.layers]  # embeddings, after each block
    k = int(lens["rank"].max())
    probs = torch.softmax(layer_norm(torch.stack(read), W["ln_final.lam"], W.get("ln_final.b"))
                          @ unembedding(ckpt, W), -1)
    top = torch.topk(probs, k)
    chk.close("logit lens probabilities", lens["probability"].to_numpy().reshape(-1, k),
              top.values, atol=1e-5)
    chk.equal("logit lens tokens", lens["token"].tolist(),
              [x for row in top.indices for x in labels(ckpt, row)])
    chk.equal("logit lens rows", len(lens) // k, ckpt.config.n_layer + 1)
    tex = latex_with(at, r"\mathrm{softmax}", pattern=r"\(p = ")
    for row, p in enumerate(re.findall(r"\(p = ([\d.]+)\)", tex)):
        chk.shown(f"top guess of row {row}", p, top.values[row, 0])


def attribution(at, ckpt, ids, chk):
    """Direct logit attribution: with the final LayerNorm's σ frozen, each writer c of the
    residual stream adds ((c − mean c) ⊙ λ/σ) · W_U[:, t]; the LN bias adds b_f · W_U[:, t]."""
    f, W, c = forward(ckpt, ids), weights(ckpt), ckpt.config
    pos, token = int(choice_box(at, "dla_position").value), int(at.selectbox(
        key="dla_token").value)
    x = f.layers[-1]["out"][0, pos]
    sigma = torch.sqrt(x.var(unbiased=False) + EPS)
    u = unembedding(ckpt, W)[:, token]

    def share(v: torch.Tensor) -> float:
        return float(((v - v.mean()) * W["ln_final.lam"] / sigma) @ u)

    dk = c.d_head
    kinds = {"token": [share(W["embed.weight"][ids[pos]])],
             "position": [share(f.x[0, pos] - W["embed.weight"][ids[pos]])], "heads": [],
             "b_O": [], "FFN": [], "b_f": [float(W["ln_final.b"] @ u)] if "ln_final.b" in W
             else []}
    for ly, g in enumerate(f.layers):
        w_o = W[f"blocks.{ly}.attn.W_O.weight"].T  # (d, d): z W_O
        heads = [share(g["z"][0, h, pos] @ w_o[h * dk:(h + 1) * dk]) for h in range(c.n_head)]
        per_layer = at.segmented_control(key="dla_heads").value == "per layer"
        kinds["heads"] += [sum(heads)] if per_layer else heads
        if f"blocks.{ly}.attn.W_O.bias" in W:
            kinds["b_O"].append(share(W[f"blocks.{ly}.attn.W_O.bias"]))
        kinds["FFN"].append(share(g["mlp_out"][0, pos]))
    bars = sorted(v for vs in kinds.values() for v in vs)
    logit = float(f.logits[0, pos, token])
    df = table(at, "component", "adds to the logit")
    chk.close("every bar (sorted)", sorted(df["adds to the logit"]), bars, atol=1e-4)
    chk.shown("Σ of the bars", metric(at, "Σ of the bars"), sum(bars))
    chk.shown("the model's logit", metric(at, "the model's logit"), logit)
    tex = latex_with(at, r"\underset", pattern=r"\\sigma")
    chk.shown("σ of the final LayerNorm", after(tex, r"\\sigma = \\sqrt"), sigma)
    line = next(s for s in tex.split(r"\\") if r"\underset" in s)
    subsequence(chk, "the sums by kind", underset_values(line), [sum(v) for v in kinds.values()
                                                                  if v])
    chk.shown("their total", numbers(line)[-1], logit)


def commitment(at, ckpt, ids, chk):
    """The logit lens's top-1 after every block at every position, and the first stage from
    which it is the model's final prediction and stays so."""
    f, W = forward(ckpt, ids), weights(ckpt)
    states = torch.stack([f.x[0]] + [g["out"][0] for g in f.layers])  # (S, T, d)
    top1 = (layer_norm(states, W["ln_final.lam"], W.get("ln_final.b")) @ unembedding(ckpt, W)
            ).argmax(-1)  # (S, T)
    settled = top1 == top1[-1]  # (S, T)
    first = settled.int().argmax(0)  # (T,) the first stage with the final top-1
    # the stage from which it stays the final one (a flip back later does not count)
    kept = torch.tensor([max((s for s in range(len(top1)) if not settled[s, t]), default=-1) + 1
                         for t in range(top1.shape[1])])  # (T,)
    df = table(at, "final top-1", "commits after")
    chk.equal("final top-1", df["final top-1"].tolist(), labels(ckpt, top1[-1]))
    stage = [0 if s == "embeddings" else int(re.search(r"(\d+)$", s).group(1)) + 1
             for s in df["commits after"]]
    chk.equal("the commitment stage of each position", stage, first.tolist())
    for s in range(len(top1) - 1):
        column = [c for c in df.columns if c.startswith("top-1 ")][s]
        chk.equal(f"top-1 in column {column!r}", df[column].tolist(), labels(ckpt, top1[s]))
    early = re.search(r"(\d+) of (\d+) positions", " ".join(c.value for c in at.caption))
    chk.equal("positions committed before the last block", int(early.group(1)),
              int((kept < len(top1) - 1).sum()))


@pytest.mark.parametrize("model", MODELS)
def test_block(model):
    check_views("block", model, {
        "flow": flow, "layernorm": layernorm, "activation_functions": activations,
        "parameters": parameters, "residual_and_lens": residual_and_lens,
        "attribution_view": attribution, "commitment_view": commitment})
