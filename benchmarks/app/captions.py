"""What issue 39's two new computations cost, each beside the computation it checks, in one run.

    python -m benchmarks.app.captions [--reps 3] [--gpt2]

1. The exact search for the most probable n-token text (``gptviz.generation.exact``) beside
   the beam search whose score prunes it: the default model and prompt, width 3 (the page's
   default), n = 4, 8, 12 (the page's default length) and 30 (where the search reaches its
   cap and says "not checked"). The ratio exact / beam is the result.
2. The Learning microscope (``gptviz.analysis.learning.microscope``, every η of the page's
   slider) with the real ΔL in float64 where float32's rounding could show, beside the same
   microscope with that disabled (``PRECISE = 0``): the default window and position of the
   two mathematics models. The ratio is the result.

With ``--gpt2`` both also run on a randomly initialised GPT-2-small-shaped model (124M
parameters; a 32-token window, as the Learning page gives a model this size, and an 8-token
prompt for the search), the largest the app serves.
"""

from __future__ import annotations

import argparse

import torch

from benchmarks.common import median_seconds
from gptviz.analysis import learning
from gptviz.app.learning.controls import median_position, window_length
from gptviz.app.learning.step import ETAS
from gptviz.app.shared.inputs import example_prompt
from gptviz.checkpoints.folder import DEFAULT_MODEL, bundled_models, load_checkpoint
from gptviz.data import read_corpus
from gptviz.generation import exact
from gptviz.generation.beam import beam_search
from gptviz.model import GPT, GPTConfig


def search(model: GPT, ids: list[int], name: str, lengths: list[int], reps: int) -> None:
    print(f"\n{name}: beam search (k = 3) and the exact search it prunes, {len(ids)}-token "
          "prompt")
    print(f"{'n':>4} {'beam (s)':>10} {'exact (s)':>10} {'exact/beam':>11}  result")
    for n in lengths:
        beam_s, beams = median_seconds(lambda n=n: beam_search(model, ids, n, 3), reps,
                                       warmup=1)
        known, score = beams.tokens(n - 1, 0), beams.steps[-1].scores[0]
        exact_s, found = median_seconds(lambda n=n, k=known, s=score: exact.most_probable(
            model, ids, n, k, s), reps, warmup=1)
        said = (f"not checked: {found.reason}" if not found.checked else
                f"checked, {found.expanded:,} prefixes run; "
                + ("beam missed y* by " + f"{found.score - score:.3f}"
                   if found.score - score > 5e-4 else "the beam's text is y*"))
        print(f"{n:>4} {beam_s:>10.3f} {exact_s:>10.3f} {exact_s / beam_s:>11.1f}  {said}")


def microscopes(model: GPT, ids: list[int], name: str, reps: int) -> None:
    window = learning.take_window(ids, 0, window_length(model))
    position = median_position(learning.window_losses(model, window))
    etas = ETAS[1:]
    precise = learning.PRECISE
    try:
        learning.PRECISE = 0.0  # never float64: the page before issue 39
        before_s, m0 = median_seconds(
            lambda: learning.microscope(model, window, position, etas), reps, warmup=1)
    finally:
        learning.PRECISE = precise
    after_s, m = median_seconds(
        lambda: learning.microscope(model, window, position, etas), reps, warmup=1)
    n64 = sum(s.precise for s in m.steps)
    assert not any(s.precise for s in m0.steps)
    print(f"{name}: window {len(window.x)}, t = {position}; float32 only {before_s:.3f} s, "
          f"with float64 ΔL {after_s:.3f} s ({after_s / before_s:.2f}×; {n64} of "
          f"{len(etas)} η in float64)")


def gpt2_shape() -> GPT:
    torch.manual_seed(0)
    return GPT(GPTConfig(vocab_size=50257, context_length=1024, d_model=768, n_layer=12,
                         n_head=12)).eval()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--gpt2", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"threads {args.threads}, reps {args.reps} (median after a warm-up run)")

    ckpt = load_checkpoint(bundled_models()[DEFAULT_MODEL])
    ids = ckpt.tokenizer.encode(example_prompt(ckpt))[-ckpt.config.context_length:]
    search(ckpt.model.eval(), ids, DEFAULT_MODEL, [4, 8, 12, 30], args.reps)

    print("\nLearning microscope, every η of the slider")
    text = read_corpus("mathematics")[:20000]
    for name in ("mathematics-bpe", "mathematics-char"):
        c = load_checkpoint(bundled_models()[name])
        microscopes(c.model.eval(), c.tokenizer.encode(text), name, args.reps)

    if args.gpt2:
        model = gpt2_shape()
        prompt = [464, 3139, 18558, 305, 1917, 7893, 543, 3488]  # 8 ids
        search(model, prompt, "GPT-2-small shape (random weights)", [2, 4], 1)
        window_ids = torch.randint(0, 50257, (64,), generator=torch.Generator().manual_seed(1))
        microscopes(model, window_ids.tolist(), "GPT-2-small shape (random weights)", 1)


if __name__ == "__main__":
    main()
