"""Steps 6–10 of the lesson: inside the blocks (LayerNorm, one head, all heads, the FFN and
the residual stream), drawn with the Attention and Transformer-block pages' builders."""

from __future__ import annotations

import numpy as np

from gptviz.analysis import attention as am
from gptviz.analysis import core as analysis
from gptviz.analysis.stages import block_stages
from gptviz.app.attention import figures as va
from gptviz.app.attention import formulas as mp
from gptviz.app.attention.view import grid_cell_px, narrow
from gptviz.app.block import figures as vb
from gptviz.app.block import formulas as mb
from gptviz.app.lesson import formulas as lt
from gptviz.app.lesson import questions as q
from gptviz.app.lesson.figures import residual_chain
from gptviz.app.lesson.run import Lesson, StepView
from gptviz.app.shared.notes import agree, counted
from gptviz.model.config import ACTIVATION_TEXT
from gptviz.model.names import act_name

GRID_PX = 560  # the height of the grid of every head, at most (a projector's screen)
FIGURE_PX = 450  # the figure column's plot area at a 1280-px window (456 px, measured)


def _block_link(ls: Lesson, view: str):
    return ls.link("app_pages/block.py", "Transformer block", view, layer=ls.layer,
                   head=ls.head)


def layernorm(ls: Lesson) -> StepView:
    c, layer, last = ls.config, ls.layer, ls.n - 1
    x = analysis.layernorm_input(ls.cache, layer, "ln1")  # (N, d)
    out = ls.cache[act_name("normalized", layer, "ln1")][0]  # (N, d)
    eps = ls.ckpt.model.blocks[layer].ln1.eps
    stats = analysis.layernorm_stats(x, out, eps)
    fig = ls.figure("layernorm", lambda: vb.layernorm_rows(stats, ls.labels))
    first = ("$X = E[\\mathrm{ids}]$" if not c.adds_positions else
             "$X = E[\\mathrm{ids}] + P$")
    reads = first if layer == 0 else f"the residual stream as block {layer - 1} left it"
    shift = " and shifts it by a trained $b$" if c.bias else " (this model has no shift $b$)"
    narrative = (
        f"A GPT is a stack of {counted(c.n_layer, 'identical block')}; we follow block "
        f"{layer}, which reads {reads}. Its first move normalises every token's row on its "
        "own: subtract the row's mean $\\mu$, divide by its spread "
        "$\\sqrt{\\sigma^2 + \\varepsilon}$, then "
        f"scale each dimension by a trained $\\lambda${shift}. This keeps the numbers in a "
        "steady range however large they grow along the stack. The bars show each row's mean "
        "and variance before, after standardising, and after "
        + ("$\\lambda$ and $b$." if c.bias else "$\\lambda$."))
    row = mb.layernorm_row(ls.labels[last], analysis.to_numpy(x[last]),
                           analysis.to_numpy(out[last]), eps, c.bias)
    return StepView(narrative, [fig], [lt.layernorm_definition(c.bias), row],
                    _block_link(ls, "LayerNorm"),
                    caption=f"The worked row is the last token's, position {last}.",
                    question=q.layernorm_variance(float(stats["var standardised"][last]),
                                                  float(stats["var before"][last]), c.d_model,
                                                  c.bias))


def one_head(ls: Lesson) -> StepView:
    c, layer, head, last = ls.config, ls.layer, ls.head, ls.n - 1
    steps = am.head_tensors(ls.cache, layer, head)
    figs = ls.figure("head", lambda: [
        narrow(name, fig) for name, fig in va.head_step_figures(
            {k: steps[k] for k in ("masked scores", "pattern")}, ls.labels, c.bias).items()])
    narrative = (
        "Attention lets each token gather information from the tokens before it. A head turns "
        "every normalised row into a query $q_i$, a key $k_j$ and a value $v_j$ (three learned "
        "matrices). Query $i$ scores key $j$ by $q_i \\cdot k_j / \\sqrt{d_k}$; the mask $M$ "
        "sets the score of every later token to $-\\infty$, so the future stays invisible; a "
        "softmax turns each row of scores into weights $w_{ij}$ that sum to 1; and token $i$ "
        "receives $z_i = \\sum_j w_{ij} v_j$, a weighted average of the values. Here: layer "
        f"{layer}, head {head}, with the last token's row worked out below.")
    return StepView(narrative, figs, [
        lt.qkv_formula(ls.n, c.d_head, layer, c.bias, c.rope),
        mp.attention_row(ls.labels[last], last, ls.labels, steps["scores"][last],
                         steps["pattern"][last], c.d_head),
        mp.z_row(last, ls.labels, steps["pattern"][last])],
        ls.link("app_pages/attention.py", "Attention", "Steps of one head", layer=layer,
                head=head),
        caption="The scaled scores with the mask (grey cells are −∞), then the softmax of "
                "each row. Queries down, keys across.",
        question=q.most_attended(steps["pattern"][last], ls.labels, layer, head),
        figure_widths=[1, 1])


def all_heads(ls: Lesson) -> StepView:
    c = ls.config
    patterns = am.all_patterns(ls.cache, c.n_layer)  # (L, H, N, N)
    cell = max(60, min(grid_cell_px(c.n_head) * 3 // 4, GRID_PX // c.n_layer))
    fig = ls.figure("heads", lambda: va.attention_grid(
        patterns, ls.labels, selected=(ls.layer, ls.head), cell_px=cell))
    several = (f"runs {c.n_head} heads side by side, each with its own $W_Q, W_K, W_V$, so each "
               "can look for something different: the previous token, the first token, an "
               "earlier copy of the current one." if c.n_head > 1 else
               "has a single head here; bigger models run many side by side.")
    narrative = (
        f"A layer {several} Their outputs $z^{{(h)}}$ ({ls.n} × {c.d_head} each) are laid side "
        f"by side and multiplied by $W_O$, back to $d = {c.d_model}$ columns, and the result "
        f"is added to the residual stream. The grid shows every pattern of "
        f"{agree(c.n_layer, 'the', 'all')} {counted(c.n_layer, 'layer')}, layers down and "
        "heads across; the framed one is the head of the previous step.")
    return StepView(narrative, [fig], [lt.heads_formula(ls.n, c.d_model, c.n_head, c.d_head,
                                                        c.bias)],
                    ls.link("app_pages/attention.py", "Attention", "All heads", layer=ls.layer,
                            head=ls.head),
                    caption="Row i of a thumbnail: how token i spreads its attention over "
                            "tokens 0 … i. Hover for the tokens and weights.",
                    question=q.previous_token_head(patterns[ls.layer], ls.layer))


def ffn(ls: Lesson) -> StepView:
    c, layer, last = ls.config, ls.layer, ls.n - 1
    stages = block_stages(ls.cache, layer, ls.head, c.activation, c.bias)
    fig = ls.figure("ffn", lambda: vb.block_flow(stages[6:], ls.labels, height=320,
                                                 plot_px=FIGURE_PX))
    y = analysis.to_numpy(ls.cache[act_name("resid_mid", layer)][0, last])  # (d,)
    f = analysis.to_numpy(ls.cache[act_name("mlp_out", layer)][0, last])  # (d,)
    x = analysis.to_numpy(ls.cache[act_name("resid_post", layer)][0, last])  # (d,)
    act = ACTIVATION_TEXT[c.activation]
    narrative = (
        "Then the *feed-forward network* (FFN) works on every token on its own: no token looks "
        f"at another here. It normalises the row again, widens it from $d = {c.d_model}$ to "
        f"$d_{{ff}} = {c.d_ff}$ numbers, applies {act} to each number, and projects back to "
        f"{c.d_model}. Its output is added to the residual stream, as attention's was. The "
        f"panels are the second half of block {layer}: from $Y$ to $X' = Y + "
        "\\mathrm{FFN}(Y)$.")
    norms = [float(np.linalg.norm(v)) for v in (y, f, x)]
    return StepView(narrative, [fig], [lt.ffn_formula(last, ls.labels[last], c.d_model, c.d_ff,
                                                      c.activation, c.bias, *norms)],
                    _block_link(ls, "The block, step by step"),
                    caption="Each panel is a live tensor, tokens down; ⊕ marks the residual "
                            "addition.",
                    question=q.ffn_norm(norms[0], norms[2], layer, ls.labels[last]))


def residual(ls: Lesson) -> StepView:
    c, last = ls.config, ls.n - 1
    stages, norms = analysis.residual_norms(ls.cache, c.n_layer)  # (S,), (S, N)
    fig = ls.figure("residual", lambda: vb.residual_norms_figure(norms, stages, ls.labels))
    chain = ls.figure("residual-chain", lambda: residual_chain(norms[:, last], stages,
                                                               ls.labels[last]))
    narrative = (
        "Every token's vector flows through the model as the *residual stream*: each attention "
        "layer and each FFN reads it (through a LayerNorm) and adds its result back, and "
        f"nothing else changes it. After {counted(c.n_layer, 'block')} the vector is the "
        f"embedding plus {2 * c.n_layer} additions, which is why one can ask what each of them "
        "contributed. "
        "The plot follows the length $\\lVert x_t \\rVert$ of every token's vector through "
        "the stages: thin lines are tokens, the thick line their mean; the chain below "
        "follows the last token's, stage by stage.")
    return StepView(narrative, [fig, chain], [lt.residual_formula()],
                    _block_link(ls, "Residual stream and logit lens"),
                    caption="embed = X + P; ℓ.mid = after block ℓ's attention; ℓ.post = after "
                            "its FFN.")
