"""Tensor maths behind the Embeddings, Positional encoding and Transformer block pages.

Everything here takes tensors (a model, its weights or an ``ActivationCache``)
and returns float32 numpy arrays or plain numbers, ready for the figure builders of ``gptviz.app``.
The attention maths lives in ``gptviz.analysis.attention``, a block's twelve stages in
``gptviz.analysis.stages``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import torch
from torch import Tensor

from gptviz.model import GPT, GPT_CONFIG_124M, GPTConfig, gelu, parameter_counts, relu
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
    ids = torch.as_tensor(list(ids))
    oh = torch.nn.functional.one_hot(ids, E.shape[0]).float()  # (T, |V|)
    # OH @ E picks rows: each entry is 1·e plus zeros, so E[ids] is the same numbers exactly,
    # without T·|V|·d multiplications (10 GFLOP for 128 GPT-2 tokens)
    return to_numpy(oh), to_numpy(E[ids])  # (T, |V|), (T, d)


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


PCA_ROWS = 4096  # rows centred in float64 at a time (GPT-2's E whole would be 309 MB)


def pca_basis(X: ArrayLike, n_components: int = 2) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``pca``'s fit of the rows of X (n, d): their mean (d,), the top axes (d, k), largest
    loading positive (reproducible pictures), and each axis's explained-variance ratio (k,).
    Computed in float64, ``PCA_ROWS`` rows at a time: beside X it holds one block and the
    d × d scatter matrix, never a float64 copy of X."""
    x = X.detach().cpu().numpy() if isinstance(X, Tensor) else np.asarray(X)  # (n, d)
    n, d = x.shape
    mean = np.zeros(d)  # (d,)
    for start in range(0, n, PCA_ROWS):
        mean += x[start:start + PCA_ROWS].sum(axis=0, dtype=np.float64)
    mean /= n
    scatter = np.zeros((d, d))  # (d, d): Σ (x − mean)ᵀ (x − mean)
    for start in range(0, n, PCA_ROWS):
        block = x[start:start + PCA_ROWS].astype(np.float64) - mean  # (≤ PCA_ROWS, d)
        scatter += block.T @ block
    eigvals, eigvecs = np.linalg.eigh(scatter)  # ascending, (d,), (d, d)
    order = np.argsort(eigvals)[::-1][:n_components]
    axes = eigvecs[:, order]  # (d, k)
    axes *= np.sign(axes[np.abs(axes).argmax(axis=0), range(axes.shape[1])])
    total = max(float(eigvals.clip(min=0).sum()), 1e-30)
    return mean, axes, eigvals[order].clip(min=0) / total


def project(X: ArrayLike, mean: np.ndarray, axes: np.ndarray) -> np.ndarray:
    """The rows of X (n, d) on ``pca_basis``' axes: (X − mean) @ axes, float32 (n, k),
    ``PCA_ROWS`` rows at a time in float64."""
    x = X.detach().cpu().numpy() if isinstance(X, Tensor) else np.asarray(X)  # (n, d)
    out = np.empty((x.shape[0], axes.shape[1]), dtype=np.float32)  # (n, k)
    for start in range(0, x.shape[0], PCA_ROWS):
        out[start:start + PCA_ROWS] = (x[start:start + PCA_ROWS].astype(np.float64) - mean) @ axes
    return out


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
    x = X.detach().cpu().numpy() if isinstance(X, Tensor) else np.asarray(X)  # (n, d)
    if not np.issubdtype(x.dtype, np.floating):
        x = x.astype(np.float64)
    fit = x if fit_rows is None else _rows_view(x, np.asarray(fit_rows))
    mean, axes, ratio = pca_basis(fit, n_components)
    return project(x, mean, axes), ratio.astype(np.float32)  # (n, k), (k,)


def _rows_view(x: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """x[rows], without a copy when ``rows`` are all the rows but a few at either end
    (every id but the special tokens, which a vocabulary puts first or last)."""
    if len(rows) and np.array_equal(rows, np.arange(rows[0], rows[0] + len(rows))):
        return x[rows[0]:rows[0] + len(rows)]
    return x[rows]


def nearest_neighbours(E: ArrayLike, token_id: int, k: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """The k rows of E (|V|, d) most cosine-similar to row ``token_id``, itself excluded.
    E · E_t over the rows' norms: no normalised copy of E (154 MB for GPT-2).

    >>> nearest_neighbours(torch.tensor([[1., 0], [0, 1], [1, 0.1]]), 0, k=1)[0].tolist()
    [2]
    """
    E = torch.as_tensor(to_numpy(E))  # (|V|, d), the same storage
    norms = torch.linalg.vector_norm(E, dim=1).clamp_min(1e-12)  # (|V|,)
    sims = (E @ E[token_id]) / (norms * norms[token_id])  # (|V|,)
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
