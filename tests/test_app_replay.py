"""AppTest of the Learning page's Training replay: the slider over a checkpoint's snapshots,
the embeddings on the final model's PCA axes (against a direct torch projection), the loss
marker, the attention grid of a snapshot, and a model without snapshots."""

from __future__ import annotations

import json

import numpy as np
import torch

from gptviz.app.attention.figures import grid_tile
from gptviz.app.learning.controls import split_encode
from gptviz.checkpoints.folder import (
    bundled_models,
    checkpoint_to_zip,
    initial_model,
    load_checkpoint,
)
from gptviz.data import read_corpus
from gptviz.model.names import act_name
from tests.helpers import (
    app_test,
    array_of,
    checkpoint_uploader,
    figure,
    figures,
    rerun,
    run_page,
    text_blocks,
    texts,
    tiny_gpt,
    z_of,
)

REPLAY = "Training replay"


def direct_projection(final_E: torch.Tensor, E: torch.Tensor, tokenizer) -> np.ndarray:
    """E's rows on the top two principal axes of final_E (by SVD; largest loading > 0),
    both without the four special tokens training never feeds (the page leaves them out)."""
    unused = {tokenizer.special_tokens[t] for t in ("<|BOS|>", "<|EOS|>", "<|UNK|>", "<|PAD|>")
              if t in tokenizer.special_tokens}
    keep = [i for i in range(final_E.shape[0]) if i not in unused]
    final_E, E = final_E[keep], E[keep]
    centred = final_E.double() - final_E.double().mean(0)
    _, _, vh = torch.linalg.svd(centred, full_matrices=False)
    axes = vh[:2].T  # (d, 2)
    axes *= torch.sign(axes[axes.abs().argmax(0), torch.arange(2)])
    return ((E.double() - final_E.double().mean(0)) @ axes).numpy()


def points(at, step: int) -> tuple[np.ndarray, dict]:
    fig = figure(at, f"Embeddings E at step {step} ")
    trace = fig["data"][0]
    return np.stack([array_of(trace["x"]), array_of(trace["y"])], 1), fig["layout"]


def test_the_slider_replays_the_bundled_snapshot_on_fixed_axes():
    ckpt = load_checkpoint(bundled_models()["mathematics-bpe"])
    assert ckpt.snapshots and ckpt.snapshots.steps == [800]
    at = run_page("learning", model="mathematics-bpe", view=REPLAY)
    slider = at.select_slider(key="replay_step")
    assert list(slider.options) == ["0", "800", "1,500"] and slider.value == 1500
    final_xy, final_layout = points(at, 1500)
    final_E = ckpt.model.embed.weight.detach()
    np.testing.assert_allclose(final_xy, direct_projection(final_E, final_E, ckpt.tokenizer),
                               atol=2e-4)

    slider.set_value(800)
    rerun(at)
    xy, layout = points(at, 800)
    snap_E = ckpt.snapshots.states[0]["embed.weight"].float()
    np.testing.assert_allclose(xy, direct_projection(final_E, snap_E, ckpt.tokenizer), atol=2e-4)
    assert np.abs(xy - final_xy).max() > 0.1  # the embeddings did move between the steps
    for axis in ("xaxis", "yaxis"):  # the same axes at every step
        assert layout[axis]["range"] == final_layout[axis]["range"]
    assert layout["xaxis"]["range"][0] <= xy[:, 0].min() <= xy[:, 0].max() <= \
        layout["xaxis"]["range"][1]
    loss = figure(at, "Loss over training")
    assert [s["x0"] for s in loss["layout"]["shapes"]] == [800]
    induction = figure(at, "Induction score over training")["layout"]
    assert induction["shapes"][0]["x0"] == 800
    assert induction["yaxis"]["range"][0] == 0 and induction["yaxis"]["range"][1] >= 1  # 0 … 1

    # the grid's first head is the snapshot's layer-0 head-0 pattern on the page's window
    start, n = at.number_input(key="start").value, ckpt.config.context_length
    ids, _ = split_encode(ckpt, read_corpus("mathematics"), True)
    window = ids[start:start + n].tolist()
    snap = ckpt.snapshots.model_at(0, ckpt.model)
    with torch.no_grad():
        _, cache = snap.run_with_cache(window, names_filter=[act_name("pattern", 0)])
    spec = next(f for f in figures(at) if "L0 H0" in json.dumps(f))
    z = grid_tile(z_of(spec["data"][0]), spec["layout"]["meta"], 0, 0)
    np.testing.assert_allclose(z, cache[act_name("pattern", 0)][0, 0].numpy(), atol=1e-5)
    assert "Step 800**: a snapshot kept during training" in texts(at, "markdown")


def test_a_model_without_snapshots_says_so_and_compares_start_and_end():
    at = app_test()
    at.switch_page("app_pages/learning.py")
    rerun(at)
    tok = load_checkpoint(bundled_models()["mathematics-char"]).tokenizer
    mine = tiny_gpt(tok.vocab_size, context_length=16)
    evals = [{"step": 0, "train_loss": None, "val_loss": 4.0},
             {"step": 50, "train_loss": 3.0, "val_loss": 3.2},
             {"step": 100, "train_loss": 2.5, "val_loss": 2.9}]
    card = {"corpus": "my-notes.txt", "steps": 100, "evals": evals,
            "train_config": {"seed": 5}}
    checkpoint_uploader(at).set_value(
        ("mine.zip", checkpoint_to_zip(mine, tok, card), "application/zip"))
    rerun(at)
    at.session_state["view"] = REPLAY
    rerun(at)
    assert at.pills(key="model").value == "mine"
    assert "has no snapshots" in texts(at, "info") and "Training" in texts(at, "info")
    assert "no induction score" in texts(at, "info")
    slider = at.select_slider(key="replay_step")
    assert list(slider.options) == ["0", "100"]
    slider.set_value(0)
    rerun(at)
    assert figure(at, "Loss over training")["layout"]["shapes"][0]["x0"] == 0
    xy, _ = points(at, 0)
    start_E = initial_model(mine.config, 5).embed.weight.detach()
    np.testing.assert_allclose(xy, direct_projection(mine.embed.weight.detach(), start_E, tok),
                               atol=2e-4)


def test_the_induction_model_s_sample_starts_inside_a_repeat_and_copies_it():
    first = read_corpus("induction").split("\n")[0].split("|")[0]  # the first line is X|X
    at = run_page("learning", model="induction-2layer", view=REPLAY)
    code = text_blocks(at)[0]
    assert code.startswith(f"{first}|{first[0]} ⟶ {first[1:]}")  # the rest of X, copied
    assert "up to the first token of a stretch the window repeats" in texts(at, "markdown")


def test_the_window_tokens_labels_never_pile_up_at_step_0():
    """A review found the labels of the window's tokens piled into one blot at step 0, where
    the rows of E sit in a small cloud: a label is written only where it meets no other
    label and no point, and the title counts those left to hover."""
    from gptviz.app.embeddings.figures import MIN_PLOT_W, TEXT_SIZE, label_box, to_px
    from gptviz.app.learning.replay import EMBED_H, MARGIN
    from gptviz.app.shared.heatmaps import label_px

    at = run_page("learning", model="mathematics-bpe", view=REPLAY)
    at.select_slider(key="replay_step").set_value(0)
    rerun(at)
    fig = figure(at, "Embeddings E at step 0 ")
    tokens = fig["data"][1]
    xy = np.stack([array_of(tokens["x"]), array_of(tokens["y"])], 1)
    ranges = fig["layout"]["xaxis"]["range"], fig["layout"]["yaxis"]["range"]
    px = to_px(xy, *ranges, width=MIN_PLOT_W, height=EMBED_H - MARGIN["t"] - MARGIN["b"])
    boxes = [label_box(x, y, label_px([t], TEXT_SIZE), where) for (x, y), t, where in zip(
        px, tokens["text"], tokens["textposition"], strict=True) if t]
    assert boxes, "some of the window's tokens are labelled"
    for i, a in enumerate(boxes):
        for b in boxes[:i]:
            assert not (a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3])
    hidden = sum(not t for t in tokens["text"])
    if hidden:
        assert f"({len(boxes)} of {len(boxes) + hidden} tokens labelled)" in \
            fig["layout"]["title"]["text"]
    assert list(tokens["customdata"]) and all(tokens["customdata"])  # hover names every one
