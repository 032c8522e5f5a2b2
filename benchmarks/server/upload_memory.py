"""What an upload costs the server's memory: BPE training on an uploaded corpus, and an
uploaded checkpoint zip.

    python -m benchmarks.server.upload_memory [--mb 4.8] [--vocab 512] [--only NAME ...]
    python -m benchmarks.server.upload_memory --attacks [--repeat 3] [--before OLD]

Every case runs in a fresh Python process (one thread) that first imports everything and
builds its input, then measures: **before** is its resident memory (VmRSS) just before
the work (the heap its input's building freed given back first, ``malloc_trim``), **peak
extra** is the high-water mark during the work (VmHWM, reset first) minus before. The
``bare`` case does no work: it shows what the measurement itself reads.

Corpora are generated with a fixed seed, never stored: random Unicode (code points drawn
uniformly from U+0020..U+10FFFF, nearly every regex chunk distinct: the issue's 4.8 MB
file took 1.87 GB), random lowercase words (many short distinct chunks), and prose
(Tiny Shakespeare, or the bundled corpus). References: tiktoken's pure-Python
educational trainer (on a slice: it recounts everything per merge) and HuggingFace
``tokenizers`` (Rust) when installed.

``--attacks``: what loading any upload the limits allow costs (``UPLOAD_LIMITS``; the
budget of issue 37: at most +150 MB above the process's baseline, and at most 3x the time
of loading the largest valid upload, measured in the same run). The reference is a valid
zip at the upload limit (20 MB: a 2.7M-parameter model, a BPE tokenizer, one snapshot);
the attacks are every crafted file we could build within the limits: bombs of every
method (deflate within the limits and lying about its size, stored, bzip2, LZMA), maximal
JSON (the issue's escapes, the most objects, strings, merges and symbols 2 MB parse to,
100,000 levels deep), maximal safetensors headers, the most layers, NaN weights. Each zip
is built once; each load runs in a fresh process given CPU_LIMIT seconds of CPU, the time
figure is its CPU time (one thread; the machine's other load stays out of it).
``--before OLD`` also loads every zip with an older loader (``git archive <commit> gptviz
| tar -x -C OLD``), what the page met before.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import os
import random
import statistics
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


# ---- uploads under attack (--attacks) ---------------------------------------------------

def _prose_bpe(vocab: int):
    from gptviz.tokenizers import train_tokenizer

    return train_tokenizer("bpe", PROSE.read_text(encoding="utf-8")[:200_000], vocab)


def _zip(files: dict[str, bytes], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", method) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return buffer.getvalue()


def _files(config, tok, card: dict | None = None, snapshots: int = 0) -> dict[str, bytes]:
    """The checkpoint's files for ``config`` (seeded weights) and ``tok``."""
    from gptviz.checkpoints.folder import checkpoint_files, initial_model
    from gptviz.checkpoints.snapshots import Snapshots

    model = initial_model(config, 0)
    snaps = Snapshots()
    for step in range(1, snapshots + 1):
        snaps.add(step, model)
    return checkpoint_files(model, tok, card or {"steps": snapshots}, snaps or None)


def _merges_json(most: int, limit: int) -> tuple[bytes, int]:
    """A BPE tokenizer.json of at most ``most`` merges and ``limit`` bytes, each merge new
    (pairs of bytes, then of those and a byte): (its text, its number of merges)."""
    head, merges = b'{"type": "bpe", "pattern": "gpt2", "special_ids": {}, "merges": [', []
    size = len(head) + 2
    while len(merges) < most:
        k = len(merges)
        a, b = (k % 256, k // 256 % 256) if k < 65_536 else (256 + k % 65_536, k // 65_536)
        merges.append(b"[%d,%d,%d]" % (a, b, 256 + k))
        if (size := size + len(merges[-1]) + 1) > limit:
            merges.pop()
            break
    return head + b",".join(merges) + b"]}", len(merges)


def _over(config) -> dict[str, bytes]:
    """Files whose config.json is ``config`` and whose weights are a small model's: for
    uploads refused at their tokenizer, before the weights are read."""
    from dataclasses import replace

    files = _files(replace(config, vocab_size=260), _prose_bpe(260))
    return files | {"config.json": json.dumps(config.to_dict()).encode()}


def _safetensors_of_zeros(config, dtypes: list[str], metadata: dict | None = None) -> bytes:
    """A safetensors file naming every tensor of ``config``, once per dtype in ``dtypes``
    (as the snapshots file names them, "k/name", when there are several), its numbers zeros:
    built without allocating a tensor."""
    from gptviz.checkpoints.snapshots import stored_shapes

    size = {"F64": 8, "F32": 4, "F16": 2}
    header, at = {"__metadata__": metadata or {"format": "pt"}}, 0
    for k, dtype in enumerate(dtypes):
        for name, shape in stored_shapes(config).items():
            n = size[dtype] * math.prod(shape)
            header[name if metadata is None else f"{k}/{name}"] = {
                "dtype": dtype, "shape": list(shape), "data_offsets": [at, at + n]}
            at += n
    text = json.dumps(header).encode()
    return len(text).to_bytes(8, "little") + text + bytes(at)


def _streamed(name: str, method: int, unpacked: int, declared: int, others: dict) -> bytes:
    """A zip of ``others`` and a member ``name`` of ``unpacked`` zero bytes, written a
    megabyte at a time with ``method``, whose listing then declares ``declared`` bytes."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for other, data in others.items():
            zf.writestr(other, data)
        info = zipfile.ZipInfo(name)
        info.compress_type = method
        with zf.open(info, "w", force_zip64=False) as f:
            for _ in range(unpacked >> 20):
                f.write(bytes(1 << 20))
    data = bytearray(buffer.getvalue())
    at = data.rfind(b"PK\x01\x02")  # the listing's entry of the last member written
    assert data[at + 46:at + 46 + len(name)] == name.encode()
    data[at + 24:at + 28] = declared.to_bytes(4, "little")
    return bytes(data)


# The JSON files filled up to the limit with one unit: what each is, the file, its head, the
# unit repeated and its tail.
JSON_FILLS = {
    "json-escapes": ("the issue's config.json: '\"' then '\\\"' (2 MB)", "config.json", b'"',
                     b'\\"', b""),
    "json-deep": ("card.json 2 MB of '[': nested 2M deep", "card.json", b"", b"[", b""),
    "json-objects": ("card.json: 2 MB of {} (666k objects, kept)", "card.json", b'{"x": [',
                     b"{},", b"{}]}"),
    "json-strings": ("card.json: 2 MB of \"\" (666k strings, kept)", "card.json", b'{"x": [',
                     b'"",', b'""]}'),
}


def attack_zip(name: str) -> tuple[str, bytes]:
    """(what it is, the zip's bytes) of one case of --attacks."""
    from gptviz.app.shared.picker import UPLOAD_LIMITS as LIMITS
    from gptviz.model import GPTConfig
    from gptviz.tokenizers import Tokenizer

    tok = _prose_bpe(1028)
    big = GPTConfig(vocab_size=1028, context_length=256, d_model=256, n_layer=3, n_head=8)
    small = GPTConfig(vocab_size=1028, context_length=64, d_model=32, n_layer=1, n_head=2)
    base = _files(small, tok)
    limit = LIMITS.json_bytes

    def fill(head: bytes, unit: bytes, tail: bytes) -> bytes:  # the most units under limit
        return head + unit * ((limit - len(head) - len(tail)) // len(unit)) + tail

    if name in ("valid-largest", "valid-stored"):
        from gptviz.tokenizers.base import UNTRUSTED_IDS

        text, n = _merges_json(UNTRUSTED_IDS - 260, limit)
        widest = GPTConfig(vocab_size=260 + n, context_length=256, d_model=40, n_layer=1,
                           n_head=4)
        files = _files(widest, Tokenizer.from_json_dict(json.loads(text)), {"steps": 1}, 1)
        method = zipfile.ZIP_STORED if name == "valid-stored" else zipfile.ZIP_DEFLATED
        return (f"valid, the most of everything: |V| = {260 + n:,} (BPE), 2.6M params, one "
                f"snapshot{', stored' if name == 'valid-stored' else ''}"), _zip(
                    files | {"tokenizer.json": text}, method)
    if name == "valid-prose":
        files = _files(big, tok, {"steps": 1}, snapshots=1)
        return "valid: 2.7M params, BPE |V| = 1,028 from prose, one snapshot", _zip(files)
    if name == "valid-48-layers":
        deep = GPTConfig(vocab_size=1028, context_length=256, d_model=64, n_layer=48, n_head=4)
        return "valid: the most layers (48, d = 64)", _zip(_files(deep, tok))
    if name == "deflate-within-limits":
        files = _files(big, tok) | {"model.safetensors": _safetensors_of_zeros(big, ["F64"])}
        room, snaps = LIMITS.bytes - sum(map(len, files.values())) - 100_000, []
        for dtype, size in [("F64", 8), ("F32", 4), ("F16", 2)] * 4:
            if (cost := size * len(files["model.safetensors"]) // 8) <= room:
                snaps, room = snaps + [dtype], room - cost
        meta = {"format": "gptviz-snapshots-1", "steps": json.dumps(
            list(range(1, len(snaps) + 1))), "thinned": "0"}
        files["snapshots.safetensors"] = _safetensors_of_zeros(big, snaps, meta)
        total = sum(map(len, files.values()))
        return (f"deflate bomb within the limits: {total / 1e6:.0f} MB of zeros "
                f"(float64 weights, snapshots {'+'.join(snaps)})"), _zip(files)
    if name in ("deflate-lying", "bzip2-lying", "lzma-lying"):
        method = {"deflate": zipfile.ZIP_DEFLATED, "bzip2": zipfile.ZIP_BZIP2,
                  "lzma": zipfile.ZIP_LZMA}[name.split("-")[0]]
        size = 1 << 30 if method != zipfile.ZIP_LZMA else 1 << 28
        return (f"{name.split('-')[0]}: card.json declares 1,000 bytes, unpacks to "
                f"{size >> 20:,} MB"), _streamed("card.json", method, size, 1000,
                                                 {k: v for k, v in base.items()
                                                  if k != "card.json"})
    if name in JSON_FILLS:
        what, file, head, unit, tail = JSON_FILLS[name]
        return what, _zip(base | {file: fill(head, unit, tail)})
    if name == "json-config-keys":
        keys = b", ".join(b'"k%d": 0' % i for i in range(limit // 12))
        text = b'{"n_layer": 1, ' + keys[:keys.rfind(b",", 0, limit - 40)] + b"}"
        return "config.json: 2 MB of unknown keys", _zip(base | {"config.json": text})
    if name == "json-merges-2mb":
        text, n = _merges_json(limit, limit)
        config = GPTConfig(vocab_size=260 + n, context_length=8, d_model=16, n_layer=1, n_head=1)
        return (f"tokenizer.json: {len(text) / 1e6:.1f} MB of BPE merges ({n:,}, |V| = "
                f"{260 + n:,})", _zip(_over(config) | {"tokenizer.json": text}))
    if name in ("json-symbols", "json-symbols-2mb"):
        from gptviz.tokenizers.base import UNTRUSTED_IDS

        most = UNTRUSTED_IDS - 4 if name == "json-symbols" else limit
        symbols = (chr(c) for c in range(0x4E00, 0x110000) if not 0xD800 <= c < 0xE000)
        text, n = b'{"type": "char", "symbols": [', 0
        while len(text) + 10 < limit and n < most:
            text += json.dumps(next(symbols), ensure_ascii=False).encode() + b","
            n += 1
        text = text[:-1] + b"]}"
        config = GPTConfig(vocab_size=n + 4, context_length=8, d_model=4, n_layer=1, n_head=1)
        files = _over(config) if n + 4 > UNTRUSTED_IDS else _files(
            config, Tokenizer.from_json_dict(json.loads(text)))
        return (f"tokenizer.json: {len(text) / 1e6:.1f} MB of symbols ({n:,}, |V| = {n + 4:,})",
                _zip(files | {"tokenizer.json": text}))
    if name == "header-max":
        from gptviz.checkpoints.tensors import header_limit

        deep = GPTConfig(vocab_size=1028, context_length=256, d_model=64, n_layer=48, n_head=4)
        cap, entries, text = header_limit(48 * 12 + 5), {}, b"{}"
        while len(text) < cap - 100:
            entries[f"t{len(entries)}"] = {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]}
            if len(entries) % 1000 == 0 or len(text) > cap - 20_000:
                text = json.dumps(entries).encode()
        text = json.dumps(entries).encode()
        while len(text) > cap:
            entries.popitem()
            text = json.dumps(entries).encode()
        return (f"a header at its limit for 48 layers: {len(entries):,} empty tensors",
                _zip(_files(deep, tok) | {"model.safetensors":
                                          len(text).to_bytes(8, "little") + text}))
    if name == "snapshots-header-max":
        from gptviz.checkpoints.snapshots import FORMAT, MAX_COUNT, stored_shapes
        from gptviz.checkpoints.tensors import header_limit

        deep = GPTConfig(vocab_size=1028, context_length=256, d_model=64, n_layer=48, n_head=4)
        names = [f"{k}/{n}" for k in range(MAX_COUNT) for n in stored_shapes(deep)]
        cap = header_limit(len(names))
        meta = {"format": FORMAT, "steps": json.dumps(list(range(1, MAX_COUNT + 1))),
                "thinned": "0"}
        entries = {"__metadata__": meta} | {
            n: {"dtype": "F16", "shape": [0], "data_offsets": [0, 0]} for n in names}
        pad = cap - len(json.dumps(entries).encode())  # the rest: one more, unknown, entry
        entries["x" * max(1, pad - 60)] = {"dtype": "F16", "shape": [0], "data_offsets": [0, 0]}
        text = json.dumps(entries).encode()[:cap]
        return (f"snapshots whose header is at its limit for 48 layers ({len(names):,} "
                "entries, the right names, empty shapes)", _zip(_files(deep, tok) | {
                    "snapshots.safetensors": len(text).to_bytes(8, "little") + text}))
    if name == "header-381k":
        near = GPTConfig(vocab_size=1028, context_length=512, d_model=264, n_layer=3, n_head=8)
        text = json.dumps({f"t{i}": {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]}
                           for i in range(381_005)}, separators=(",", ":")).encode()
        return ("the issue's header: 381,005 empty tensors (22.9 MB), within the weights' "
                "allowance of a 2.9M-parameter config", _zip(_files(near, tok) | {
                    "model.safetensors": len(text).to_bytes(8, "little") + text}))
    if name == "nan-weights":
        weights = bytearray(_safetensors_of_zeros(big, ["F32"]))
        weights[-4:] = b"\x00\x00\xc0\x7f"  # the last number: NaN
        return "every weight read, the last one NaN", _zip(_files(big, tok) | {
            "model.safetensors": bytes(weights)})
    raise SystemExit(f"unknown attack {name!r}")


ATTACKS = ["valid-largest", "valid-stored", "valid-prose", "valid-48-layers",
           "deflate-within-limits", "deflate-lying", "bzip2-lying", "lzma-lying",
           "json-escapes", "json-deep", "json-objects", "json-strings", "json-config-keys",
           "json-merges-2mb", "json-symbols", "json-symbols-2mb", "header-max",
           "snapshots-header-max", "header-381k",
           "nan-weights"]


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
    from gptviz.app.serving.memory import give_back

    give_back()  # the heap freed by building the input goes back: the peak is the work's own
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # VmHWM := VmRSS
    before, _ = rss_mb()
    t0, cpu0 = time.perf_counter(), time.process_time()
    result = work()
    seconds, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    print(json.dumps(dict(what=what, result=result, seconds=seconds, cpu=cpu, before=before,
                          extra=rss_mb()[1] - before)))


def run_child(name: str, mb: float, vocab: int) -> dict | str:
    """One case in a fresh process: its JSON line, or the last line of its error."""
    out = subprocess.run([sys.executable, "-m", "benchmarks.server.upload_memory", "--child", name,
                          "--mb", str(mb), "--vocab", str(vocab)], capture_output=True,
                         text=True, cwd=ROOT)
    if out.returncode:
        return f"failed: {(out.stderr.strip().splitlines() or ['?'])[-1]}"
    return json.loads(out.stdout.strip().splitlines()[-1])


CPU_LIMIT = 120  # CPU seconds a load may take here (the JSON took ~3.7 hours)


def load_child(path: str) -> None:
    """Load the zip at ``path`` with the ``gptviz`` first on sys.path (this tree's, or an
    older one's, ``--before``), in this fresh process, and print what it cost."""
    import gc
    import resource

    import torch

    from gptviz.app.serving.memory import give_back
    from gptviz.app.shared.picker import UPLOAD_LIMITS
    from gptviz.checkpoints.folder import CheckpointError, load_checkpoint_zip

    torch.set_num_threads(1)
    data = Path(path).read_bytes()
    gc.collect()
    give_back()
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # VmHWM := VmRSS
    before, _ = rss_mb()
    resource.setrlimit(resource.RLIMIT_CPU, (int(time.process_time()) + CPU_LIMIT,) * 2)
    t0, cpu0 = time.perf_counter(), time.process_time()
    try:
        ckpt = load_checkpoint_zip(data, UPLOAD_LIMITS)
        result = f"loaded: {sum(p.numel() for p in ckpt.model.parameters()):,} parameters"
    except CheckpointError as exc:
        result = f"refused: {str(exc)[:80]}…"
    except Exception as exc:  # what the page did not catch (an older loader's)
        result = f"**raised {type(exc).__name__}**: {str(exc)[:60]}"
    seconds, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    print(json.dumps(dict(result=result, seconds=seconds, cpu=cpu, before=before,
                          extra=rss_mb()[1] - before)))


def load_in(tree: Path, path: Path) -> dict:
    """``load_child(path)`` in a fresh process whose ``gptviz`` is ``tree``'s."""
    code = f"from benchmarks.server.upload_memory import load_child; load_child({str(path)!r})"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), str(ROOT)])}  # tree first
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=tree, env=env)
    if out.returncode:  # killed at CPU_LIMIT, or out of memory
        return dict(result=f"**killed** ({out.returncode}): "
                    f"{(out.stderr.strip().splitlines() or ['over the CPU limit'])[-1][:60]}",
                    seconds=float("nan"), cpu=float(CPU_LIMIT), before=0.0, extra=float("nan"))
    return json.loads(out.stdout.strip().splitlines()[-1])


def cell(text: str) -> str:
    """``text`` for a cell of a markdown table."""
    return text.replace("|", "\\|").replace("\n", " ")


def attacks(repeat: int, before: Path | None, names: list[str]) -> None:
    """The loader's budget: every case beside the largest valid upload, in the same run;
    with ``before`` (a folder holding an older ``gptviz``), that loader on the same zips.
    Each load of a case is paired with a load of the reference just before it, and the
    ratio is the median of the pairs' ratios: the machine's load drifts less within a pair."""
    import tempfile

    budget_mb, budget_x = 150, 3.0
    print(f"# Uploads under attack: load_checkpoint_zip(data, UPLOAD_LIMITS), one process per "
          f"load, {repeat} loads per case, each after one of the reference (median CPU times "
          f"and ratios, largest peak); Python {sys.version.split()[0]}, {os.cpu_count()} "
          f"CPUs, load average {os.getloadavg()[0]:.1f}\n")
    head = ("| case | upload | result | CPU s | reference's CPU s | × reference | wall s | "
            f"peak extra (MB) | within +{budget_mb} MB and {budget_x:g}× |")
    print(head + (" before: result | before: CPU s | before: peak extra (MB) |"
                  if before else ""))
    print("|---" * (9 + 3 * bool(before)) + "|")
    with tempfile.TemporaryDirectory() as tmp:
        zips = {}
        for name in dict.fromkeys([ATTACKS[0], *names]):  # the reference first
            path = Path(tmp) / f"{name}.zip"
            made = subprocess.run([sys.executable, "-m", "benchmarks.server.upload_memory",
                                   "--build", name, str(path)],
                                  capture_output=True, text=True, cwd=ROOT)
            if made.returncode:
                print(f"| {name} | not built: {cell(made.stderr.strip().splitlines()[-1])} |")
                continue
            zips[name] = (path, made.stdout.strip().splitlines()[-1])
        reference = zips[ATTACKS[0]][0]
        for name, (path, what) in zips.items():
            pairs = [(load_in(ROOT, reference), load_in(ROOT, path)) for _ in range(repeat)]
            runs = [run for _, run in pairs]
            cpu = statistics.median(r["cpu"] for r in runs)
            ref = statistics.median(r["cpu"] for r, _ in pairs)
            ratio = statistics.median(run["cpu"] / r["cpu"] for r, run in pairs)
            wall = statistics.median(r["seconds"] for r in runs)
            extra = max(r["extra"] for r in runs)
            ok = "yes" if extra <= budget_mb and ratio <= budget_x else "**no**"
            line = (f"| {name} | {cell(what)}; {path.stat().st_size / 1e6:.2f} MB zip | "
                    f"{cell(runs[0]['result'])} | {cpu:.2f} | {ref:.2f} | {ratio:.2f} | "
                    f"{wall:.2f} | {extra:.0f} | {ok} |")
            if before:
                old = load_in(before, path)
                line += f" {cell(old['result'])} | {old['cpu']:.2f} | {old['extra']:.0f} |"
            print(line, flush=True)


def build(name: str, path: str) -> None:
    """Write case ``name``'s zip to ``path``; print what it is."""
    what, data = attack_zip(name)
    Path(path).write_bytes(data)
    print(what)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=float, default=4.8, help="size of the generated corpora")
    parser.add_argument("--vocab", type=int, default=512, help="the Tokenizers page's default")
    parser.add_argument("--only", nargs="*", default=CASES, choices=CASES + ATTACKS,
                        help="these cases only (with --attacks: of ATTACKS)")
    parser.add_argument("--attacks", action="store_true",
                        help="the loader's time and memory on every crafted upload")
    parser.add_argument("--repeat", type=int, default=3, help="loads per attack case")
    parser.add_argument("--before", type=Path, help="with --attacks: also load each zip with "
                        "the gptviz in this folder (git archive <commit> gptviz | tar -x -C it)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--build", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args.child, args.mb, args.vocab)
    if args.build:
        return build(*args.build)
    if args.attacks:
        return attacks(args.repeat, args.before,
                       [n for n in args.only if n in ATTACKS] or ATTACKS)
    print(f"# Upload memory, Python {sys.version.split()[0]}, one process per case\n")
    print("| case | input | result | s | before (MB) | peak extra (MB) |")
    print("|---|---|---|---|---|---|")
    for name in args.only:
        r = run_child(name, args.mb, args.vocab)
        if isinstance(r, str):
            print(f"| {name} | | {r} | | | |")
            continue
        print(f"| {name} | {r['what']} | {r['result']} | {r['seconds']:.1f} | "
              f"{r['before']:.0f} | {r['extra']:.0f} |", flush=True)


if __name__ == "__main__":
    main()
