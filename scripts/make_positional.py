"""The recipe for ``assets/positional/``: the four runs of the Positional page's comparison.

    python scripts/make_positional.py            # four runs, about a minute on one CPU core

The same small GPT (2 layers, d = 64, context 32, characters of mathematics.txt) is trained
four times with ``gptviz.analysis.compare_positions.Recipe``: sinusoidal, learned, no and rotary
positions, the same seed and batches. Each run is saved with its validation curve and its
loss per position on texts 4 x its context (see ``gptviz.analysis.compare_positions``). These are
not picker models: they live outside assets/models.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gptviz.analysis.compare_positions import (  # noqa: E402
    FOLDER,
    KINDS,
    Recipe,
    load_data,
    save_run,
    train_kind,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-dir", type=Path, default=FOLDER,
                        help=f"folder to write the four runs into (default {FOLDER})")
    args = parser.parse_args()
    torch.set_num_threads(1)  # "each run <= 20 s on one CPU core"
    recipe = Recipe()
    t0, cpu0 = time.time(), time.process_time()
    data = load_data(recipe)
    for kind in KINDS:
        t = time.time()
        ckpt = train_kind(kind, recipe, data)
        folder = save_run(ckpt, args.out_dir)
        card = ckpt.card
        size = sum(f.stat().st_size for f in folder.iterdir())
        long = {s: sum(v[recipe.context_length:]) / (len(v) - recipe.context_length)
                for s, v in card["long"]["losses"].items()}
        print(f"{kind:10s} val {card['evals'][-1]['val_loss']:.3f} (saved "
              f"{card['val_loss_as_saved']:.3f}); past N: "
              + ", ".join(f"{s} {v:.3f}" for s, v in long.items())
              + f"; train {card['train_cpu_s']:.1f} s CPU, {time.time() - t:.1f} s wall; "
              f"{size / 1e3:.0f} KB", flush=True)
    print(f"total {time.process_time() - cpu0:.1f} s CPU, {time.time() - t0:.1f} s wall")


if __name__ == "__main__":
    main()
