"""Training replay: the model at the steps a checkpoint remembers, and the embedding
matrix E of each step projected on one fixed PCA basis, so the motion between steps is real.

The steps are 0 (the seed's initialisation), every snapshot, and the checkpoint's own step
(the card's "kept_step", else its "steps"). The basis is fitted once, on the checkpoint's own
E; every step's E is projected on it, centred by the final mean, so no axis flips or
re-centres from one step to the next. Each step's greedy sample starts where the window
repeats itself, so that a model that has learned to copy can show it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from gptviz.analysis import core as analysis
from gptviz.checkpoints.folder import Checkpoint, initial_model, training_seed
from gptviz.model import GPT

EMBED = "embed.weight"  # E's name in a state dict
# A repeat this long shows copying: a word or two of ordinary text repeat by chance; the
# induction tasks write each random line of 6 to 20 tokens twice.
MIN_REPEAT = 8


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


def embedding_paths(ckpt: Checkpoint) -> tuple[np.ndarray, dict[int, np.ndarray]]:
    """The explained-variance ratios (2,) of the PCA of the checkpoint's own E (its ordinary
    rows, ``analysis.pca_basis``) and every replay step's ordinary rows projected on those
    axes, centred by the final mean, {step: (len(ordinary_rows), 2) float32}: points that
    move between steps moved in the model."""
    rows = ordinary_rows(ckpt)
    mean, axes, ratio = analysis.pca_basis(ckpt.model.embed.weight.detach().float().numpy()[rows])
    return ratio, {s: ((embedding_at(ckpt, s)[rows] - mean) @ axes).astype(np.float32)
                   for s in replay_steps(ckpt)}


def copy_prompt_length(ids: Sequence[int]) -> int | None:
    """How many of ``ids`` (a window) to give a greedy sample as its prompt so that it can
    show copying: up to the first token of the window's longest repeat, a stretch
    ids[r:r+m] equal to an earlier ids[s:s+m] (s + m ≤ r) of at least MIN_REPEAT tokens.
    A model with an induction head writes the rest of the repeat, ids[r+1:r+m], from the
    first copy (it needs that first token: the token before the repeat says nothing of where
    the copied stretch began). None when the window repeats nothing that long.

    >>> copy_prompt_length(list("xyz:abcdefgh|abcdefgh-"))  # r = 13: the second "a"
    14
    >>> copy_prompt_length(list("no repeat in this one")) is None
    True
    """
    n = len(ids)
    same = [[0] * (n + 1) for _ in range(n + 1)]  # [i][j], j < i: ids[i:], ids[j:] agree so far
    for i in range(n - 1, 0, -1):
        for j in range(i):
            if ids[i] == ids[j]:
                same[i][j] = same[i + 1][j + 1] + 1
    best, start = MIN_REPEAT - 1, None
    for r in range(1, n):
        m = max(min(same[r][s], r - s) for s in range(r))  # the copy ends before r
        if m > best:
            best, start = m, r
    return None if start is None else start + 1
