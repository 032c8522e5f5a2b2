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
    """Where E's initial values start in a seeded stream: enough to draw any of its rows.
    ``marks`` hold the generator's state before each piece of E's draw (``_draw`` with
    ``chunk``), so that a row is drawn from its own piece, not from the start (GPT-2's E is
    37 pieces of 4 MB; a state is 5 KB)."""

    state: torch.Tensor  # the generator's state just before E's last fill
    rows: int  # |V|
    cols: int  # d_model
    mean: float
    std: float
    dtype: torch.dtype
    chunk: int = CHUNK  # elements per piece of the draw
    marks: tuple[torch.Tensor, ...] = ()  # the state before each piece (empty: not indexed)

    @property
    def fill(self) -> Fill:
        return Fill("normal_", self.rows * self.cols, self.dtype, (self.mean, self.std))


class _Recorder(TorchDispatchMode):
    """Records the random fills of a model built on the meta device, and which is E's last."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        """No: torch would wrap ``__torch_dispatch__`` to keep its compiler out, importing
        torch._dynamo at the first call (+70 MB a server keeps), and nothing here compiles."""
        return False

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
            return t  # a meta tensor's fill draws nothing; running it would import
            # torch._dynamo too (meta's normal_ is a Python reference that disables it)
        return func(*args, **kwargs)


def fresh_embedding(config: GPTConfig, seed: int, chunk: int = CHUNK) -> FreshEmbedding:
    """Where ``initial_model(config, seed).embed.weight`` starts in the stream seeded ``seed``,
    with the state before each ``chunk``-element piece of its draw (one pass over E).

    >>> fe = fresh_embedding(GPTConfig(vocab_size=10, context_length=8, d_model=16,
    ...                                n_layer=1, n_head=2), seed=0)
    >>> fe.rows, fe.cols, fe.std, len(fe.marks)
    (10, 16, 0.02, 1)
    """
    if chunk % 16:
        raise ValueError(f"chunk must be a multiple of 16, got {chunk}")
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
    state, marks = gen.get_state(), [gen.get_state()]
    for _piece in _draw(fill, gen, chunk):
        marks.append(gen.get_state())  # the state before the next piece
    return FreshEmbedding(state, E.shape[0], E.shape[1], fill.args[0], fill.args[1],
                          fill.dtype, chunk, tuple(marks[:-1]))


def _plan(f: Fill, chunk: int) -> tuple[int, int, int]:
    """How ``_draw`` cuts ``f``: (whole pieces of ``chunk``, then the last piece's part drawn
    as one, and its tail of fewer than 16 elements); one piece when it fits in ``chunk``."""
    if f.numel <= chunk:
        return 0, f.numel, 0
    if chunk % 16:
        raise ValueError(f"chunk must be a multiple of 16, got {chunk}")
    if f.op == "uniform_":  # one draw per element, in order
        pieces, rest = divmod(f.numel, chunk)
        return (pieces - 1, chunk, 0) if not rest else (pieces, rest, 0)
    whole, tail = divmod(f.numel, 16)
    whole *= 16  # elements in whole blocks of 16
    pieces, rest = divmod(whole, chunk)
    if not rest:  # the last whole piece joins the tail
        pieces, rest = pieces - 1, chunk
    return pieces, rest, tail


def _draw(f: Fill, gen: torch.Generator, chunk: int, first: int = 0
          ) -> Iterator[torch.Tensor]:
    """The values ``f`` writes, as consecutive pieces of the flat tensor (each ≤ ~chunk),
    from piece ``first`` on (``gen`` then holds the state before that piece)."""
    pieces, rest, tail = _plan(f, chunk)
    if f.numel <= chunk or f.op == "uniform_":
        for _piece in range(first, pieces):
            yield _fill(torch.empty(chunk, dtype=f.dtype), f, gen)
        yield _fill(torch.empty(rest, dtype=f.dtype), f, gen)
        return
    for _piece in range(first, pieces):
        yield _fill(torch.empty(chunk, dtype=f.dtype), f, gen)
    last = torch.empty(rest + tail, dtype=f.dtype)  # rest ≥ 16
    _fill(last[:rest], f, gen)
    if tail:  # torch draws the tail, then 16 more for the last 16 elements
        torch.empty(tail, dtype=f.dtype).uniform_(generator=gen)
        _fill(last[-16:], f, gen)
    yield last


def _fill(t: torch.Tensor, f: Fill, gen: torch.Generator) -> torch.Tensor:
    return getattr(t, f.op)(*f.args, generator=gen)


def _row_blocks(fe: FreshEmbedding) -> Iterator[tuple[int, np.ndarray]]:
    """E's rows in order, as (first row, block (r, d)), drawn a piece at a time."""
    gen = torch.Generator()
    gen.set_state(fe.state)
    carry, row = np.empty(0, dtype=np.float32), 0
    for piece in _draw(fe.fill, gen, fe.chunk):
        flat = np.concatenate([carry, piece.numpy()])
        n = len(flat) // fe.cols
        if n:
            yield row, flat[: n * fe.cols].reshape(n, fe.cols)
            row += n
        carry = flat[n * fe.cols:]


def _piece(fe: FreshEmbedding, index: int) -> np.ndarray:
    """Piece ``index`` of E's flat draw, from the state before it."""
    gen = torch.Generator()
    gen.set_state(fe.marks[index])
    return next(_draw(fe.fill, gen, fe.chunk, first=index)).numpy()


def fresh_rows(fe: FreshEmbedding, ids: Sequence[int], chunk: int | None = None) -> np.ndarray:
    """Rows ``ids`` of the untrained E, (len(ids), d), each drawn from the pieces of the
    stream that hold it (``fe.marks``), not from E's start. ``chunk``, if given, must be
    the one ``fe`` was made with.

    >>> fe = fresh_embedding(GPTConfig(vocab_size=10, context_length=8, d_model=16,
    ...                                n_layer=1, n_head=2), seed=0)
    >>> fresh_rows(fe, [3, 1]).shape
    (2, 16)
    """
    if chunk is not None and chunk != fe.chunk:
        raise ValueError(f"these marks were made with chunk {fe.chunk}, not {chunk}")
    ids = np.asarray(ids, dtype=np.int64)
    out = np.empty((len(ids), fe.cols), dtype=np.float32)  # (n, d)
    if not len(ids):
        return out
    if ids.min() < 0 or ids.max() >= fe.rows:
        raise IndexError(f"row ids must lie in [0, {fe.rows}), got {ids.min()}…{ids.max()}")
    pieces, _, _ = _plan(fe.fill, fe.chunk)
    starts = np.arange(pieces + 1, dtype=np.int64) * fe.chunk  # each piece's first element
    drawn: dict[int, np.ndarray] = {}
    for k, row in enumerate(ids):
        lo, hi = int(row) * fe.cols, (int(row) + 1) * fe.cols  # the row's elements
        first, last = (int(np.searchsorted(starts, e, side="right")) - 1 for e in (lo, hi - 1))
        parts = []
        for p in range(first, last + 1):
            if p not in drawn:
                drawn[p] = _piece(fe, p)
            a, b = max(lo, int(starts[p])), min(hi, int(starts[p]) + len(drawn[p]))
            parts.append(drawn[p][a - int(starts[p]):b - int(starts[p])])
        out[k] = np.concatenate(parts)
    return out


def fresh_neighbours_of(fe: FreshEmbedding, token_ids: Sequence[int], k: int
                        ) -> tuple[np.ndarray, np.ndarray]:
    """``analysis.nearest_neighbours`` on the untrained E for several tokens in one pass
    over its rows: for each token the k rows most cosine-similar to its own, itself
    excluded; ids (n, k), cos (n, k). Holds one piece of rows at a time."""
    queries = torch.from_numpy(fresh_rows(fe, token_ids))  # (n, d)
    q_norms = torch.linalg.vector_norm(queries, dim=1).clamp_min(1e-12)  # (n,)
    tokens = torch.as_tensor(np.asarray(token_ids, dtype=np.int64))  # (n,)
    k = min(k, fe.rows - 1)
    best = torch.full((len(tokens), 0), -float("inf"))  # (n, ≤k) the best cosines so far
    best_ids = torch.empty((len(tokens), 0), dtype=torch.long)  # (n, ≤k)
    for row, block in _row_blocks(fe):
        E = torch.from_numpy(block)  # (r, d)
        norms = torch.linalg.vector_norm(E, dim=1).clamp_min(1e-12)  # (r,)
        sims = (queries @ E.T) / (q_norms[:, None] * norms[None, :])  # (n, r)
        ids = torch.arange(row, row + len(block))  # (r,)
        sims[ids[None, :] == tokens[:, None]] = -float("inf")  # not itself
        both, both_ids = torch.cat([best, sims], 1), torch.cat([best_ids, ids.expand(
            len(tokens), -1)], 1)
        top = torch.topk(both, min(k, both.shape[1]), dim=1)  # ties: the lower position
        best, best_ids = top.values, both_ids.gather(1, top.indices)
    return best_ids.numpy(), best.numpy()  # (n, k), (n, k)


def fresh_neighbours(fe: FreshEmbedding, token_id: int, k: int, chunk: int | None = None
                     ) -> tuple[np.ndarray, np.ndarray]:
    """``analysis.nearest_neighbours`` on the untrained E, one piece of rows at a time:
    the k rows most cosine-similar to row ``token_id``, itself excluded; ids (k,), cos (k,)."""
    if chunk is not None and chunk != fe.chunk:
        raise ValueError(f"these marks were made with chunk {fe.chunk}, not {chunk}")
    ids, sims = fresh_neighbours_of(fe, [token_id], k)
    return ids[0], sims[0]
