"""The Training page's time estimate against the run it estimates, per preset, in one run.

For each preset (or those named), on the bundled mathematics corpus with the preset's
tokenizer: ``estimate_run_seconds`` (a few timed steps of a throwaway copy), then the whole
run as the page's background job makes it (one torch thread, an evaluation and an 80-token
sample every eval interval). The ratio estimate / actual is the result; the page promises
it within ±25 %.

    python -m benchmarks.engine.train_estimate [--preset "30-second demo"]
"""

from __future__ import annotations

import argparse
import time

import torch

from benchmarks.common import machine
from gptviz.data import read_corpus
from gptviz.generation.sampling import generate
from gptviz.tokenizers import CharTokenizer
from gptviz.train.plan import PRESETS, run_config
from gptviz.train.timing import estimate_run_seconds
from gptviz.train.trainer import Trainer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", action="append", choices=list(PRESETS),
                        help="a preset to run (repeat for several; default: the first two)")
    args = parser.parse_args()
    names = args.preset or list(PRESETS)[:2]
    print(machine())
    text = read_corpus("mathematics")
    tok = CharTokenizer()
    tok.train(text)
    ids = torch.tensor(tok.encode(text))
    print(f"{'preset':<18} {'estimate s':>11} {'actual s':>9} {'ratio':>6}")
    for name in names:
        run = run_config(PRESETS[name], tok.vocab_size, "float32")
        t0 = time.perf_counter()
        estimate = estimate_run_seconds(run)
        probe_s = time.perf_counter() - t0
        torch.set_num_threads(1)
        held: list[Trainer] = []  # the sample is drawn from the model being trained
        trainer = Trainer(run, ids, on_eval=lambda _, held=held: generate(
            held[0].model, [0], 80, temperature=0.8, seed=0))
        held.append(trainer)
        t0 = time.perf_counter()
        trainer.train()
        actual = time.perf_counter() - t0
        print(f"{name:<18} {estimate:>11.1f} {actual:>9.1f} {estimate / actual:>6.2f}"
              f"   (timing the estimate took {probe_s:.2f} s)")


if __name__ == "__main__":
    main()
