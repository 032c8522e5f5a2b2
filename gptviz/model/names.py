"""The one home of activation names: ``act_name`` builds each, the page lists group them.

In the style of TransformerLens's ``utils.get_act_name``, without its aliases:
one kind, one spelling. The table of what each name holds is in ``hooks.py``.

    act_name("embed")                    -> "hook_embed"
    act_name("pattern", 0)               -> "blocks.0.attn.hook_pattern"
    act_name("pre", 1)                   -> "blocks.1.mlp.hook_pre"
    act_name("resid_post", 1)            -> "blocks.1.hook_resid_post"
    act_name("normalized", 1, "ln2")     -> "blocks.1.ln2.hook_normalized"
    act_name("normalized", ln="ln_final") -> "ln_final.hook_normalized"
"""

from __future__ import annotations

# kind -> where its HookPoint lives: "" on the GPT, or a path inside blocks.{l}.
_MODEL_KINDS = ("embed", "pos_embed", "logits")
_BLOCK_KINDS = {
    "q": "attn.", "k": "attn.", "v": "attn.", "q_rot": "attn.", "k_rot": "attn.",  # RoPE only
    "scores": "attn.", "pattern": "attn.", "z": "attn.",
    "attn_out": "", "resid_mid": "", "pre": "mlp.", "post": "mlp.", "mlp_out": "",
    "resid_post": "",
}
_BLOCK_LNS = ("ln1", "ln2")
KINDS = (*_MODEL_KINDS, *_BLOCK_KINDS, "normalized")


def act_name(kind: str, layer: int | None = None, ln: str | None = None) -> str:
    """The activation name of ``kind`` (at ``layer`` for per-block kinds).

    ``ln`` says which LayerNorm a "normalized" is: "ln1" or "ln2" of a block
    (with ``layer``), or "ln_final" (without). Anything else is a ValueError.

    >>> act_name("pattern", 0), act_name("normalized", 1, "ln2")
    ('blocks.0.attn.hook_pattern', 'blocks.1.ln2.hook_normalized')
    """
    if kind not in KINDS:
        raise ValueError(f"unknown activation kind {kind!r}; kinds are {', '.join(KINDS)}.")
    if ln is not None and kind != "normalized":
        raise ValueError(f"ln={ln!r} only applies to 'normalized', not {kind!r}.")
    if kind == "normalized":
        if ln == "ln_final":
            _no_layer(kind, layer, "ln_final")
            return "ln_final.hook_normalized"
        if ln not in _BLOCK_LNS:
            raise ValueError(f"'normalized' needs ln='ln1', 'ln2' or 'ln_final', got {ln!r}.")
        return f"blocks.{_layer(kind, layer)}.{ln}.hook_normalized"
    if kind in _MODEL_KINDS:
        _no_layer(kind, layer, kind)
        return f"hook_{kind}"
    return f"blocks.{_layer(kind, layer)}.{_BLOCK_KINDS[kind]}hook_{kind}"


def _layer(kind: str, layer: int | None) -> int:
    if layer is None or isinstance(layer, bool) or int(layer) != layer or layer < 0:
        raise ValueError(f"{kind!r} is per block: give a layer index >= 0, got {layer!r}.")
    return int(layer)


def _no_layer(kind: str, layer: int | None, what: str) -> None:
    if layer is not None:
        raise ValueError(f"{what!r} is not inside a block: drop layer={layer!r}.")


def embedding_names() -> list[str]:
    """X = E[ids] + PE, what the first block receives (the Positional page).

    >>> embedding_names()
    ['hook_embed', 'hook_pos_embed']
    """
    return [act_name("embed"), act_name("pos_embed")]


def attention_page_names(n_layer: int, rope: bool = False) -> list[str]:
    """Every activation the Attention page reads: X + PE, and each head's steps (with
    ``rope``, also the rotated q and k the scores are made of).

    >>> attention_page_names(1)[:3]
    ['hook_embed', 'hook_pos_embed', 'blocks.0.attn.hook_q']
    >>> attention_page_names(1, rope=True)[5:7]
    ['blocks.0.attn.hook_q_rot', 'blocks.0.attn.hook_k_rot']
    """
    kinds = ("q", "k", "v", *(("q_rot", "k_rot") if rope else ()), "scores", "pattern", "z")
    return [*embedding_names(), *(act_name(k, ly) for ly in range(n_layer) for k in kinds)]


def block_page_names(n_layer: int) -> list[str]:
    """Every activation the Transformer-block page reads, in forward order.

    >>> len(block_page_names(2)), block_page_names(1)[2]
    (22, 'blocks.0.ln1.hook_normalized')
    """
    def layer_names(ly: int) -> list[str]:
        return [act_name("normalized", ly, "ln1"), act_name("pattern", ly), act_name("z", ly),
                act_name("attn_out", ly), act_name("resid_mid", ly),
                act_name("normalized", ly, "ln2"), act_name("pre", ly), act_name("post", ly),
                act_name("mlp_out", ly), act_name("resid_post", ly)]

    return [*embedding_names(), *(n for ly in range(n_layer) for n in layer_names(ly))]


def generation_page_names(layer: int) -> list[str]:
    """What the Generation page's attention view reads: one layer's scores and pattern.

    >>> generation_page_names(0)
    ['blocks.0.attn.hook_scores', 'blocks.0.attn.hook_pattern']
    """
    return [act_name("scores", layer), act_name("pattern", layer)]
