"""The GPT: embeddings -> pre-LN transformer blocks -> final LayerNorm -> unembedding.

    X = E[ids] + PE                                  (hook_embed, hook_pos_embed)
    Y = X + attention(LayerNorm_1(X))                (blocks.l.hook_resid_mid)
    X' = Y + FFN(LayerNorm_2(Y))                     (blocks.l.hook_mlp_out, hook_resid_post)
    logits = LayerNorm_final(X') W_U                 (hook_logits)
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor, nn

from gptviz.model.attention import ROPE, CausalSelfAttention, KVCache
from gptviz.model.config import GPTConfig
from gptviz.model.hooks import (
    ActivationCache,
    HookPoint,
    NamesFilter,
    hook_points,
    hooks,
    is_hooked,
)
from gptviz.model.layers import FeedForward, LayerNorm, PositionalEncoding

IdsLike = Sequence[int] | Tensor
ROPE_MAX_TOKENS = 8  # a RoPE model reads at most this many windows in one pass


class Block(nn.Module):
    """One pre-LN transformer block: X -> Y = X + attn(LN1(X)) -> Y + FFN(LN2(Y))."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        # Registration order = forward order, so hook names list in forward order.
        self.ln1 = LayerNorm(config.d_model, config.bias, config.ln_eps)
        window = config.context_length if config.rope else None
        self.attn = CausalSelfAttention(config.d_model, config.n_head, config.bias, config.dropout,
                                        window)
        self.hook_attn_out = HookPoint()
        self.hook_resid_mid = HookPoint()
        self.ln2 = LayerNorm(config.d_model, config.bias, config.ln_eps)
        self.mlp = FeedForward(config.d_model, config.d_ff, config.activation, config.bias,
                               config.dropout)
        self.hook_mlp_out = HookPoint()  # FFN(LN2(Y)), before it joins the residual
        self.hook_resid_post = HookPoint()

    def forward(self, x: Tensor, hooked: bool = False, cache: KVCache | None = None,
                layer: int = 0, rotor: Tensor | None = None) -> Tensor:
        if not hooked:
            x = x + self.attn(self.ln1(x), cache=cache, layer=layer, rotor=rotor)  # (B, T, d)
            return x + self.mlp(self.ln2(x))  # (B, T, d)
        a = self.hook_attn_out(self.attn(self.ln1(x, True), True, cache, layer))  # (B, T, d)
        y = self.hook_resid_mid(x + a)  # (B, T, d)
        f = self.hook_mlp_out(self.mlp(self.ln2(y, True), True))  # (B, T, d)
        return self.hook_resid_post(y + f)  # (B, T, d)


class GPT(nn.Module):
    """A decoder-only transformer whose every step can be captured by name.

    >>> model = GPT(GPTConfig(vocab_size=10, context_length=8, d_model=16, n_layer=1, n_head=2))
    >>> model(torch.tensor([[1, 2, 3]])).shape       # (B, T, |V|)
    torch.Size([1, 3, 10])
    """

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        config.validate()
        self.config = config
        self.embed = nn.Embedding(config.vocab_size, config.d_model)  # E, one row per token
        self.hook_embed = HookPoint()
        self.pos = PositionalEncoding(config.positional, config.context_length, config.d_model)
        self.hook_pos_embed = HookPoint()
        self.drop = nn.Dropout(config.dropout) if config.dropout > 0 else None
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.n_layer))
        self.ln_final = LayerNorm(config.d_model, config.bias, config.ln_eps)
        self.unembed = nn.Linear(config.d_model, config.vocab_size, bias=False)  # W_U
        if config.tie_embeddings:
            self.unembed.weight = self.embed.weight
        self.hook_logits = HookPoint()
        for name, point in hook_points(self).items():
            point.name = name
        self.apply(self._init_weights)
        for name, p in self.named_parameters():  # GPT-2: scale residual projections by 1/sqrt(2L)
            if name.endswith(("attn.W_O.weight", "mlp.W_2.weight")):
                nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * config.n_layer))

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, 0.0, 0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    @property
    def device(self) -> torch.device:
        return self.embed.weight.device

    # ---- forward ---------------------------------------------------------------
    def forward(self, ids: IdsLike, cache: KVCache | None = None, last_only: bool = False
                ) -> Tensor:
        """Logits (B, T, |V|) for ids (B, T) (a list or 1-D tensor counts as B = 1); with
        ``last_only``, y_N alone (B, 1, |V|), the row generation samples from.

        >>> model([1, 2, 3], last_only=True).shape
        torch.Size([1, 1, 10])
        """
        ids = self.check_ids(ids, offset=cache.position if cache else 0)
        return self._forward(ids, cache, last_only=last_only)

    def _forward(self, ids: Tensor, cache: KVCache | None = None, last_only: bool = False
                 ) -> Tensor:
        """``forward`` without input checks, for loops whose ids are known to be valid."""
        hooked = is_hooked(self)  # inside this thread's ``hooks`` block: the explicit path
        start, T = (cache.position if cache is not None else 0), ids.shape[1]
        x = self.embed(ids)  # (B, T, d)
        rotor = None
        if hooked:
            x = self.hook_embed(x) + self.hook_pos_embed(self.pos(start, T))  # (B, T, d)
        elif self.config.positional not in ("none", "rope"):
            x = x + self.pos(start, T)  # (B, T, d): X + PE (RoPE rotates q and k instead)
        elif (self.config.rope and not torch.is_grad_enabled()
              and not torch.is_autocast_enabled(x.device.type)):
            # generating: every layer rotates its q and k in place by the same table rows
            rotor = ROPE.rotor(start, T, self.config.d_head, x)  # (T, 1, 1, d_head/2)
        if self.drop is not None:
            x = self.drop(x)
        for layer, block in enumerate(self.blocks):
            x = block(x, hooked, cache, layer, rotor)  # (B, T, d)
        if cache is not None:
            cache.advance(T)
        if last_only and not hooked:  # LayerNorm and W_U act per position: keep the last
            x = x[:, -1:]  # (B, 1, d)
        logits = self.unembed(self.ln_final(x, hooked))  # (B, T, |V|), or (B, 1, |V|)
        if not hooked:
            return logits
        logits = self.hook_logits(logits)  # hooks see every position, as without last_only
        return logits[:, -1:] if last_only else logits

    def check_ids(self, ids: IdsLike, offset: int = 0) -> Tensor:
        """Return ids as a (B, T) long tensor on the model's device, or raise ValueError.

        >>> model.check_ids([3, 1])
        tensor([[3, 1]])
        """
        if not isinstance(ids, Tensor):
            ids = torch.as_tensor(list(ids), dtype=torch.long)
        if ids.dtype.is_floating_point or ids.dtype.is_complex or ids.dtype == torch.bool:
            raise ValueError(f"token ids must be integers, got dtype {ids.dtype}.")
        if ids.dim() == 1:
            ids = ids[None]  # (1, T)
        if ids.dim() != 2 or ids.shape[1] == 0:
            raise ValueError(
                f"expected a non-empty (batch, tokens) array of ids, got {tuple(ids.shape)}."
            )
        n, n_ctx = ids.shape[1], self.config.context_length
        if self.config.rope:  # a sliding window: any position is fine
            if n > ROPE_MAX_TOKENS * n_ctx:
                raise ValueError(f"{n} tokens at once is more than {ROPE_MAX_TOKENS} context "
                                 f"windows ({n_ctx} each); feed fewer or use a KV cache.")
        elif offset + n > n_ctx:
            raise ValueError(
                f"{offset + n} tokens is longer than the model's context_length ({n_ctx}); "
                f"crop to the last {n_ctx} tokens (generation crops for you)."
            )
        lo, hi = int(ids.min()), int(ids.max())
        if lo < 0 or hi >= self.config.vocab_size:
            bad = lo if lo < 0 else hi
            raise ValueError(
                f"token id {bad} is outside the vocabulary: valid ids are 0 to "
                f"{self.config.vocab_size - 1}. Was the text encoded with another tokenizer?"
            )
        return ids.to(self.device, torch.long)

    # ---- activations -----------------------------------------------------------
    def hook_names(self) -> list[str]:
        """Every capturable activation name, in forward order (the golden contract)."""
        return list(hook_points(self))

    @torch.no_grad()
    def run_with_cache(self, ids: IdsLike, names_filter: NamesFilter = None
                       ) -> tuple[Tensor, ActivationCache]:
        """Logits and the named activations of one forward pass on the explicit path.

        >>> logits, cache = model.run_with_cache([1, 2, 3], names_filter=["hook_logits"])
        >>> list(cache)
        ['hook_logits']
        """
        ids = self.check_ids(ids)
        store: dict[str, Tensor] = {}

        def save(x: Tensor, name: str) -> None:
            store[name] = x.detach()

        with hooks(self, [(names_filter, save)]):
            logits = self._forward(ids)
        return logits, ActivationCache(store)

    def new_cache(self, batch: int = 1) -> KVCache:
        c = self.config
        return KVCache(c.n_layer, batch, c.n_head, c.context_length, c.d_head,
                       device=self.device, dtype=self.embed.weight.dtype,
                       rolling=c.rope)

    def num_params(self) -> int:
        """Distinct trainable numbers (a tied E = W_U counts once)."""
        return sum(p.numel() for p in self.parameters())
