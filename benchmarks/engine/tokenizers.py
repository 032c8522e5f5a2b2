"""Tokenizer benchmarks: BPE training time and GPT-2 encoding speed, ours beside
references measured in the same run (these machines are noisy: read the ratios).

    python -m benchmarks.engine.tokenizers [--corpus PATH] [--repeat 3]

References: tiktoken (Rust) for encoding, tiktoken's pure-Python educational
trainer (the recount-everything loop, as in minbpe) for training, and
HuggingFace ``tokenizers`` (Rust) when it is installed.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from benchmarks.common import machine, prose
from benchmarks.common import median_seconds as timed
from gptviz.tokenizers import ByteLevelBPE
from gptviz.tokenizers.bpe_train import GPT2_PATTERN
from gptviz.tokenizers.openai import GPT2_FILE, load_encoding


def train_ours(text: str, vocab: int) -> ByteLevelBPE:
    tok = ByteLevelBPE(specials=())
    tok.train(text, vocab)
    return tok


def train_hf(text: str, vocab: int):
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(vocab_size=vocab, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator([text], trainer)
    return tok


def train_educational(text: str, vocab: int):
    from tiktoken._educational import bpe_train

    return bpe_train(text, vocab, GPT2_PATTERN, visualise=None)


def bench_training(text: str, repeat: int) -> None:
    print(f"\n## BPE training ({len(text.encode()) / 1e6:.2f} MB)")
    print("| vocab | ours (s) | HF tokenizers, Rust (s) | our time / HF time |")
    print("|---|---|---|---|")
    for vocab in (512, 1024):
        ours, _ = timed(lambda v=vocab: train_ours(text, v), repeat)
        try:
            hf, _ = timed(lambda v=vocab: train_hf(text, v), repeat)
            print(f"| {vocab} | {ours:.2f} | {hf:.2f} | {ours / hf:.1f}× |")
        except ImportError:
            print(f"| {vocab} | {ours:.2f} | (not installed) | |")
    # The recount loop is far too slow for the whole corpus: compare on a slice.
    piece = text[:50_000]
    slow, ranks = timed(lambda: train_educational(piece, 512), 1)
    fast, tok = timed(lambda: train_ours(piece, 512), repeat)
    print(f"\nOn the first 50 kB, vocab 512: tiktoken's pure-Python educational trainer "
          f"{slow:.1f} s, ours {fast:.3f} s ({slow / fast:.0f}× faster).")
    learned = {t for t, r in ranks.items() if r >= 256}
    ours_learned = {t for t, r in tok.ranks.items() if r >= 256}
    print(f"Tokens learned by both: {len(learned & ours_learned) / len(learned):.1%} "
          "(the two break ties between equal counts differently).")


def bench_encoding(text: str, repeat: int) -> None:
    data_mb = len(text.encode()) / 1e6
    ours = ByteLevelBPE.from_tiktoken_file(GPT2_FILE)
    enc = load_encoding("gpt2")
    assert ours.encode(text) == enc.encode(text, disallowed_special=()), "parity broke"

    def cold() -> list[int]:
        ours._cache.clear()
        return ours.encode(text)

    t_tik, _ = timed(lambda: enc.encode(text, disallowed_special=()), repeat)
    t_cold, _ = timed(cold, repeat)
    t_warm, _ = timed(lambda: ours.encode(text), repeat)
    print(f"\n## Encoding with GPT-2's ranks ({data_mb:.2f} MB, identical ids checked)")
    print("| encoder | MB/s | vs tiktoken |")
    print("|---|---|---|")
    print(f"| tiktoken (Rust) | {data_mb / t_tik:.1f} | 1.00 |")
    print(f"| ours, empty chunk cache | {data_mb / t_cold:.1f} | {t_tik / t_cold:.2f} |")
    print(f"| ours, warm chunk cache | {data_mb / t_warm:.1f} | {t_tik / t_warm:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, default=None)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    path = args.corpus or prose()
    text = path.read_text(encoding="utf-8")
    print(f"# Tokenizer benchmarks on {path.name}\n\n{machine()}")
    bench_training(text, args.repeat)
    bench_encoding(text, args.repeat)


if __name__ == "__main__":
    main()
