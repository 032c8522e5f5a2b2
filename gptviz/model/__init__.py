"""The GPT engine: configs, layers, attention, the model and its named activations."""

from gptviz.model.attention import CausalSelfAttention, KVCache, causal_mask
from gptviz.model.config import (
    GPT_CONFIG_124M,
    GPTConfig,
    RunConfig,
    TrainConfig,
    parameter_counts,
)
from gptviz.model.gpt import GPT, Block
from gptviz.model.hooks import ActivationCache, HookPoint, ablate_heads, hooks
from gptviz.model.layers import (
    FeedForward,
    LayerNorm,
    PositionalEncoding,
    gelu,
    relu,
    sinusoidal_table,
)
from gptviz.model.names import act_name

__all__ = [
    "GPT", "GPT_CONFIG_124M", "ActivationCache", "Block", "CausalSelfAttention", "FeedForward",
    "GPTConfig", "HookPoint", "KVCache", "LayerNorm", "PositionalEncoding", "RunConfig",
    "TrainConfig", "ablate_heads", "act_name", "causal_mask", "gelu", "hooks",
    "parameter_counts", "relu", "sinusoidal_table",
]
