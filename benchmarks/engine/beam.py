"""Beam search speed on the default bundled model: widths 1, 2, 4 and 8 writing 50 tokens,
beside greedy ``gptviz.generation.sampling.generate`` writing the same 50 tokens, in one run.

    python -m benchmarks.engine.beam --threads 1           # the engine
    python -m benchmarks.engine.beam --threads 1 --page    # + the page's two new views, warm

The target (issue 15) is width 8 for 50 tokens in at most 2 s. The k beams run as one
batch, one forward pass per step over a KV cache whose rows follow the surviving beams;
the ratio to greedy says what the k-fold batch costs on this machine (the absolute times
move with the machine's load, the ratios much less).

``--page`` also times a warm rerun of the Generation page's "Branches" and "Beam search"
views under AppTest (the whole script, as the server runs it; target <= 300 ms), after 20
generated tokens and one branch; no run may raise.
"""

from __future__ import annotations

import argparse

import torch

from benchmarks.common import machine, median_seconds
from gptviz.app.shared.inputs import example_prompt
from gptviz.checkpoints.folder import DEFAULT_MODEL, bundled_models, load_checkpoint
from gptviz.generation.beam import beam_search
from gptviz.generation.sampling import generate

TARGET_S = 2.0  # width 8, 50 tokens


def timed(fn, reps: int) -> float:
    """Median seconds over ``reps`` runs, after one warm-up run."""
    return median_seconds(fn, reps, warmup=1)[0]


def page_views(reps: int) -> None:
    """Median warm rerun (ms) of the page on each new view (``benchmarks.common.warm_runs``)."""
    from benchmarks.common import warm_runs
    from tests.helpers import run_page

    at = run_page("generation")
    at.number_input(key="gen_n").set_value(20).run()
    at.button(key="gen_run").click().run()
    at.session_state["view"] = "Branches"
    at.run()
    at.select_slider(key="gen_step").set_value(10).run()
    at.button(key="gen_branch").click().run()  # a second branch at step 10
    for view in ("Branches", "Beam search"):
        at.session_state["view"] = view  # its cold run computes and caches the search
        cold, ms = warm_runs({view: at}, reps)[view]
        verdict = "met" if ms <= 300 else "MISSED"
        print(f"{f'page rerun, view {view!r}':32s} {ms:7.0f} ms warm (target <= 300 ms: "
              f"{verdict}); first run on the view {cold:.2f} s")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default=DEFAULT_MODEL)
    p.add_argument("--tokens", type=int, default=50)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--page", action="store_true", help="also time the page's views (AppTest)")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    ckpt = load_checkpoint(bundled_models()[args.model])
    model, n = ckpt.model.eval(), args.tokens
    prompt = ckpt.tokenizer.encode(example_prompt(ckpt))
    c = model.config
    print(f"{machine()}\nmodel {args.model} "
          f"(|V| = {c.vocab_size}, N = {c.context_length}, d = {c.d_model}, "
          f"{c.n_layer} layers), prompt {len(prompt)} tokens, {n} new tokens")
    greedy = timed(lambda: generate(model, prompt, n, temperature=0), args.reps)
    print(f"{'greedy generate (KV cache)':32s} {greedy:7.3f} s   1.00 x greedy")
    for width in (1, 2, 4, 8):
        s = timed(lambda w=width: beam_search(model, prompt, n, w), args.reps)
        verdict = "met" if s <= TARGET_S else "MISSED"
        mark = f"  (target <= {TARGET_S:.1f} s: {verdict})" if width == 8 else ""
        print(f"{f'beam search, width {width}':32s} {s:7.3f} s {s / greedy:6.2f} x greedy{mark}")
    assert beam_search(model, prompt, n, 1).best == generate(model, prompt, n, temperature=0)
    print("width 1 wrote exactly greedy's text")
    if args.page:
        page_views(args.reps)


if __name__ == "__main__":
    main()
