"""The recipe for the bundled models in ``assets/models/``: rerun it to reproduce them.

    python scripts/make_models.py                 # all three (about 50 min on one CPU core)
    python scripts/make_models.py --only mathematics-char

Each model is trained by the project's own CLI (``python -m gptviz.train``) with
the arguments below and a fixed seed. The CLI holds out the last 10 % of the corpus
(the tokenizer never sees it) and keeps the weights of the evaluation with the lowest
validation loss (``--keep best``). The card is then completed with the model's
configuration, its held-out loss per token and per character, the standard induction
test (``gptviz.analysis.induction``) and the command that made it.
"""

from __future__ import annotations

import argparse
import json
import math
import string
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gptviz.analysis.induction import PROTOCOL, standard_induction  # noqa: E402
from gptviz.checkpoints.folder import load_checkpoint  # noqa: E402
from gptviz.data import induction_corpus  # noqa: E402
from gptviz.train.__main__ import main as train_main  # noqa: E402

MODELS = ROOT / "assets" / "models"
CORPORA = ROOT / "assets" / "corpora"
MATH = str(CORPORA / "mathematics.txt")
INDUCTION = CORPORA / "induction.txt"

COMMON = ["--activation", "gelu", "--positional", "learned", "--seed", "1337",
          "--warmup", "100", "--grad-clip", "1.0", "--keep", "best", "--snapshots-mb", "2",
          "--quiet"]
RECIPES: dict[str, list[str]] = {
    # (a) characters: 4 layers x 4 heads, d = 128 (nanoGPT's baby GPT, longer context).
    # 4000 steps: at 2000 its validation loss was still falling (1.51 -> 1.49 over 250 steps);
    # the best evaluation is kept (step 3750 of the bundled run)
    "mathematics-char": [
        "--corpus", MATH, "--tokenizer", "char", "--layers", "4", "--heads", "4",
        "--d-model", "128", "--context-length", "128", "--batch-size", "16", "--steps", "4000",
        "--lr", "3e-3", "--min-lr", "3e-4", "--dropout", "0.1", "--eval-interval", "250"],
    # (b) byte-level BPE, |V| = 1024: same body, tokens are word pieces. 90k tokens are
    # few for 0.9M weights: more dropout, and the best evaluation is kept (it over-fits
    # after ~750 steps)
    "mathematics-bpe": [
        "--corpus", MATH, "--tokenizer", "bpe", "--vocab-size", "1024", "--layers", "4",
        "--heads", "4", "--d-model", "128", "--context-length", "64", "--batch-size", "32",
        "--steps", "1500", "--lr", "3e-3", "--min-lr", "3e-4", "--dropout", "0.2",
        "--eval-interval", "100"],
    # (c) 2 layers on repeated random strings of varying length, "r|r" and "rr" mixed:
    # induction heads form (with fixed-length lines a head that looks a fixed distance
    # back would do), and the separator-free half is the standard test's own format.
    "induction-2layer": [
        "--corpus", str(INDUCTION), "--tokenizer", "char", "--layers", "2", "--heads", "4",
        "--d-model", "64", "--context-length", "64", "--batch-size", "32", "--steps", "8000",
        "--lr", "1e-3", "--min-lr", "1e-4", "--dropout", "0.0", "--eval-interval", "500"],
}
INDUCTION_ALPHABET = string.ascii_letters + string.digits


def make(name: str, models: Path = MODELS) -> dict:
    if name == "induction-2layer":
        INDUCTION.write_text(induction_corpus(
            n_lines=12000, length=5, max_length=24, seed=0, alphabet=INDUCTION_ALPHABET,
            separators=("|", "")), encoding="utf-8")
    out = models / name
    t0 = time.time()
    code = train_main([*RECIPES[name], *COMMON, "--out", str(out)])
    if code != 0:
        raise SystemExit(f"training {name} failed (exit {code})")
    card_path = out / "card.json"
    card = json.loads(card_path.read_text())
    config = json.loads((out / "config.json").read_text())
    evals = card["evals"]
    ckpt = load_checkpoint(out)
    card["induction"] = {"protocol": PROTOCOL, "results": [
        {"length": r.length, "best_layer": r.best[0], "best_head": r.best[1],
         "score": round(r.best[2], 4), "copy_accuracy": round(r.copy_accuracy, 4)}
        for r in standard_induction(ckpt.model, ckpt.tokenizer)]}
    card.update({
        "name": name,
        "model_config": config,
        "final_train_loss": evals[-1]["train_loss"],
        "final_val_perplexity": math.exp(card["final_val_loss"]),
        "kept_val_perplexity": math.exp(card["kept_val_loss"]),
        "wall_time_s": round(time.time() - t0, 1),
        "recipe": f"python scripts/make_models.py --only {name}",
    })
    card_path.write_text(json.dumps(card, indent=1))
    return card


def main() -> None:
    parser = argparse.ArgumentParser(description="Train the bundled models.")
    parser.add_argument("--only", choices=list(RECIPES), action="append")
    parser.add_argument("--out-dir", type=Path, default=MODELS,
                        help=f"folder to write the models into (default {MODELS})")
    args = parser.parse_args()
    for name in args.only or list(RECIPES):
        card = make(name, args.out_dir)
        held = card["held_out"]
        print(f"{name}: held-out {held['nats_per_token']:.3f} nats/token, "
              f"{held['nats_per_char']:.3f} nats/char (step {card['kept_step']}); induction "
              f"{card['induction']['results']} in {card['wall_time_s']} s")


if __name__ == "__main__":
    main()
