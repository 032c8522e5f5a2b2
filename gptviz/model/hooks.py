"""Named activations: identity ``HookPoint`` modules, a cache, and context managers.

Every interesting tensor of the forward pass goes through a ``HookPoint``, an
identity module whose name comes from ``named_modules()`` (e.g.
``blocks.0.attn.hook_pattern``, which ``names.act_name("pattern", 0)`` builds).
Hooks are never stored on the model: ``hooks`` puts them in a context variable
for the duration of a ``with`` block, so they belong to that call alone. One
model shared by many threads (every session of a Streamlit server uses the same
bundled model) captures each thread's own tensors.

The names, in forward order (B batch, T tokens, d = d_model, h = n_head, d_k = d / h):

    hook_embed                     (B, T, d)     E[ids], the token embeddings
    hook_pos_embed                 (T, d)        PE rows added (zeros for "none")
    blocks.l.ln1.hook_normalized   (B, T, d)     LayerNorm_1(X), after λ and b
    blocks.l.attn.hook_q|k|v       (B, h, T, d_k) per-head queries, keys, values
    blocks.l.attn.hook_scores      (B, h, T, T)  Q Kᵀ / sqrt(d_k), before the mask M
    blocks.l.attn.hook_pattern     (B, h, T, T)  W_attn = softmax(scores + M)
    blocks.l.attn.hook_z           (B, h, T, d_k) Z = W_attn V, per head (ablation zeroes it)
    blocks.l.hook_attn_out         (B, T, d)     attention output after W_O
    blocks.l.hook_resid_mid        (B, T, d)     Y = X + attention
    blocks.l.ln2.hook_normalized   (B, T, d)     LayerNorm_2(Y), the FFN's input (extra name)
    blocks.l.mlp.hook_pre|post     (B, T, d_ff)  X W_1 + b_1, and after GELU / ReLU
    blocks.l.hook_mlp_out          (B, T, d)     FFN(LayerNorm_2(Y)), before it is added to Y
    blocks.l.hook_resid_post       (B, T, d)     Y + FFN, the block's output
    ln_final.hook_normalized       (B, T, d)     final LayerNorm
    hook_logits                    (B, T, |V|)   logits
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

import torch
from torch import Tensor, nn

from gptviz.model.names import act_name

NamesFilter = None | str | Iterable[str] | Callable[[str], bool]
HookFn = Callable[[Tensor, str], Tensor | None]  # (activation, name) -> replacement or None


@dataclass(frozen=True)
class _Active:
    """The hooks of the calls in progress in this context, by hook point and by model."""

    fns: Mapping[int, tuple[HookFn, ...]] = field(default_factory=dict)  # id(HookPoint) -> fns
    models: frozenset[int] = frozenset()  # id(model) of models inside a ``hooks`` block


# Each thread starts with an empty context, so one session's hooks never reach another's.
_ACTIVE: ContextVar[_Active | None] = ContextVar("gptviz_hooks", default=None)
_NONE = _Active()


def _current() -> _Active:
    return _ACTIVE.get() or _NONE


class HookPoint(nn.Module):
    """Identity on tensors; exists so that a hook of the current call can see or replace one."""

    def __init__(self) -> None:
        super().__init__()
        self.name = ""  # set by GPT from named_modules()

    def forward(self, x: Tensor) -> Tensor:
        for fn in _current().fns.get(id(self), ()):
            out = fn(x, self.name)
            if out is not None:
                x = out
        return x


def is_hooked(model: nn.Module) -> bool:
    """True inside a ``hooks(model, ...)`` block of this thread: take the explicit path."""
    return id(model) in _current().models


class ActivationCache(Mapping[str, Tensor]):
    """Read-only mapping name -> detached tensor, in forward order.

    >>> logits, cache = model.run_with_cache([1, 2, 3])
    >>> cache["blocks.0.attn.hook_pattern"].shape     # (B, n_head, T, T)
    torch.Size([1, 2, 3, 3])
    """

    def __init__(self, tensors: dict[str, Tensor]) -> None:
        self._tensors = dict(tensors)

    def __getitem__(self, name: str) -> Tensor:
        try:
            return self._tensors[name]
        except KeyError:
            raise KeyError(
                f"no activation named {name!r} in this cache; it holds "
                f"{len(self)} names, e.g. {list(self._tensors)[:3]}"
            ) from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._tensors)

    def __len__(self) -> int:
        return len(self._tensors)

    def to(self, device: str | torch.device) -> ActivationCache:
        return ActivationCache({k: v.to(device) for k, v in self._tensors.items()})

    def __repr__(self) -> str:
        return f"ActivationCache({len(self)} activations)"


def make_filter(names_filter: NamesFilter) -> Callable[[str], bool]:
    """None -> everything; a string -> that name; a list -> those names; else a predicate.

    >>> make_filter(["hook_embed"])("hook_logits")
    False
    """
    if names_filter is None:
        return lambda name: True
    if isinstance(names_filter, str):
        return lambda name: name == names_filter
    if callable(names_filter):
        return names_filter
    wanted = set(names_filter)
    return lambda name: name in wanted


def hook_points(model: nn.Module) -> dict[str, HookPoint]:
    """Every HookPoint of ``model`` by its dotted name, in forward order."""
    return {name: m for name, m in model.named_modules() if isinstance(m, HookPoint)}


@contextmanager
def hooks(model: nn.Module, fwd_hooks: Iterable[tuple[NamesFilter, HookFn]]
          ) -> Iterator[nn.Module]:
    """Run ``fn(activation, name)`` at the matching hook points during the ``with`` body.

    The hooks live in this thread's context, not on the model: another thread
    running the same model at the same time neither sees them nor is seen. Inside
    the block the model takes its explicit (hooked) path, so each hook point fires.
    A hook may return a tensor to replace the activation; blocks nest.

    >>> seen = []
    >>> with hooks(model, [("hook_embed", lambda x, name: seen.append(name))]):
    ...     _ = model([1, 2])
    >>> seen
    ['hook_embed']
    """
    points = hook_points(model)
    before = _current()
    fns = {key: tuple(value) for key, value in before.fns.items()}
    for names_filter, fn in fwd_hooks:
        _check_names(names_filter, points)
        keep = make_filter(names_filter)
        for name, point in points.items():
            if keep(name):
                fns[id(point)] = (*fns.get(id(point), ()), fn)
    token = _ACTIVE.set(_Active(fns, before.models | {id(model)}))
    try:
        yield model
    finally:
        _ACTIVE.reset(token)


def _check_names(names_filter: NamesFilter, points: Mapping[str, HookPoint]) -> None:
    if names_filter is None or callable(names_filter):
        return
    names = [names_filter] if isinstance(names_filter, str) else list(names_filter)
    unknown = [n for n in names if n not in points]
    if unknown:
        raise ValueError(f"no hook point named {unknown[0]!r}; see model.hook_names().")


@contextmanager
def ablate_heads(model: nn.Module, heads: Mapping[int, Iterable[int]]) -> Iterator[nn.Module]:
    """Zero the output z of chosen heads, e.g. ``{0: [1, 3]}`` = heads 1 and 3 of layer 0.

    >>> with ablate_heads(model, {0: [1]}):      # as if head 1 of layer 0 were switched off
    ...     ablated = model(ids)[0, -1]
    >>> bool((ablated != model(ids)[0, -1]).any())
    True
    """
    chosen = {int(layer): sorted({int(h) for h in hs}) for layer, hs in heads.items()}
    for layer, hs in chosen.items():
        if not 0 <= layer < model.config.n_layer:
            raise ValueError(f"layer {layer} does not exist: the model has {model.config.n_layer}.")
        bad = [h for h in hs if not 0 <= h < model.config.n_head]
        if bad:
            raise ValueError(
                f"head(s) {bad} do not exist: layers have {model.config.n_head} heads."
            )

    def zero(z: Tensor, name: str) -> Tensor:  # z: (B, n_head, T, d_head)
        z = z.clone()
        z[:, chosen[int(name.split(".")[1])]] = 0.0
        return z

    names = [act_name("z", layer) for layer, hs in chosen.items() if hs]
    with hooks(model, [(names, zero)]) if names else _nothing(model):
        yield model


@contextmanager
def _nothing(model: nn.Module) -> Iterator[nn.Module]:
    yield model
