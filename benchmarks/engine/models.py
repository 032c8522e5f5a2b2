"""Load time of each bundled model (issue: the default loads in <= 1 s).

    python benchmarks/models.py [--repeat 5]

A load reads the four files, rebuilds the tokenizer (BPE: its vocabulary from
the merges) and the model, and checks every tensor's shape.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gptviz.checkpoints.folder import (
    DEFAULT_MODEL,
    bundled_models,  # noqa: E402
    load_checkpoint,  # noqa: E402
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print("| model | weights + card (MB) | snapshots (MB) | load, median (s) | "
          "held-out nats/token | nats/char |")
    print("|---|---|---|---|---|---|")
    for name, folder in bundled_models().items():
        times = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            ckpt = load_checkpoint(folder)
            times.append(time.perf_counter() - t0)
        sizes = {f.name: f.stat().st_size / 1e6 for f in folder.iterdir()}
        snaps = sizes.pop("snapshots.safetensors", 0.0)
        star = " (default)" if name == DEFAULT_MODEL else ""
        held = ckpt.card.get("held_out", {})
        print(f"| {name}{star} | {sum(sizes.values()):.1f} | {snaps:.1f} | "
              f"{statistics.median(times):.3f} | {held.get('nats_per_token', float('nan')):.3f} "
              f"| {held.get('nats_per_char', float('nan')):.3f} |")


if __name__ == "__main__":
    main()
