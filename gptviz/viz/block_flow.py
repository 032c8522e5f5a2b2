"""One transformer block as a flow of live tensors, each a thumbnail with its shape.

    attention half:  X → LN₁(X) → W_attn (head h) → Z → Z W_O → Y = X + Z W_O
    FFN half:        Y → LN₂(Y) → H = LN₂(Y) W₁ + b₁ → act(H) → FFN(Y) → X' = Y + FFN(Y)

``block_stages`` reads the tensors from an ``ActivationCache`` by name;
``block_flow`` draws them as two rows of small heatmaps joined by arrows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from gptviz.analysis import layernorm_input, to_numpy
from gptviz.model.hooks import ActivationCache
from gptviz.viz.heatmaps import as_float32, axis_labels

COLS = 6  # stages per half


@dataclass(frozen=True)
class Stage:
    name: str  # e.g. "LN₁(X)"
    shape: str  # e.g. "N×d = 64×128"
    values: np.ndarray  # (rows, cols) float32, tokens down
    columns: str = "dimension"  # what the columns are: "dimension" or "key"


def block_stages(cache: ActivationCache, layer: int, head: int = 0,
                 activation: str = "gelu") -> list[Stage]:
    """The twelve stages of block ``layer`` (batch 0), in forward order, two halves of six.

    >>> [s.name for s in block_stages(cache, 0)][:3]
    ['X', 'LN₁(X)', 'W_attn (head 0)']
    """
    b = f"blocks.{layer}"
    x = to_numpy(layernorm_input(cache, layer))  # (T, d)
    t, d = x.shape
    z = cache[f"{b}.attn.hook_z"][0]  # (h, T, d_k)
    h, _, d_k = z.shape
    pre = to_numpy(cache[f"{b}.mlp.hook_pre"][0])  # (T, d_ff)
    mid = to_numpy(cache[f"{b}.hook_resid_mid"][0])  # (T, d)
    post = to_numpy(cache[f"{b}.hook_resid_post"][0])  # (T, d)
    act = "GELU" if activation == "gelu" else "ReLU"
    td, tf = f"N×d = {t}×{d}", f"N×d_ff = {t}×{pre.shape[1]}"
    return [
        Stage("X", td, x),
        Stage("LN₁(X)", td, to_numpy(cache[f"{b}.ln1.hook_normalized"][0])),
        Stage(f"W_attn (head {head})", f"h×N×N = {h}×{t}×{t}",
              to_numpy(cache[f"{b}.attn.hook_pattern"][0, head]), "key"),
        Stage("Z, heads side by side", f"N×(h·d_k) = {t}×{h * d_k}",
              to_numpy(z.transpose(0, 1).reshape(t, h * d_k))),
        Stage("attention out Z W_O", td, to_numpy(cache[f"{b}.hook_attn_out"][0])),
        Stage("Y = X + Z W_O", td, mid),
        Stage("Y", td, mid),
        Stage("LN₂(Y)", td, to_numpy(cache[f"{b}.ln2.hook_normalized"][0])),
        Stage("H = LN₂(Y) W₁ + b₁", tf, pre),
        Stage(f"{act}(H)", tf, to_numpy(cache[f"{b}.mlp.hook_post"][0])),
        Stage("FFN(Y) = act(H) W₂ + b₂", td, post - mid),
        Stage("X' = Y + FFN(Y)", td, post),
    ]


def block_flow(stages: Sequence[Stage], tokens: Sequence[str], height: int = 560) -> go.Figure:
    """Two rows of thumbnails (attention half, FFN half), arrows between them, ⊕ at the sums.

    Each panel has its own colour range, centred on 0 (W_attn: 0..1); hover gives
    token, column and value.

    >>> s = [Stage(f"s{i}", "2×2", np.eye(2, dtype=np.float32)) for i in range(12)]
    >>> len(block_flow(s, ["a", "b"]).data)
    12
    """
    rows = (len(stages) + COLS - 1) // COLS
    titles = [f"<b>{s.name}</b><br><span style='font-size:10px'>{s.shape}</span>"
              for s in stages]
    fig = make_subplots(rows=rows, cols=COLS, subplot_titles=titles, horizontal_spacing=0.035,
                        vertical_spacing=0.16)
    for k, stage in enumerate(stages):
        r, c = divmod(k, COLS)
        m = as_float32(stage.values)  # (T, cols)
        names = axis_labels(tokens, m.shape[0])
        prob = stage.columns == "key"
        bound = float(np.abs(m).max()) or 1.0
        fig.add_trace(go.Heatmap(
            z=m, colorscale="Blues" if prob else "RdBu_r", showscale=False,
            zmin=0.0 if prob else -bound, zmax=1.0 if prob else bound,
            customdata=np.broadcast_to(np.array(names, dtype=object)[:, None], m.shape),
            hovertemplate=(f"{stage.name}<br>%{{customdata}} (%{{y}}), {stage.columns} "
                           "%{x}: %{z:.3f}<extra></extra>")), row=r + 1, col=c + 1)
    fig.update_xaxes(showticklabels=False, showgrid=False, zeroline=False)
    fig.update_yaxes(showticklabels=False, showgrid=False, zeroline=False, autorange="reversed")
    fig.update_annotations(font_size=12)
    _arrows(fig, len(stages))
    fig.update_layout(height=height, margin=dict(l=10, r=10, t=50, b=20))
    return fig


def _arrows(fig: go.Figure, n: int) -> None:
    """An arrow between neighbours in a row; ⊕ before the residual sums (panels 6 and 12)."""
    for k in range(n - 1):
        if (k + 1) % COLS == 0:
            continue
        left, right = _domain(fig, k), _domain(fig, k + 1)
        x = (left["x"][1] + right["x"][0]) / 2
        y = sum(left["y"]) / 2
        text = "⊕" if (k + 2) % COLS == 0 else "→"
        fig.add_annotation(x=x, y=y, xref="paper", yref="paper", text=text, showarrow=False,
                           font=dict(size=18, color="#b42318" if text == "⊕" else "#444"))


def _domain(fig: go.Figure, k: int) -> dict[str, tuple[float, float]]:
    suffix = "" if k == 0 else str(k + 1)
    return {"x": fig.layout[f"xaxis{suffix}"].domain, "y": fig.layout[f"yaxis{suffix}"].domain}


def stage_table(stages: Sequence[Stage]) -> list[dict[str, object]]:
    """Rows for a table of the stages: name, shape, mean, std, min, max.

    >>> stage_table([Stage("X", "1×2", np.array([[1.0, 3.0]], np.float32))])[0]["mean"]
    2.0
    """
    return [{"stage": s.name, "shape": s.shape, "mean": float(s.values.mean()),
             "std": float(s.values.std()), "min": float(s.values.min()),
             "max": float(s.values.max())} for s in stages]
