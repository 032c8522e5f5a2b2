"""Training replay: the model at the steps a checkpoint remembers, and the embedding
matrix E of each step projected on one fixed PCA basis, so the motion between steps is real.

The steps are 0 (the seed's initialisation), every snapshot, and the checkpoint's own step
(the card's "kept_step", else its "steps"). The basis is fitted once, on the checkpoint's own
E; every step's E is projected on it, centred by the final mean, so no axis flips or
re-centres from one step to the next.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from gptviz import analysis
from gptviz.checkpoints import Checkpoint, initial_model, training_seed
from gptviz.model import GPT

EMBED = "embed.weight"  # E's name in a state dict


@dataclass(frozen=True)
class PCABasis:
    """The top principal axes of the rows of one matrix: x ↦ (x − mean) · axes."""

    mean: np.ndarray  # (d,)
    axes: np.ndarray  # (d, k), unit columns
    ratio: np.ndarray  # (k,) explained-variance ratio of each axis on the fitted matrix


def pca_basis(X: ArrayLike, k: int = 2) -> PCABasis:
    """The top-k principal axes of the rows of X (n, d); the largest loading of each is
    positive, as in ``analysis.pca``, so the picture is reproducible.

    >>> b = pca_basis([[0., 0], [1, 1], [2, 2]], 1); b.axes.round(3).ravel().tolist()
    [0.707, 0.707]
    """
    x = np.asarray(X, dtype=np.float64)  # (n, d)
    mean = x.mean(axis=0)  # (d,)
    eigvals, eigvecs = np.linalg.eigh((x - mean).T @ (x - mean))  # ascending
    order = np.argsort(eigvals)[::-1][:k]
    axes = eigvecs[:, order]  # (d, k)
    axes *= np.sign(axes[np.abs(axes).argmax(axis=0), range(axes.shape[1])])
    total = max(float(eigvals.clip(min=0).sum()), 1e-30)
    return PCABasis(mean, axes, eigvals[order].clip(min=0) / total)


def project(X: ArrayLike, basis: PCABasis) -> np.ndarray:
    """The rows of X (n, d) in the basis's coordinates: (X − mean) · axes, (n, k) float32.

    >>> project([[3., 3]], pca_basis([[0., 0], [2, 2]], 1)).tolist()
    [[2.8284270763397217]]
    """
    x = np.asarray(X, dtype=np.float64)
    return ((x - basis.mean) @ basis.axes).astype(np.float32)


def final_step(card: dict) -> int:
    """The step of the checkpoint's own weights: "kept_step" (the best by validation loss,
    when the trainer kept that one), else "steps"; 0 when the card says neither.

    >>> final_step({"steps": 900, "kept_step": 600}), final_step({"steps": 900}), final_step({})
    (600, 900, 0)
    """
    for key in ("kept_step", "steps"):
        value = card.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
    return 0


def replay_steps(ckpt: Checkpoint) -> list[int]:
    """Every step the replay can show, increasing: 0, the snapshots', the checkpoint's own.

    A snapshot at step 0 or at the final step gives way to the exact model there.
    """
    snaps = ckpt.snapshots.steps if ckpt.snapshots else []
    return sorted({0, final_step(ckpt.card), *snaps})


def model_at(ckpt: Checkpoint, step: int) -> GPT:
    """The model at ``step``, one of ``replay_steps(ckpt)``: the seed's initialisation at 0,
    the checkpoint's model at its own step, else the snapshot (stored in float16)."""
    if step == final_step(ckpt.card):  # first: a card without steps says 0
        return ckpt.model
    if step == 0:
        return initial_model(ckpt.config, training_seed(ckpt.card))
    if not ckpt.snapshots or step not in ckpt.snapshots.steps:
        raise ValueError(f"no snapshot at step {step}; the replay has {replay_steps(ckpt)}.")
    return ckpt.snapshots.model_at(ckpt.snapshots.steps.index(step), ckpt.model)


def embedding_at(ckpt: Checkpoint, step: int) -> np.ndarray:
    """E (|V|, d) at ``step`` as float32, read from the snapshot without building a model."""
    snaps = ckpt.snapshots
    if step not in (0, final_step(ckpt.card)) and snaps and step in snaps.steps:
        return snaps.states[snaps.steps.index(step)][EMBED].float().numpy()
    return model_at(ckpt, step).embed.weight.detach().float().numpy()


def ordinary_rows(ckpt: Checkpoint) -> np.ndarray:
    """``analysis.ordinary_rows`` of the checkpoint's E: the seeds' special tokens left out."""
    return analysis.ordinary_rows(ckpt.tokenizer.special_tokens, ckpt.config.vocab_size)


def embedding_paths(ckpt: Checkpoint) -> tuple[PCABasis, dict[int, np.ndarray]]:
    """The PCA basis of the checkpoint's own E (its ordinary rows) and every replay step's
    ordinary rows projected on it, {step: (len(ordinary_rows), 2)}: points that move
    between steps moved in the model."""
    rows = ordinary_rows(ckpt)
    basis = pca_basis(ckpt.model.embed.weight.detach().float().numpy()[rows], 2)
    return basis, {s: project(embedding_at(ckpt, s)[rows], basis) for s in replay_steps(ckpt)}
