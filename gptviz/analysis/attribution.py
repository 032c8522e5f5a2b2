r"""Who wrote the prediction: direct logit attribution and the commitment layer.

The residual stream at position i after the last block is a sum of parts, each written
by one component of the model (W_O^{ℓ,h} is head h's d_k rows of block ℓ's W_O):

    x_i = E[t_i] + p_i + Σ_ℓ ( Σ_h z_i^{ℓ,h} W_O^{ℓ,h} + b_O^ℓ + FFN^ℓ_i )

The final LayerNorm is linear once its σ = sqrt(var(x_i) + ε) is frozen at its value
for this input, because the mean of a sum is the sum of the means. So the logit of a
token t splits exactly into one number per part c:

    logit_t = Σ_c (c − mean(c)) · (λ / σ) · W_U[:, t]  +  b_f · W_U[:, t]

(λ, b_f: the final LayerNorm's scale and shift). Without positions ("none", or "rope",
which rotates q and k instead) there is no p_i; without biases no b_O and no b_f.

The commitment layer of a position is the first stage (the embeddings, then after each
block) at which the logit lens's top-1 token is already the model's final top-1.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from gptviz.analysis.core import layernorm_input
from gptviz.model import GPT
from gptviz.model.hooks import ActivationCache
from gptviz.model.names import act_name


@dataclass(frozen=True)
class Component:
    """One writer of the residual stream, e.g. ``Component("L1 H2", "head", 1, 2)``."""

    label: str  # what a bar or a row of a table says
    kind: str  # "token", "position", "head", "heads" (summed over a layer), "b_O", "FFN"
    layer: int | None = None
    head: int | None = None


@dataclass(frozen=True)
class Attribution:
    """How much each component adds to the logit of ``token`` at ``position``."""

    position: int
    token: int
    components: tuple[Component, ...]
    contributions: Tensor  # (C,) float64, one per component
    ln_bias: float | None  # b_f · W_U[:, t], None when the model has no biases
    sigma: float  # the final LayerNorm's σ = sqrt(var(x) + ε) for this input, frozen

    @property
    def total(self) -> float:
        """Σ of every bar: the contributions and the LayerNorm's bias term."""
        return float(self.contributions.sum()) + (self.ln_bias or 0.0)


def residual_parts(model: GPT, cache: ActivationCache, position: int
                   ) -> tuple[tuple[Component, ...], Tensor]:
    """The components and their parts (C, d) of the residual stream at ``position`` after
    the last block, in float64; the parts sum to ``blocks.{L-1}.hook_resid_post``.

    Needs the cache's embed, pos_embed, z, attn_out and mlp_out (the block page's names).

    >>> comps, parts = residual_parts(model, cache, -1)
    >>> [c.label for c in comps][:4], tuple(parts.shape)
    (['token E[t]', 'position p', 'L0 H0', 'L0 H1'], (10, 16))
    """
    c = model.config
    comps = [Component("token E[t]", "token")]
    parts = [cache[act_name("embed")][0, position].double()]  # (d,)
    if c.adds_positions:
        comps.append(Component("position p", "position"))
        parts.append(cache[act_name("pos_embed")][position].double())  # (d,)
    dk = c.d_head
    for layer, block in enumerate(model.blocks):
        z = cache[act_name("z", layer)][0, :, position].double()  # (n_head, d_k)
        w_o = block.attn.W_O.weight.detach()  # (d, d): nn.Linear keeps (out, in)
        for h in range(c.n_head):
            comps.append(Component(f"L{layer} H{h}", "head", layer, h))
            parts.append(z[h] @ w_o[:, h * dk:(h + 1) * dk].double().T)  # (d,) = z^h W_O^h
        if block.attn.W_O.bias is not None:
            comps.append(Component(f"L{layer} b_O", "b_O", layer))
            parts.append(block.attn.W_O.bias.detach().double())  # (d,)
        comps.append(Component(f"L{layer} FFN", "FFN", layer))
        parts.append(cache[act_name("mlp_out", layer)][0, position].double())  # (d,)
    return tuple(comps), torch.stack(parts).to(torch.float64)  # (C, d)


def final_sigma(model: GPT, x: Tensor) -> float:
    """σ = sqrt(var(x) + ε) that the final LayerNorm divides the row x (d,) by.

    >>> round(final_sigma(model, torch.tensor([1.0, 3.0])), 4)
    1.0
    """
    x = x.double()
    return float(torch.sqrt(x.var(unbiased=False) + model.ln_final.eps))


@torch.no_grad()
def logit_attribution(model: GPT, cache: ActivationCache, position: int, token: int
                      ) -> Attribution:
    """Direct logit attribution of ``token`` at ``position`` with σ frozen (module doc).

    >>> a = logit_attribution(model, cache, -1, 3)
    >>> abs(a.total - model(ids)[0, -1, 3].item()) < 1e-4
    True
    """
    n = cache[act_name("embed")].shape[1]
    position = range(n)[position]  # a negative position counts from the end
    comps, parts = residual_parts(model, cache, position)  # (C, d)
    x = cache[act_name("resid_post", model.config.n_layer - 1)][0, position]  # (d,)
    sigma = final_sigma(model, x)
    lam = model.ln_final.lam.detach().double()  # (d,)
    w_u = model.unembed.weight.detach()[token].double()  # (d,) = W_U[:, t], that row only
    centred = parts - parts.mean(dim=-1, keepdim=True)  # (C, d): c − mean(c)
    contributions = centred @ (lam / sigma * w_u)  # (C,)
    b_f = model.ln_final.b
    bias = None if b_f is None else float(b_f.detach().double() @ w_u)
    return Attribution(position, int(token), comps, contributions, bias, sigma)


def heads_per_layer(a: Attribution) -> Attribution:
    """The same attribution with each layer's heads summed into one "L{ℓ} heads" bar.

    >>> a = heads_per_layer(logit_attribution(model, cache, -1, 3))
    >>> [c.label for c in a.components][2:]
    ['L0 heads', 'L0 b_O', 'L0 FFN', 'L1 heads', 'L1 b_O', 'L1 FFN']
    """
    comps: list[Component] = []
    values: list[Tensor] = []
    for comp, value in zip(a.components, a.contributions, strict=True):
        if comp.kind == "head" and comps and comps[-1].kind == "heads" \
                and comps[-1].layer == comp.layer:
            values[-1] = values[-1] + value
            continue
        if comp.kind == "head":
            comp = Component(f"L{comp.layer} heads", "heads", comp.layer)
        comps.append(comp)
        values.append(value)
    return Attribution(a.position, a.token, tuple(comps), torch.stack(values), a.ln_bias,
                       a.sigma)


@dataclass(frozen=True)
class Commitment:
    """The logit lens's top-1 at every stage and position, and where it settles."""

    stages: tuple[str, ...]  # "embeddings", "after block 0", ...
    top1: Tensor  # (S, T) long: the lens's top-1 id at each stage (S = n_layer + 1)
    first: Tensor  # (T,) long: the first stage whose top-1 is the final one (the last row)
    kept: Tensor  # (T,) long: the first stage from which every top-1 is the final one

    @property
    def layer(self) -> Tensor:
        """The commitment as a block index (T,): −1 = already in the embeddings."""
        return self.first - 1

    @property
    def kept_layer(self) -> Tensor:
        """The block after which the top-1 is the final one and stays so (T,): −1 = from
        the embeddings on. Later than ``layer`` where the top-1 changes again in between."""
        return self.kept - 1


def settling(top1: Tensor) -> tuple[Tensor, Tensor]:
    """For top-1 ids (S, T) per stage and position: the first stage whose top-1 is the last
    stage's, and the first stage from which it stays the last stage's (T,) each.

    >>> first, kept = settling(torch.tensor([[5, 1], [7, 2], [5, 3], [7, 2]]))
    >>> first.tolist(), kept.tolist()  # position 0: 7 at stage 1, 5 at 2, 7 again at 3
    ([1, 1], [3, 3])
    """
    settled = top1 == top1[-1]  # (S, T): the last stage is the model's own prediction
    first = settled.to(torch.int8).argmax(dim=0)  # (T,) the first True of each column
    stays = settled.flip(0).to(torch.int8).cumprod(dim=0).flip(0)  # (S, T): True to the end
    return first.long(), stays.argmax(dim=0).long()


@torch.no_grad()
def commitment_layers(model: GPT, cache: ActivationCache) -> Commitment:
    """The logit lens (softmax(LN_final(x) W_U), ``analysis.logit_lens``) at every position
    at once, and each position's commitment stage.

    >>> c = commitment_layers(model, cache); c.stages, tuple(c.top1.shape)
    (('embeddings', 'after block 0', 'after block 1'), (3, 3))
    """
    n_layer = model.config.n_layer
    states = [layernorm_input(cache, 0)]  # (T, d): X + PE, what block 0 reads
    states += [cache[act_name("resid_post", layer)][0] for layer in range(n_layer)]
    # a stage at a time: all at once, the logits of GPT-2 at 128 tokens are 13 × 128 ×
    # 50,257 floats (334 MB); one stage's are 26 MB
    top1 = torch.stack([model.unembed(model.ln_final(x.to(model.device))).argmax(dim=-1).cpu()
                        for x in states])  # (S, T)
    stages = ("embeddings", *(f"after block {layer}" for layer in range(n_layer)))
    return Commitment(stages, top1, *settling(top1))
