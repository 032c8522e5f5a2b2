"""The twelve stages of one Transformer block, as the Transformer block page and the
Lesson draw them: each quantity's name, shape and values, in forward order."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gptviz.analysis.core import layernorm_input, to_numpy
from gptviz.model.config import ACTIVATION_TEXT
from gptviz.model.hooks import ActivationCache
from gptviz.model.names import act_name


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
    z = cache[act_name("z", layer)][0]  # (h, T, d_k)
    h, _, d_k = z.shape
    pre, mid = get("pre"), get("resid_mid")  # (T, d_ff), (T, d)
    act = ACTIVATION_TEXT[activation]
    b_o, b_1, b_2 = (" + b_O", " + b₁", " + b₂") if bias else ("", "", "")
    td, tf = f"N×d = {t}×{d}", f"N×d_ff = {t}×{pre.shape[1]}"
    return [
        Stage("X", td, x),
        Stage("LN₁(X)", td, get("normalized", "ln1")),
        Stage(f"W_attn (head {head})", f"N×N = {t}×{t}", get("pattern")[head], "key"),
        Stage("Z, heads side by side", f"N×(h·d_k) = {t}×{h * d_k}",
              to_numpy(z.transpose(0, 1).reshape(t, h * d_k))),
        Stage(f"attention out Z W_O{b_o}", td, get("attn_out")),
        Stage(f"Y = X + Z W_O{b_o}", td, mid),
        Stage("Y", td, mid),
        Stage("LN₂(Y)", td, get("normalized", "ln2")),
        Stage(f"A = LN₂(Y) W₁{b_1}", tf, pre),
        Stage(f"H = {act}(A)", tf, get("post")),
        Stage(f"FFN(Y) = H W₂{b_2}", td, get("mlp_out")),
        Stage("X' = Y + FFN(Y)", td, get("resid_post")),
    ]
