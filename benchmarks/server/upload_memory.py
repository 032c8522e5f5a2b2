"""What an upload costs the server's memory: BPE training on an uploaded corpus, and an
uploaded checkpoint zip.

    python benchmarks/upload_memory.py [--mb 4.8] [--vocab 512] [--only NAME ...]

Every case runs in a fresh Python process (one thread) that first imports everything and
builds its input, then measures: **before** is its resident memory (VmRSS) just before
the work, **peak extra** is the high-water mark during the work (VmHWM, reset first)
minus before. The ``bare`` case does no work: it shows what the measurement itself reads.

Corpora are generated with a fixed seed, never stored: random Unicode (code points drawn
uniformly from U+0020..U+10FFFF, nearly every regex chunk distinct: the issue's 4.8 MB
file took 1.87 GB), random lowercase words (many short distinct chunks), and prose
(Tiny Shakespeare, or the bundled corpus). References: tiktoken's pure-Python
educational trainer (on a slice: it recounts everything per merge) and HuggingFace
``tokenizers`` (Rust) when installed.
"""

from __future__ import annotations

import argparse
import io
import json
import random
import subprocess
import sys
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHAKESPEARE = ROOT.parent / "shared" / "data" / "tinyshakespeare.txt"
PROSE = SHAKESPEARE if SHAKESPEARE.exists() else ROOT / "assets" / "corpora" / "mathematics.txt"


def random_unicode(n_bytes: int, seed: int = 0) -> str:
    """Code points uniform in U+0020..U+10FFFF (no surrogates) until ``n_bytes`` of UTF-8."""
    rng, out, size = random.Random(seed), [], 0
    while size < n_bytes:
        cp = rng.randrange(0x20, 0x110000)
        if not 0xD800 <= cp < 0xE000:
            out.append(chr(cp))
            size += 1 if cp < 0x80 else 2 if cp < 0x800 else 3 if cp < 0x10000 else 4
    return "".join(out)


def random_words(n_bytes: int, seed: int = 0) -> str:
    """' ' + 2-6 random lowercase letters, repeated to ``n_bytes``: short, mostly distinct."""
    rng, out, size = random.Random(seed), [], 0
    while size < n_bytes:
        word = " " + "".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(2, 6)))
        out.append(word)
        size += len(word)
    return "".join(out)


def zeros_zip(d_model: int, n_layer: int, vocab: int, context: int) -> bytes:
    """A checkpoint zip whose weights are all zeros, built without allocating them."""
    from gptviz.model import GPTConfig, parameter_counts
    from gptviz.tokenizers import train_tokenizer

    tok = train_tokenizer("bpe", "abcdefgh " * 200, 256 + 4 + 8)
    config = GPTConfig(vocab_size=vocab, context_length=context, d_model=d_model,
                       n_layer=n_layer, n_head=8)
    n = parameter_counts(config)["total"]
    header = json.dumps({"embed.weight": {"dtype": "F32", "shape": [n], "data_offsets":
                                          [0, 4 * n]}}).encode()
    weights = len(header).to_bytes(8, "little") + header + bytes(4 * n)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("config.json", json.dumps(config.to_dict()))
        zf.writestr("tokenizer.json", json.dumps(tok.to_dict()))
        zf.writestr("model.safetensors", weights)
    return buffer.getvalue()


def real_zip(d_model: int, n_layer: int) -> bytes:
    """A valid checkpoint zip near the upload limits (BPE, |V| = 1,028, context 256)."""
    from gptviz.checkpoints.folder import checkpoint_to_zip, initial_model
    from gptviz.model import GPTConfig
    from gptviz.tokenizers import train_tokenizer

    tok = train_tokenizer("bpe", PROSE.read_text(encoding="utf-8")[:200_000], 1028)
    config = GPTConfig(vocab_size=tok.vocab_size, context_length=256, d_model=d_model,
                       n_layer=n_layer, n_head=8)
    return checkpoint_to_zip(initial_model(config, 0), tok, {"steps": 0})


def rss_mb() -> tuple[float, float]:
    """(VmRSS, VmHWM) of this process in MB."""
    with open("/proc/self/status") as f:
        status = f.read()
    return tuple(int(status.split(k + ":")[1].split()[0]) / 1024 for k in ("VmRSS", "VmHWM"))


def case_work(name: str, mb: float, vocab: int):
    """(what the case runs on, a function doing the work and returning a short result)."""
    from gptviz.tokenizers import ByteLevelBPE, TokenizerError, train_tokenizer
    from gptviz.tokenizers.bpe_train import GPT2_PATTERN, TrainLimits

    def bpe(text: str, n: int, pattern: str = "gpt2", limits: TrainLimits | None = None):
        def run() -> str:
            tok = ByteLevelBPE(pattern=pattern)
            tok.limits = limits or tok.limits
            try:
                tok.train(text, n)
            except TokenizerError as exc:
                return f"refused: {str(exc)[:70]}…"
            return f"{len(tok.merges)} merges from {tok.trained_chars / len(text):.0%} of it"
        return run

    n_bytes = int(mb * 1e6)
    if name == "bare":
        return "nothing", lambda: "no work"
    if name.startswith("bpe-"):
        kind, _, rest = name[4:].partition("-")
        text = {"unicode": random_unicode, "words": random_words}.get(
            kind, lambda n: PROSE.read_text(encoding="utf-8"))(n_bytes)
        what = f"{kind} ({len(text.encode()) / 1e6:.1f} MB)"
        if rest == "unbounded":
            big = TrainLimits(10**12, 10**12, 10**12, 10**12)
            return what + f", vocab {vocab}, limits lifted", bpe(text, vocab, limits=big)
        if rest.startswith("vocab"):
            n = int(rest[5:])
            return what + f", vocab {n}", bpe(text, n)
        pattern = rest or "gpt2"
        return what + f", vocab {vocab}, pattern {pattern}", bpe(text, vocab, pattern)
    if name in ("char-unicode", "word-unicode", "word-words"):
        text = (random_words if name == "word-words" else random_unicode)(n_bytes)
        return f"{name[5:]} ({mb} MB), {name[:4]}", lambda: (
            f"|V| = {train_tokenizer(name[:4], text).vocab_size:,}")
    if name == "tiktoken-educational":
        from tiktoken._educational import bpe_train

        text = random_unicode(100_000)
        return ("unicode (0.1 MB), 32 merges",
                lambda: f"{len(bpe_train(text, 256 + 32, GPT2_PATTERN, visualise=None))} ranks")
    if name == "ours-same-slice":
        return "unicode (0.1 MB), 32 merges", bpe(random_unicode(100_000), 256 + 4 + 32)
    if name == "hf-tokenizers":
        try:
            from tokenizers import Tokenizer, models, pre_tokenizers, trainers
        except ImportError:
            return "(not installed)", lambda: "skipped"
        text = random_unicode(n_bytes)

        def hf() -> str:
            tok = Tokenizer(models.BPE())
            tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
            tok.train_from_iterator([text], trainers.BpeTrainer(
                vocab_size=vocab, show_progress=False,
                initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
            return f"|V| = {tok.get_vocab_size():,}"
        return f"unicode ({mb} MB), vocab {vocab}", hf
    if name.startswith("zip-"):
        from gptviz.app.shared.picker import UPLOAD_LIMITS
        from gptviz.checkpoints.folder import CheckpointError, load_checkpoint_zip

        data = (zeros_zip(512, 10, 8192, 512) if name == "zip-zeros-33M"
                else real_zip(256, 3))

        def load() -> str:
            try:
                ckpt = load_checkpoint_zip(data, UPLOAD_LIMITS)
            except CheckpointError as exc:
                return f"refused: {str(exc)[:70]}…"
            return f"loaded: {sum(p.numel() for p in ckpt.model.parameters()):,} parameters"
        return f"a {len(data) / 1e6:.2f} MB zip", load
    raise SystemExit(f"unknown case {name!r}")


CASES = ["bare", "bpe-unicode", "bpe-unicode-none", "bpe-unicode-vocab4096", "bpe-words",
         "bpe-prose-vocab16384", "bpe-prose-none", "bpe-unicode-unbounded", "char-unicode",
         "word-unicode", "word-words", "tiktoken-educational", "ours-same-slice", "hf-tokenizers",
         "zip-zeros-33M", "zip-largest-allowed"]


def child(name: str, mb: float, vocab: int) -> None:
    import gc

    import torch

    torch.set_num_threads(1)
    what, work = case_work(name, mb, vocab)
    gc.collect()
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # VmHWM := VmRSS
    before, _ = rss_mb()
    t0 = time.perf_counter()
    result = work()
    seconds = time.perf_counter() - t0
    print(json.dumps(dict(what=what, result=result, seconds=seconds, before=before,
                          extra=rss_mb()[1] - before)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=float, default=4.8, help="size of the generated corpora")
    parser.add_argument("--vocab", type=int, default=512, help="the Tokenizers page's default")
    parser.add_argument("--only", nargs="*", default=CASES, choices=CASES)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args.child, args.mb, args.vocab)
    print(f"# Upload memory, Python {sys.version.split()[0]}, one process per case\n")
    print("| case | input | result | s | before (MB) | peak extra (MB) |")
    print("|---|---|---|---|---|---|")
    for name in args.only:
        out = subprocess.run([sys.executable, "-m", "benchmarks.server.upload_memory", "--child",
                              name, "--mb", str(args.mb), "--vocab", str(args.vocab)],
                             capture_output=True, text=True, cwd=ROOT)
        if out.returncode:
            print(f"| {name} | | failed: {out.stderr.strip().splitlines()[-1]} | | | |")
            continue
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"| {name} | {r['what']} | {r['result']} | {r['seconds']:.1f} | "
              f"{r['before']:.0f} | {r['extra']:.0f} |", flush=True)


if __name__ == "__main__":
    main()
