"""Tensor maths behind the Embeddings, Positional encoding and Transformer block pages.

Everything here takes tensors (a model, its weights or an ``ActivationCache``)
and returns float32 numpy arrays or plain numbers, ready for the figure builders of ``gptviz.app``.
The attention maths lives in ``gptviz.analysis.attention``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from gptviz.i18n import _
from gptviz.model import GPT, GPT_CONFIG_124M, GPTConfig, gelu, parameter_counts, relu
from gptviz.model.config import ACTIVATION_TEXT
from gptviz.model.hooks import ActivationCache
from gptviz.model.layers import sinusoidal_table
from gptviz.model.names import act_name
from gptviz.tokenizers.specials import SEED_SPECIALS

ArrayLike = Tensor | np.ndarray


def to_numpy(x: ArrayLike) -> np.ndarray:
    """A detached float32 numpy copy of a tensor or array.

    >>> to_numpy(torch.tensor([1, 2])).dtype
    dtype('float32')
    """
    if isinstance(x, Tensor):
        x = x.detach().float().cpu().numpy()
    return np.asarray(x, dtype=np.float32)


# ---- embeddings --------------------------------------------------------------------------

def one_hot_embed(ids: Sequence[int], E: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """The seeds' ``A ∘ OH``: one-hot rows OH (T, |V|) and OH @ E = E[ids] (T, d).

    >>> oh, x = one_hot_embed([1], torch.eye(3)); oh.tolist(), x.tolist()
    ([[0.0, 1.0, 0.0]], [[0.0, 1.0, 0.0]])
    """
    E = torch.as_tensor(to_numpy(E))  # (|V|, d)
    oh = torch.nn.functional.one_hot(torch.as_tensor(list(ids)), E.shape[0]).float()  # (T, |V|)
    return to_numpy(oh), to_numpy(oh @ E)  # (T, |V|), (T, d)


def ordinary_rows(special_tokens: Mapping[str, int], n: int) -> np.ndarray:
    """The rows of an n-row E a training text can reach: every id but the seeds' special
    tokens (BOS, EOS, UNK, PAD), which our trainer never feeds. Never a target, their rows
    only drift, together, far from the rest (61 % of induction-2layer's E variance), so a
    PCA fitted on them shows that drift and squeezes every real token into a stripe.

    >>> ordinary_rows({"<|BOS|>": 3, "<|endoftext|>": 1}, 4).tolist()
    [0, 1, 2]
    """
    unused = {i for name, i in special_tokens.items() if name in SEED_SPECIALS}
    return np.array([i for i in range(n) if i not in unused], dtype=np.int64)


def pca_basis(X: ArrayLike, n_components: int = 2) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``pca``'s fit of the rows of X (n, d): their mean (d,), the top axes (d, k), largest
    loading positive (reproducible pictures), and each axis's explained-variance ratio (k,)."""
    fit = np.asarray(X, dtype=np.float64)  # (n, d)
    mean = fit.mean(axis=0)  # (d,)
    eigvals, eigvecs = np.linalg.eigh((fit - mean).T @ (fit - mean))  # ascending, (d,), (d, d)
    order = np.argsort(eigvals)[::-1][:n_components]
    axes = eigvecs[:, order]  # (d, k)
    axes *= np.sign(axes[np.abs(axes).argmax(axis=0), range(axes.shape[1])])
    total = max(float(eigvals.clip(min=0).sum()), 1e-30)
    return mean, axes, eigvals[order].clip(min=0) / total


def pca(X: ArrayLike, n_components: int = 2, fit_rows: ArrayLike | None = None
        ) -> tuple[np.ndarray, np.ndarray]:
    """Project the rows of X (n, d) on ``pca_basis`` of X[fit_rows] (all rows when None):
    the coordinates (n, k) and each axis's explained-variance ratio (k,) on the fitted rows.

    >>> coords, ratio = pca([[0, 0], [1, 1], [2, 2]], 1); ratio.round(3).tolist()
    [1.0]
    >>> coords, _ = pca([[0, 0], [1, 1], [2, 2], [9, -9]], 1, fit_rows=[0, 1, 2])
    >>> (coords.ravel() ** 2).round(3).tolist()   # the last row, unfitted, is still projected
    [2.0, 0.0, 2.0, 2.0]
    """
    x = np.asarray(X, dtype=np.float64)  # (n, d)
    fit = x if fit_rows is None else x[np.asarray(fit_rows)]
    mean, axes, ratio = pca_basis(fit, n_components)
    return ((x - mean) @ axes).astype(np.float32), ratio.astype(np.float32)  # (n, k), (k,)


def nearest_neighbours(E: ArrayLike, token_id: int, k: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """The k rows of E (|V|, d) most cosine-similar to row ``token_id``, itself excluded.

    >>> nearest_neighbours(torch.tensor([[1., 0], [0, 1], [1, 0.1]]), 0, k=1)[0].tolist()
    [2]
    """
    E = torch.as_tensor(to_numpy(E))  # (|V|, d)
    unit = E / E.norm(dim=1, keepdim=True).clamp_min(1e-12)  # (|V|, d)
    sims = unit @ unit[token_id]  # (|V|,)
    sims[token_id] = -float("inf")
    top = torch.topk(sims, min(k, E.shape[0] - 1))
    return top.indices.numpy(), to_numpy(top.values)  # (k,), (k,)


# ---- positions ---------------------------------------------------------------------------

def sinusoidal_pe(n_positions: int, d_model: int) -> np.ndarray:
    """The model's own sinusoidal table (``gptviz.model.layers``), shape (N, d).

    >>> sinusoidal_pe(2, 2)[1].tolist() == [np.float32(np.sin(1)), np.float32(np.cos(1))]
    True
    """
    return to_numpy(sinusoidal_table(n_positions, d_model))


def model_pe(model: GPT) -> np.ndarray:
    """The (N, d) positions the model adds: learned rows, sinusoidal, or zeros."""
    with torch.no_grad():
        return to_numpy(model.pos.table())


def pe_similarity(P: ArrayLike) -> np.ndarray:
    """S = P Pᵀ (N, N): how alike positions i and j look to the model.

    >>> pe_similarity([[1, 0], [0, 2]]).tolist()
    [[1.0, 0.0], [0.0, 4.0]]
    """
    p = to_numpy(P)  # (N, d)
    return p @ p.T  # (N, N)


# ---- the block ---------------------------------------------------------------------------

def activation_curves(lo: float = -4.0, hi: float = 4.0, n: int = 401) -> dict[str, np.ndarray]:
    """x and GELU (exact), GELU (tanh, the seeds' form) and ReLU of x, each (n,).

    >>> float(activation_curves(-1, 1, 3)["ReLU"][2])
    1.0
    """
    x = torch.linspace(lo, hi, n)  # (n,)
    curves = {"x": x, "GELU": gelu(x), "GELU (tanh)": gelu(x, "tanh"), "ReLU": relu(x)}
    return {name: to_numpy(v) for name, v in curves.items()}


def layernorm_input(cache: ActivationCache, layer: int, which: str = "ln1") -> Tensor:
    """The rows (T, d) that ``blocks.{layer}.{which}`` normalised (batch 0)."""
    if which == "ln2":
        return cache[act_name("resid_mid", layer)][0]
    if layer > 0:
        return cache[act_name("resid_post", layer - 1)][0]
    return cache[act_name("embed")][0] + cache[act_name("pos_embed")]  # (T, d) = X + PE


def layernorm_stats(x: ArrayLike, out: ArrayLike | None = None,
                    eps: float = 1e-5) -> dict[str, np.ndarray]:
    """Per-row mean and variance before LayerNorm, after standardising, and of ``out``.

    "standardised" is (x - mean) / sqrt(var + eps): mean 0, variance ≈ 1 on every
    row. ``out`` (the hooked LayerNorm output) adds the trained scale λ and shift b.

    >>> layernorm_stats([[1.0, 3.0]])["var standardised"].round(4).tolist()
    [1.0]
    """
    x = torch.as_tensor(to_numpy(x), dtype=torch.float64)  # (T, d)
    mean, var = x.mean(-1, keepdim=True), x.var(-1, keepdim=True, unbiased=False)  # (T, 1)
    rows = {"before": x, "standardised": (x - mean) / torch.sqrt(var + eps)}  # (T, d)
    if out is not None:
        rows["after"] = torch.as_tensor(to_numpy(out), dtype=torch.float64)  # (T, d)
    stats = {}
    for name, r in rows.items():
        stats[f"mean {name}"] = to_numpy(r.mean(-1))  # (T,)
        stats[f"var {name}"] = to_numpy(r.var(-1, unbiased=False))  # (T,)
    return stats


def residual_stream(cache: ActivationCache, n_layer: int) -> tuple[list[str], Tensor]:
    """Stage names and the residual stream (S, T, d) at X + PE, then mid/post of each block."""
    labels, states = ["embed"], [layernorm_input(cache, 0)]
    for layer in range(n_layer):
        labels += [f"{layer}.mid", f"{layer}.post"]
        states += [cache[act_name("resid_mid", layer)][0],
                   cache[act_name("resid_post", layer)][0]]
    return labels, torch.stack(states)  # (S, T, d), S = 1 + 2 n_layer


def residual_norms(cache: ActivationCache, n_layer: int) -> tuple[list[str], np.ndarray]:
    """Stage names and ||x_t||₂ of every position at every stage, shape (S, T).

    >>> labels, norms = residual_norms(cache, 2); labels
    ['embed', '0.mid', '0.post', '1.mid', '1.post']
    """
    labels, states = residual_stream(cache, n_layer)
    return labels, to_numpy(states.norm(dim=-1))  # (S, T)


@torch.no_grad()
def logit_lens(model: GPT, cache: ActivationCache, k: int = 5, position: int = -1,
               include_input: bool = False) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Top-k next-token guesses read off after every block: softmax(LN_final(x) W_U).

    Returns row labels, ids (rows, k) and probabilities (rows, k). The last row
    is the model's own prediction.

    >>> labels, ids, probs = logit_lens(model, cache, k=3); labels
    ['after block 0', 'after block 1']
    """
    labels, states = [], []
    if include_input:
        labels.append("embeddings")
        states.append(layernorm_input(cache, 0)[position])  # (d,)
    for layer in range(model.config.n_layer):
        labels.append(f"after block {layer}")
        states.append(cache[act_name("resid_post", layer)][0, position])  # (d,)
    x = torch.stack(states).to(model.device)  # (rows, d)
    probs = torch.softmax(model.unembed(model.ln_final(x)), dim=-1)  # (rows, |V|)
    top = torch.topk(probs, min(k, probs.shape[-1]), dim=-1)
    return labels, top.indices.cpu().numpy(), to_numpy(top.values)  # (rows, k) each


# ---- parameter counts --------------------------------------------------------------------

def parameter_table(config: GPTConfig, qkv_bias: bool | None = None) -> dict[str, int]:
    """``gptviz.model.parameter_counts`` per component, optionally without QKV biases.

    Our models have one ``bias`` switch for every layer; the seeds' GPT-2 config
    keeps every bias except W_Q, W_K, W_V's (``qkv_bias: False``). ``qkv_bias=False``
    sets that line to 0; ``None`` follows ``config.bias``.

    >>> parameter_table(GPTConfig(**GPT_CONFIG_124M), qkv_bias=False)["total"]
    124412160
    """
    counts = dict(parameter_counts(config))
    if qkv_bias is False:
        (key,) = [k for k in counts if "QKV bias" in k]
        counts[key] = 0
        counts["total"] = sum(v for k, v in counts.items() if k != "total")
    return counts


def seeds_124m_counts(tied: bool = True) -> dict[str, int]:
    """The seeds' ``GPT_CONFIG_124M`` (qkv_bias False, every other bias kept).

    Tied (W_U = Eᵀ): 124,412,160; untied: 163,009,536 (+ 50257 × 768).

    >>> seeds_124m_counts(tied=False)["total"]
    163009536
    """
    config = GPTConfig(**{**GPT_CONFIG_124M, "bias": True, "tie_embeddings": tied})
    return parameter_table(config, qkv_bias=False)


@dataclass(frozen=True)
class Stage:
    name: str  # e.g. "LN₁(X)"
    shape: str  # e.g. "N×d = 64×128"
    values: np.ndarray  # (rows, cols) float32, tokens down
    columns: str = "dimension"  # what the columns are: "dimension" or "key"


def block_stages(cache: ActivationCache, layer: int, head: int = 0,
                 activation: str = "gelu", bias: bool = True) -> list[Stage]:
    """The twelve stages of block ``layer`` (batch 0), in forward order, two halves of six.

    One letter per quantity: A = LN₂(Y) W₁ + b₁ enters the activation, H = GELU(A) leaves
    it. ``bias`` is the model's: without it the ``+ b`` terms leave the names.

    >>> [s.name for s in block_stages(cache, 0)][:3]
    ['X', 'LN₁(X)', 'W_attn (head 0)']
    >>> [s.name for s in block_stages(cache, 0, bias=False)][8:11]
    ['A = LN₂(Y) W₁', 'H = GELU(A)', 'FFN(Y) = H W₂']
    """
    def get(kind: str, ln: str | None = None) -> np.ndarray:  # batch 0 of this layer
        return to_numpy(cache[act_name(kind, layer, ln)][0])

    x = to_numpy(layernorm_input(cache, layer))  # (T, d)
    t, d = x.shape
    h, _t, d_k = (z := cache[act_name("z", layer)][0]).shape  # z: (h, T, d_k)
    pre, mid = get("pre"), get("resid_mid")  # (T, d_ff), (T, d)
    act = ACTIVATION_TEXT[activation]
    b_o, b_1, b_2 = (" + b_O", " + b₁", " + b₂") if bias else ("", "", "")
    td, tf, tt = f"N×d = {t}×{d}", f"N×d_ff = {t}×{pre.shape[1]}", f"N×N = {t}×{t}"
    return [
        Stage("X", td, x),
        Stage("LN₁(X)", td, get("normalized", "ln1")),
        Stage(_("W_attn (head {head})").format(head=head), tt, get("pattern")[head], "key"),
        Stage(_("Z, heads side by side"), f"N×(h·d_k) = {t}×{h * d_k}",
              to_numpy(z.transpose(0, 1).reshape(t, h * d_k))),
        Stage(_("attention out Z W_O{bias}").format(bias=b_o), td, get("attn_out")),
        Stage(f"Y = X + Z W_O{b_o}", td, mid),
        Stage("Y", td, mid),
        Stage("LN₂(Y)", td, get("normalized", "ln2")),
        Stage(f"A = LN₂(Y) W₁{b_1}", tf, pre),
        Stage(f"H = {act}(A)", tf, get("post")),
        Stage(f"FFN(Y) = H W₂{b_2}", td, get("mlp_out")),
        Stage("X' = Y + FFN(Y)", td, get("resid_post")),
    ]
