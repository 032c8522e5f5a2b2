"""Load time of each bundled model (issue: the default loads in <= 1 s).

    python -m benchmarks.engine.models [--repeat 5]

A load reads the four files, rebuilds the tokenizer (BPE: its vocabulary from
the merges) and the model, and checks every tensor's shape.
"""

from __future__ import annotations

import argparse

from benchmarks.common import machine, median_seconds
from gptviz.checkpoints.folder import DEFAULT_MODEL, bundled_models, load_checkpoint


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"{machine()}\n")
    print("| model | weights + card (MB) | snapshots (MB) | load, median (s) | "
          "held-out nats/token | nats/char |")
    print("|---|---|---|---|---|---|")
    for name, folder in bundled_models().items():
        seconds, ckpt = median_seconds(lambda f=folder: load_checkpoint(f), args.repeat)
        sizes = {f.name: f.stat().st_size / 1e6 for f in folder.iterdir()}
        snaps = sizes.pop("snapshots.safetensors", 0.0)
        star = " (default)" if name == DEFAULT_MODEL else ""
        held = ckpt.card.get("held_out", {})
        print(f"| {name}{star} | {sum(sizes.values()):.1f} | {snaps:.1f} | "
              f"{seconds:.3f} | {held.get('nats_per_token', float('nan')):.3f} "
              f"| {held.get('nats_per_char', float('nan')):.3f} |")


if __name__ == "__main__":
    main()
