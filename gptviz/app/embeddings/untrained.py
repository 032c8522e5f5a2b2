"""The untrained embedding matrix E, drawn without building the untrained model.

``initial_model(config, seed)`` fills every parameter from one random stream, and E's
initial values are one stretch of it. ``fresh_embedding`` finds where that stretch starts:
it builds the model on the meta device (shapes, no numbers) while recording each random fill,
then replays the fills before E's last one on a small buffer. E's rows are then read by
drawing that stretch a few MB at a time. GPT-2 small's untrained twin holds 124M parameters
(~500 MB); this holds one buffer and the rows asked for.

The replay follows how torch fills a float tensor on the CPU: ``uniform_`` takes one draw per
element, and ``normal_`` of n ≥ 16 elements takes n draws, turns each block of 16 into normals,
and, when 16 does not divide n, draws 16 more for the last 16 elements. Drawing in pieces
whose sizes are multiples of 16 therefore gives the same numbers; a test holds them equal to
the full twin's.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from gptviz.i18n import _
from gptviz.model import GPT, GPTConfig

CHUNK = 2**20  # elements drawn at once (4 MB of float32); a multiple of 16


@dataclass(frozen=True)
class Fill:
    """One random fill of a parameter as ``GPT(config)`` runs it."""

    op: str  # "normal_" or "uniform_"
    numel: int
    dtype: torch.dtype
    args: tuple  # (mean, std) or (low, high)


@dataclass(frozen=True)
class FreshEmbedding:
    """Where E's initial values start in a seeded stream: enough to draw any of its rows."""

    state: torch.Tensor  # the generator's state just before E's last fill
    rows: int  # |V|
    cols: int  # d_model
    mean: float
    std: float
    dtype: torch.dtype


class _Recorder(TorchDispatchMode):
    """Records the random fills of a model built on the meta device, and which is E's last."""

    def __init__(self) -> None:
        super().__init__()
        self.fills: list[Fill] = []
        self.targets: list[torch.Tensor] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if any("Generator" in str(a.type) for a in func._schema.arguments):
            name = func.overloadpacket.__name__
            t = args[0]
            if name not in ("normal_", "uniform_") or kwargs.get("generator") is not None:
                raise NotImplementedError(_("cannot replay the random op {op} of GPT(config)")
                                          .format(op=func))
            if not t.is_contiguous():
                raise NotImplementedError(_("cannot replay a fill of a non-contiguous tensor"))
            self.fills.append(Fill(name, t.numel(), t.dtype, tuple(float(a) for a in args[1:3])))
            self.targets.append(t)
        return func(*args, **kwargs)


def fresh_embedding(config: GPTConfig, seed: int, chunk: int = CHUNK) -> FreshEmbedding:
    """Where ``initial_model(config, seed).embed.weight`` starts in the stream seeded ``seed``.

    >>> fe = fresh_embedding(GPTConfig(vocab_size=10, context_length=8, d_model=16,
    ...                                n_layer=1, n_head=2), seed=0)
    >>> fe.rows, fe.cols, fe.std
    (10, 16, 0.02)
    """
    recorder = _Recorder()
    with torch.device("meta"), recorder:
        model = GPT(config)
    E = model.embed.weight
    last = max(i for i, t in enumerate(recorder.targets) if t is E)
    fill = recorder.fills[last]
    if fill.op != "normal_":
        raise NotImplementedError(_("E's last initialisation is {op}, not normal_").format(
            op=fill.op))
    gen = torch.Generator().manual_seed(seed)
    for f in recorder.fills[:last]:
        for _piece in _draw(f, gen, chunk):
            pass
    return FreshEmbedding(gen.get_state(), E.shape[0], E.shape[1], fill.args[0], fill.args[1],
                          fill.dtype)


def _draw(f: Fill, gen: torch.Generator, chunk: int) -> Iterator[torch.Tensor]:
    """The values ``f`` writes, as consecutive pieces of the flat tensor (each ≤ ~chunk)."""
    if f.numel <= chunk:
        yield _fill(torch.empty(f.numel, dtype=f.dtype), f, gen)
        return
    if chunk % 16:
        raise ValueError(f"chunk must be a multiple of 16, got {chunk}")
    if f.op == "uniform_":  # one draw per element, in order
        for start in range(0, f.numel, chunk):
            yield _fill(torch.empty(min(chunk, f.numel - start), dtype=f.dtype), f, gen)
        return
    whole, tail = divmod(f.numel, 16)
    whole *= 16  # elements in whole blocks of 16
    pieces, rest = divmod(whole, chunk)
    if not rest:  # the last whole piece joins the tail
        pieces, rest = pieces - 1, chunk
    for _piece in range(pieces):
        yield _fill(torch.empty(chunk, dtype=f.dtype), f, gen)
    last = torch.empty(rest + tail, dtype=f.dtype)  # rest ≥ 16
    _fill(last[:rest], f, gen)
    if tail:  # torch draws the tail, then 16 more for the last 16 elements
        torch.empty(tail, dtype=f.dtype).uniform_(generator=gen)
        _fill(last[-16:], f, gen)
    yield last


def _fill(t: torch.Tensor, f: Fill, gen: torch.Generator) -> torch.Tensor:
    return getattr(t, f.op)(*f.args, generator=gen)


def _row_blocks(fe: FreshEmbedding, chunk: int) -> Iterator[tuple[int, np.ndarray]]:
    """E's rows in order, as (first row, block (r, d)), drawn ``chunk`` elements at a time."""
    gen = torch.Generator()
    gen.set_state(fe.state)
    fill = Fill("normal_", fe.rows * fe.cols, fe.dtype, (fe.mean, fe.std))
    carry, row = np.empty(0, dtype=np.float32), 0
    for piece in _draw(fill, gen, chunk):
        flat = np.concatenate([carry, piece.numpy()])
        n = len(flat) // fe.cols
        if n:
            yield row, flat[: n * fe.cols].reshape(n, fe.cols)
            row += n
        carry = flat[n * fe.cols:]


def fresh_rows(fe: FreshEmbedding, ids: Sequence[int], chunk: int = CHUNK) -> np.ndarray:
    """Rows ``ids`` of the untrained E, (len(ids), d); the draw stops after the last one.

    >>> fe = fresh_embedding(GPTConfig(vocab_size=10, context_length=8, d_model=16,
    ...                                n_layer=1, n_head=2), seed=0)
    >>> fresh_rows(fe, [3, 1]).shape
    (2, 16)
    """
    ids = np.asarray(ids, dtype=np.int64)
    out = np.empty((len(ids), fe.cols), dtype=np.float32)  # (n, d)
    if not len(ids):
        return out
    if ids.min() < 0 or ids.max() >= fe.rows:
        raise IndexError(f"row ids must lie in [0, {fe.rows}), got {ids.min()}…{ids.max()}")
    for row, block in _row_blocks(fe, chunk):
        inside = (ids >= row) & (ids < row + len(block))
        out[inside] = block[ids[inside] - row]
        if row + len(block) > ids.max():
            break
    return out


def fresh_neighbours(fe: FreshEmbedding, token_id: int, k: int, chunk: int = CHUNK
                     ) -> tuple[np.ndarray, np.ndarray]:
    """``analysis.nearest_neighbours`` on the untrained E, one block of rows at a time:
    the k rows most cosine-similar to row ``token_id``, itself excluded; ids (k,), cos (k,)."""
    q = torch.from_numpy(fresh_rows(fe, [token_id], chunk)[0])  # (d,)
    q = q / q.norm().clamp_min(1e-12)
    sims = torch.empty(fe.rows)  # (|V|,)
    for row, block in _row_blocks(fe, chunk):
        E = torch.from_numpy(block)  # (r, d)
        sims[row: row + len(block)] = (E / E.norm(dim=1, keepdim=True).clamp_min(1e-12)) @ q
    sims[token_id] = -float("inf")
    top = torch.topk(sims, min(k, fe.rows - 1))
    return top.indices.numpy(), top.values.numpy()  # (k,), (k,)
