"""Every number the Embeddings, Positional encoding and Transformer block pages show (inside
LaTeX, in metrics, captions and tables), on every view and every bundled model, equals a
direct float64 computation from the checkpoint's weights (tests/fidelity.py). The Attention
and Generation pages are in tests/test_fidelity_attention.py.

One AppTest run per page and model; the views are switched through ``view``. Numbers are
located by what stands next to them, not by whole formulas, so the wording may change."""

from __future__ import annotations

import functools
import math
import re

import numpy as np
import pytest
import torch

from gptviz.checkpoints.folder import initial_model, training_seed
from tests.fidelity import forward, forward_uncached, positions_table, weights
from tests.fidelity_read import (
    check_views,
    dims,
    drawn,
    labels,
    latex_with,
    numbers,
    opened,
    table,
    vectors,
)
from tests.helpers import MODELS

pytestmark = pytest.mark.skipif(not MODELS, reason="no bundled models in assets/models")



def neighbours(E: torch.Tensor, token: int, n: int) -> tuple[list[int], np.ndarray]:
    unit = E / E.norm(dim=1, keepdim=True)
    sims = unit @ unit[token]
    sims[token] = -math.inf
    top = torch.topk(sims, n)
    return top.indices.tolist(), top.values.numpy()


# ---- Embeddings ---------------------------------------------------------------------------

def lookup(at, ckpt, ids, chk):
    E = weights(ckpt)["embed.weight"]
    df = table(at, "id", "token")
    chk.equal("ids", df["id"].tolist(), ids)
    chk.close("E[ids], shown dimensions", df[dims(df)].to_numpy(), E[ids][:, :len(dims(df))])
    tex = latex_with(at, r"\mathrm{OH}", pattern=r"e_\{\d+\}")
    token = int(re.search(r"e_\{(\d+)\}", tex).group(1))
    chk.equal("id of the worked token (the last)", token, ids[-1])
    chk.vector("A_{id,:}", vectors(tex)[-1], E[token])


def vocabulary(at, ckpt, ids, chk):
    E = weights(ckpt)["embed.weight"]
    specials = ckpt.tokenizer.special_tokens
    unused = {specials[t] for t in ("<|BOS|>", "<|EOS|>", "<|UNK|>", "<|PAD|>") if t in specials}
    fitted = E[[i for i in range(E.shape[0]) if i not in unused]]  # the page leaves them out
    x = fitted - fitted.mean(0)
    s = torch.linalg.svdvals(x) ** 2
    k, share = re.search(r"top (\d) principal axes keep ([\d.]+) %",
                         " ".join(c.value for c in at.caption)).groups()
    chk.shown("PCA variance kept (%)", share, float(100 * s[:int(k)].sum() / s.sum()))
    df = table(at, "id", "cosine")
    top, sims = neighbours(E, ids[-1], len(df))
    chk.equal("neighbour ids", df["id"].tolist(), top)
    chk.close("neighbour cosines", df["cosine"], sims)
    chk.shown("max cos in the formula", numbers(latex_with(at, r"\cos"))[-1], sims[0])


def trained_vs_fresh(at, ckpt, ids, chk):
    df = table(at, "trained: cosine", "fresh: cosine")
    fresh = initial_model(ckpt.config, training_seed(ckpt.card)).embed.weight.detach().double()
    for name, E in (("trained", weights(ckpt)["embed.weight"]), ("fresh", fresh)):
        top, sims = neighbours(E, ids[-1], len(df))
        chk.close(f"{name} cosines", df[f"{name}: cosine"], sims)
        chk.equal(f"{name} tokens", df[f"{name}: token"].tolist(), labels(ckpt, top))


@pytest.mark.parametrize("model", MODELS)
def test_embeddings(model):
    check_views("embeddings", model, {"lookup": lookup, "vocabulary": vocabulary,
                                      "trained_vs_fresh": trained_vs_fresh})


# ---- Positional encoding ------------------------------------------------------------------

def sinusoids(n: int, d: int) -> torch.Tensor:
    i = torch.arange(n, dtype=torch.float64)[:, None]
    k = torch.arange(d)
    angle = i / 10000 ** ((k - k % 2) / d)
    return torch.where(k % 2 == 0, torch.sin(angle), torch.cos(angle))  # (N, d)


def sinusoidal(at, ckpt, ids, chk):
    c = ckpt.config
    P = sinusoids(c.context_length, c.d_model)
    tex = latex_with(at, "10000^{", pattern=r"p_\{\d+,\d+\}")
    i, dim = (int(g) for g in re.search(r"p_\{(\d+),(\d+)\}", tex).groups())
    angle = i / 10000 ** ((dim - dim % 2) / c.d_model)
    chk.shown("angle", re.search(r"\\(?:sin|cos)\(([-\d.]+)\)", tex).group(1), angle)
    chk.shown(f"p_{{{i},{dim}}}", numbers(tex)[-1], P[i, dim])
    df = table(opened(at, "table-sinusoidal"), "position", "d0")
    chk.close("the PE table", df[dims(df)].to_numpy(), P[:, :len(dims(df))])
    drawn(at, chk, {"PE": P, "PE PEᵀ": P @ P.T})
    tex = latex_with(at, r"\cos\big(\omega_k")
    i, j = (int(g) for g in re.search(r"PE_\{(\d+)\}\s*\\cdot\s*PE_\{(\d+)\}", tex).groups())
    k = torch.arange(0, c.d_model, 2, dtype=torch.float64)
    line = tex[tex.index(f"PE_{{{i}}}"):]
    dot, cosines = numbers(line)[:2]
    chk.shown(f"PE_{i} · PE_{j}", dot, P[i] @ P[j])
    chk.shown(f"Σ_k cos(ω_k ({i} − {j}))", cosines, torch.cos((i - j) / 10000 ** (k / c.d_model))
              .sum())
    chk.small("max |PE_i·PE_j − Σ cos|", numbers(tex)[-1], 1e-9)


def learned(at, ckpt, ids, chk):
    P = positions_table(ckpt, weights(ckpt))
    df = table(opened(at, "table-model"), "position", "d0")
    chk.close("this model's PE table", df[dims(df)].to_numpy(), P[:, :len(dims(df))])
    drawn(at, chk, {"P": P, "P Pᵀ": P @ P.T})


def x_plus_pe(at, ckpt, ids, chk):
    W = weights(ckpt)
    X, P = W["embed.weight"][ids], positions_table(ckpt, W)[:len(ids)]
    tex = latex_with(at, "x_{", "E[")
    pos = int(re.search(r"x_\{(\d+)\}", tex).group(1))
    e, p, s = vectors(tex)[-3:]
    chk.equal("worked position (the last)", pos, len(ids) - 1)
    for name, shown, v in (("E[t_i]", e, X[pos]), ("p_i", p, P[pos]), ("sum", s, X[pos] + P[pos])):
        chk.vector(name, shown, v)
    df = table(at, "position", "token")
    chk.close("norms ‖E[t_i]‖, ‖p_i‖, ‖E[t_i] + p_i‖", df.iloc[:, 2:5].to_numpy(),
              torch.stack([X.norm(dim=1), P.norm(dim=1), (X + P).norm(dim=1)], 1))
    means = re.search(r"\\lVert E\[t_i\] \\rVert = (\d+\.\d+)\$ and \$\\lVert p_i \\rVert = "
                      r"(\d+\.\d+)",
                      " ".join(c.value for c in at.caption)).groups()
    chk.shown("mean ‖E[t_i]‖", means[0], X.norm(dim=1).mean())
    chk.shown("mean ‖p_i‖", means[1], P.norm(dim=1).mean())


def order(at, ckpt, ids, chk):
    from gptviz.analysis.positions import prefix_order

    pi = prefix_order(len(ids), int(at.session_state["order_seed"])
                      if "order_seed" in at.session_state else 0)
    chk.vector("π", vectors(latex_with(at, r"\pi"))[0], pi)
    shuffled = [ids[k] for k in pi]
    for label, pos, causal in (("with the causal mask", False, True),
                               ("without the mask", False, False),
                               ("with positions and mask", True, True)):
        shown = next(m.value for m in at.metric if m.label.endswith(label))
        a, b = (forward(ckpt, x, positions=pos, causal=causal).logits[0, -1]
                for x in (ids, shuffled))
        delta = float((a - b).abs().max())
        (chk.small if not causal else chk.shown)(f"Δ {label}", shown, 1e-4 if not causal
                                                  else delta)
    p = forward(ckpt, ids, positions=False).probs()
    df = table(at, "as typed", "P (as typed)")
    top = torch.topk(p, len(df))
    chk.close("P (as typed)", df["P (as typed)"], top.values)
    chk.equal("tokens (as typed)", df["as typed"].tolist(), labels(ckpt, top.indices))


CROP_AT = (1, 2, 3, 4)  # position k·N − 1 of the long texts, read cropped to the last N


@functools.cache
def compared_runs() -> dict[str, tuple]:
    """The runs of the Positional comparison (assets/positional) but RoPE, which the direct
    pass does not implement: each run, its validation loss on the Trainer's fixed batches,
    and the mean −log P of its long texts at some positions, in float64: every position of
    the first window; for learned, positions k·N − 1 read cropped to the last N tokens; for
    none, every position of the whole text read in one pass."""
    import torch.nn.functional as F

    from gptviz.analysis.compare_positions import load_runs, long_texts
    from gptviz.data import CORPORA_DIR, SlidingWindowDataset, split_text

    out = {}
    for kind, run in load_runs().items():
        if kind == "rope":
            continue
        r, n = run.card["recipe"], run.config.context_length
        val = run.tokenizer.encode(split_text((CORPORA_DIR / r["corpus"]).read_text("utf-8"),
                                              0.1)[1])
        batches = SlidingWindowDataset(val, n, n).fixed_batches(r["eval_batches"],
                                                                r["batch_size"])
        x, y = (torch.cat(b) for b in zip(*batches, strict=True))  # equal batches: one pass
        val_loss = float(F.cross_entropy(forward_uncached(run, x, True, True, ()).logits
                                         .flatten(0, 1), y.flatten()))
        texts = long_texts(val, r["long_factor"] * n, r["long_texts"])  # (B, L + 1)

        def nll(logits, targets):  # (B, T, |V|), (B, T) -> (T,) mean over the texts
            return F.cross_entropy(logits.transpose(1, 2), targets, reduction="none").mean(0)

        at = {t: float(v) for t, v in enumerate(nll(forward_uncached(
            run, texts[:, :n], True, True, ()).logits, texts[:, 1:n + 1]))}
        if kind == "learned":
            for k in CROP_AT:
                t = k * n - 1
                last = forward_uncached(run, texts[:, t - n + 1:t + 1], True, True, ())
                at[t] = float(nll(last.logits[:, -1:], texts[:, t + 1:t + 2])[0])
        if kind == "none":
            whole = forward_uncached(run, texts[:, :-1], False, True, ()).logits
            at |= {("whole", t): float(v) for t, v in enumerate(nll(whole, texts[:, 1:]))}
        out[kind] = (val_loss, at)
    return out


def compare(at, ckpt, ids, chk):
    """The table is the runs' recorded losses (their cards), and those are, where the
    direct pass can say, −log P of the texts."""
    from gptviz.analysis.compare_positions import KINDS, SCHEMES, load_runs

    runs, direct = load_runs(), compared_runs()
    df = table(at, "encoding", "validation loss")
    rows = [(k, s) for k in KINDS for s in SCHEMES[k]]
    chk.equal("rows: (encoding, reading)", len(df), len(rows))
    for (kind, scheme), (_, row) in zip(rows, df.iterrows(), strict=False):
        card, n = runs[kind].card, runs[kind].config.context_length
        recorded = card["long"]["losses"][scheme]
        for name, (a, b) in {"0..N-1": (0, n), "N..2N-1": (n, 2 * n), "2N..4N-1": (2 * n, 4 * n),
                             "2N text": (0, 2 * n), "4N text": (0, 4 * n)}.items():
            chk.close(f"{kind} ({scheme}): mean over positions {name}", row[f"positions {name}"],
                      np.mean(recorded[a:b]))
        chk.close(f"{kind}: validation loss (its card)", row["validation loss"],
                  card["evals"][-1]["val_loss"])
        if kind not in direct:
            continue
        val, at_t = direct[kind]
        chk.close(f"{kind}: validation loss of the weights", card["evals"][-1]["val_loss"], val,
                  atol=2e-4)
        for t, value in at_t.items():
            pos = t[1] if isinstance(t, tuple) else t
            if (isinstance(t, tuple) and scheme == t[0]) or (not isinstance(t, tuple) and (
                    pos < n or scheme == "crop")):
                chk.close(f"{kind} ({scheme}): −log P at position {pos}", recorded[pos], value,
                          atol=2e-4)


@pytest.mark.parametrize("model", MODELS)
def test_positional(model):
    check_views("positional", model, {"sinusoidal": sinusoidal, "learned": learned,
                                      "prompt_sum": x_plus_pe, "order_view": order,
                                      "compare_view": compare})
