"""Hostile uploads (issue 37): the crafted files that stalled or swelled a shared server, each
refused at its cause, cheaply, with a message; a valid checkpoint that was refused as a
pickle; the positional check that took 6.5 GB at GPT-2's size. Then a corpus of malformed
inputs, generated on the zip, JSON and safetensors layers, on which the loader raises
nothing but CheckpointError and does work bounded by what it was given (``gptviz.work``'s
counters: bytes unpacked, characters scanned, header entries, tensor bytes; never times)."""

from __future__ import annotations

import io
import json
import string
import subprocess
import sys
import textwrap
import tracemalloc
import zipfile
from pathlib import PurePosixPath
from unittest import mock

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gptviz.checkpoints.folder
from gptviz.analysis import positions
from gptviz.app.shared.picker import UPLOAD_LIMITS as LIMITS
from gptviz.checkpoints.folder import (
    FILES,
    OPTIONAL,
    WEIGHTS,
    CheckpointError,
    checkpoint_files,
    initial_model,
    load_checkpoint,
    load_checkpoint_zip,
    save_checkpoint,
    training_seed,
)
from gptviz.checkpoints.snapshots import SNAPSHOTS, Snapshots
from gptviz.checkpoints.tensors import FLOATS, OTHERS, header_limit
from gptviz.checkpoints.zipread import CHUNK
from gptviz.model import GPTConfig
from gptviz.tokenizers import train_tokenizer
from gptviz.tokenizers.base import json_depth
from gptviz.work import Work, counting
from tests.helpers import ROOT, app_test, checkpoint_uploader, rerun, texts


def tiny_files(text: str = "abcdefgh", snapshots: bool = False, tokenizer: str = "char",
               **config) -> dict[str, bytes]:
    tok = train_tokenizer(tokenizer, text, 264 if tokenizer == "bpe" else None)
    shape = dict(vocab_size=tok.vocab_size, context_length=8, d_model=8, n_layer=1, n_head=2)
    model = initial_model(GPTConfig(**shape | config), 0)
    snaps = None
    if snapshots:
        snaps = Snapshots()
        snaps.add(3, model)
    return checkpoint_files(model, tok, {"steps": 5, "train_config": {"seed": 3}}, snaps)


def zipped(files: dict[str, bytes], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", method) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return buffer.getvalue()


def listed(data: bytes, name: str) -> int:
    """Where the zip's listing (central directory) has its entry for ``name``."""
    at = 0
    while (at := data.find(b"PK\x01\x02", at + 1)) >= 0:
        size = int.from_bytes(data[at + 28:at + 30], "little")
        if data[at + 46:at + 46 + size] == name.encode():
            return at
    raise LookupError(name)


def refusal(data: bytes) -> tuple[str, Work]:
    """The message of the CheckpointError an upload gets, and the work it cost; the refusal
    must come before a GPT is built (the test fails if one is)."""
    never = mock.Mock(side_effect=AssertionError("the GPT was built"))
    with mock.patch.object(gptviz.checkpoints.folder, "GPT", never), counting() as work, \
            pytest.raises(CheckpointError) as info:
        load_checkpoint_zip(data, LIMITS)
    return str(info.value), work


def traced_peak(fn) -> int:
    """The most memory Python and numpy held at once while ``fn()`` ran, in bytes."""
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# ---- 1. the nesting scan of every JSON file is linear ------------------------------------

def test_the_nesting_scan_is_linear_on_the_issues_file():
    """The issue's config.json, '"' then '\\"' 999,999 times (2 MB): the old scan retried
    its string pattern at every quote, ~3.7 hours here (64 KB took 13.8 s) with the GIL
    held. In a child given 20 CPU-seconds (about 400x what the scan needs), it finishes,
    refuses the file with a message, and passes over at most 4 characters per byte."""
    code = textwrap.dedent("""
        import json, resource
        from gptviz.tokenizers.base import TokenizerError, read_json
        from gptviz.work import counting
        resource.setrlimit(resource.RLIMIT_CPU, (20, 20))
        data = b'"' + b'\\\\"' * 999_999  # under the 2 MB limit
        with counting() as work:
            try:
                read_json(data, "config.json", 2_000_000)
                said = "parsed"
            except TokenizerError as exc:
                said = str(exc)
        print(json.dumps([len(data), work.json_chars, said]))
    """)
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-500:]
    size, chars, said = json.loads(out.stdout)
    assert size == 1_999_999 and chars <= 4 * size
    assert said.startswith("config.json is not valid UTF-8 JSON (Unterminated string")


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
    | st.text(alphabet=st.sampled_from('ab"\\[]{}/u0 \n\t\u00e9\U0001f600'), max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.text(alphabet=st.sampled_from('k"\\[]{}'), max_size=5), inner, max_size=4),
    max_leaves=30)


def nesting(value) -> int:
    if isinstance(value, list):
        return 1 + max(map(nesting, value), default=0)
    if isinstance(value, dict):
        return 1 + max(map(nesting, value.values()), default=0)
    return 0


@settings(max_examples=300, deadline=None)
@given(JSON_VALUES, st.booleans(), st.booleans())
def test_the_scan_counts_what_the_parser_nests(value, ascii_only, indent):
    """Strings full of quotes, backslashes and brackets (escaped as json.dumps escapes them)
    never fool the count: it is the parsed value's nesting, and the scan passes over at
    most 3 characters per byte."""
    data = json.dumps(value, ensure_ascii=ascii_only, indent=1 if indent else None).encode()
    with counting() as work:
        assert json_depth(data) == nesting(value)
    assert work.json_chars <= 3 * len(data)


# ---- 2. zip members: stored or deflated only, unpacked in bounded chunks -----------------

@pytest.mark.parametrize("method, name", [(zipfile.ZIP_BZIP2, "bzip2"),
                                          (zipfile.ZIP_LZMA, "LZMA")])
def test_members_packed_with_other_methods_are_refused_unread(method, name):
    """zipfile unpacks bzip2 and LZMA a whole block at a time: the issue's 106 KB zip whose
    bzip2 member declares 1,000 bytes and unpacks to 1 GiB peaked at 2.3 GB before its size
    was checked. Such members are refused from the zip's listing, before a byte is
    unpacked, even in an honest checkpoint (ours writes deflate)."""
    message, work = refusal(zipped(tiny_files(), method))
    assert message.startswith(f"model.safetensors in the zip is compressed with {name}")
    assert work.bytes_unpacked == 0
    bomb = bytearray(zipped(tiny_files() | {"card.json": b" " * 8_000_000}, method))
    entry = listed(bomb, "card.json")
    bomb[entry + 24:entry + 28] = (1_000).to_bytes(4, "little")  # it declares 1,000 bytes
    assert len(bomb) < 100_000
    peak = traced_peak(lambda: refusal(bytes(bomb)))
    assert peak < 2_000_000


def test_a_deflated_member_is_unpacked_no_further_than_it_declares():
    """A member that declares 100 bytes and inflates to 50 MB: no more than the declared
    bytes come out of the zip, whatever it holds."""
    data = bytearray(zipped(tiny_files() | {WEIGHTS: bytes(50_000_000)}))
    entry = listed(data, WEIGHTS)
    data[entry + 24:entry + 28] = (100).to_bytes(4, "little")
    message, work = refusal(bytes(data))
    assert message.startswith("model.safetensors in the zip cannot be unpacked")
    declared = sum(len(v) for k, v in tiny_files().items() if k != WEIGHTS) + 100
    assert work.bytes_unpacked <= declared


def test_members_are_read_in_bounded_chunks():
    """60 MB of snapshots (deflated zeros, within the limits): read a chunk at a time into
    one buffer of its size, so reading holds little more than the member itself (pieces
    joined at the end held it twice)."""
    files = tiny_files() | {SNAPSHOTS: bytes(60_000_000)}
    data = zipped(files)
    with counting() as work:
        peak = traced_peak(lambda: pytest.raises(CheckpointError, load_checkpoint_zip,
                                                 data, LIMITS))
    assert work.bytes_unpacked == sum(len(v) for v in files.values())
    assert peak < 60_000_000 + 4 * CHUNK + len(data)


# ---- 3. a safetensors header is checked whole before a tensor exists ---------------------

def empty_tensors(n: int) -> bytes:
    header = json.dumps({f"t{i}": {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]}
                         for i in range(n)}).encode()
    return len(header).to_bytes(8, "little") + header


CJK = "".join(chr(0x4E00 + i) for i in range(20_000))  # a vocabulary of 20,004 ids


def test_a_header_of_many_empty_tensors_is_refused_before_it_is_parsed():
    """The issue's header of 381,005 empty tensors fit the weights' allowance and peaked at
    781 MB before a name was checked. A header longer than this model's tensors could
    need is refused before it is parsed; here 20,000 of them, within the allowance of a
    model of 640k parameters."""
    files = tiny_files(CJK, d_model=32) | {WEIGHTS: empty_tensors(20_000)}
    message, work = refusal(zipped(files))
    assert message.startswith(f"model.safetensors's header takes {len(files[WEIGHTS]) - 8:,} "
                              "bytes")
    assert work.header_entries == 0 and work.tensor_bytes == 0
    assert work.json_chars <= 4 * sum(len(files[n]) for n in FILES if n != WEIGHTS)


def test_a_header_within_its_bound_is_matched_before_any_tensor_is_built():
    files = tiny_files() | {WEIGHTS: empty_tensors(300)}
    message, work = refusal(zipped(files))
    assert "does not match config.json: missing ['blocks.0.attn.W_O.bias'" in message
    assert "unexpected ['t0', 't1', 't10'" in message
    assert work.header_entries == 300 and work.tensor_bytes == 0
    weights = json.loads(tiny_files()[WEIGHTS][8:8 + int.from_bytes(
        tiny_files()[WEIGHTS][:8], "little")])
    name = next(k for k in weights if k != "__metadata__")
    weights[name]["dtype"] = "I64"
    header = json.dumps(weights).encode()
    files = tiny_files() | {WEIGHTS: len(header).to_bytes(8, "little") + header
                            + tiny_files()[WEIGHTS][8 + int.from_bytes(
                                tiny_files()[WEIGHTS][:8], "little"):]}
    assert "has dtype I64; weights must be floats" in refusal(zipped(files))[0]


# ---- 4. formats are told apart by the safetensors shape, not a first byte -----------------

def test_a_checkpoint_whose_weights_start_with_0x80_loads(tmp_path):
    """The issue's example: 6 layers, 4 heads, d = 96, context 128, 72 symbols. Its header
    is 6,528 bytes long (128 mod 256), so the file starts with 0x80, a pickle's first byte,
    and was refused as one: downloaded from the Training page, uploaded, refused."""
    tok = train_tokenizer("char", (string.ascii_letters + string.digits + " .,;:!?")[:68])
    config = GPTConfig(vocab_size=tok.vocab_size, context_length=128, d_model=96, n_layer=6,
                       n_head=4)
    model = initial_model(config, 0)
    files = checkpoint_files(model, tok, {"steps": 0})
    assert tok.vocab_size == 72 and files[WEIGHTS][:2] == b"\x80\x19"
    for ckpt in (load_checkpoint_zip(zipped(files), LIMITS),
                 load_checkpoint(save_checkpoint(tmp_path, model, tok, {"steps": 0}))):
        for (name, a), b in zip(ckpt.model.state_dict().items(),
                                model.state_dict().values(), strict=True):
            assert torch.equal(a, b), name


# ---- 5. the positional checks: memory N·d, or the N² of the heatmap, never N²·d ----------

def test_the_sinusoidal_check_at_gpt2_size_holds_memory_of_its_table_only():
    """GPT-2's context 1,024 and d = 768: the check built 1,024 × 1,024 × 384 float64
    arrays (6.56 GB, 21 s). One offset at a time it holds under twice the (N, d) table."""
    peak = traced_peak(lambda: positions.sinusoidal_shift_check(1024, 768))
    assert peak < 2 * 1024 * 768 * 8
    check = positions.sinusoidal_shift_check(1024, 768)
    assert check.max_deviation < 1e-10 and check.diagonal_spread < 1e-10


def test_the_rope_check_at_gpt2_size_holds_its_heatmap_not_a_cube():
    """RoPE's i − j check on a context of 1,024 with d_k = 64 spread the formula over
    N × N × d_k/2 cosines (268 MB each array); per offset it holds a few N × N arrays."""
    q, k = torch.randn(64, dtype=torch.float64).numpy(), torch.randn(64).double().numpy()
    peak = traced_peak(lambda: positions.rope_relative_check(q, k, 1024))
    assert peak < 5 * 1024 * 1024 * 8
    check = positions.rope_relative_check(q, k, 1024)
    assert check.max_deviation < 1e-9 and check.diagonal_spread < 1e-9


# ---- 6. the card's fields are checked at load ---------------------------------------------

@pytest.mark.parametrize("card, message", [
    ({"train_config": [1, 2]}, "card.json: train_config must be a JSON object (the training "
                               "settings by name), not an array."),
    ({"train_config": {"seed": 2**70}}, "card.json: train_config.seed is "
                                        "1,180,591,620,717,411,303,424; a seed is an integer "
                                        "from -2**63 to 2**64 - 1."),
    ({"train_config": {"seed": 7.5}}, "card.json: train_config.seed must be int, not a number"),
    ({"train_config": {"val_fraction": "0.1"}},
     "card.json: train_config.val_fraction must be float, not a string (0.1)."),
    ({"evals": {"step": 1}}, "card.json: evals must be a list of objects"),
    ({"evals": [{"step": 1, "induction_score": [0.5]}]},
     "card.json: evals[0].induction_score must be a number or null, not an array."),
    ({"steps": -3}, "card.json: steps must be a whole number of steps"),
    ({"prompt": {"text": "x"}}, "card.json: prompt must be a string, not an object."),
    ([], "card.json must hold a JSON object, not an array."),
])
def test_card_fields_the_pages_compute_with_are_checked_at_load(card, message):
    message_got, _ = refusal(zipped(tiny_files() | {"card.json": json.dumps(card).encode()}))
    assert message_got.startswith(message)


def test_a_card_at_the_edges_of_the_seed_range_loads_and_rebuilds_its_twin():
    for seed in (-(2**63), 2**64 - 1):
        card = {"train_config": {"seed": seed, "val_fraction": 0.2}, "evals": [
            {"step": 0, "val_loss": 3.5, "train_loss": None}], "other": [1, {"x": 2}]}
        ckpt = load_checkpoint_zip(zipped(tiny_files() | {
            "card.json": json.dumps(card).encode()}), LIMITS)
        assert training_seed(ckpt.card) == seed
        assert initial_model(ckpt.config, training_seed(ckpt.card)).config == ckpt.config


def test_a_hostile_upload_through_the_sidebar_gets_a_message():
    at = rerun(app_test())
    checkpoint_uploader(at).upload("bomb.zip", zipped(tiny_files(), zipfile.ZIP_BZIP2),
                                   "application/zip")
    rerun(at)
    assert ("Cannot use bomb.zip: model.safetensors in the zip is compressed with bzip2"
            in texts(at.sidebar, "error"))


# ---- the corpus: malformed inputs on every layer ------------------------------------------

GOOD = tiny_files(snapshots=True)
GOOD_ZIP = zipped(GOOD)
BPE = tiny_files("abcabc abd " * 20, snapshots=True, tokenizer="bpe")


def declared(data: bytes) -> int:
    """Bytes the checkpoint's members of zip ``data`` declare (0 if it does not open)."""
    try:
        infos = zipfile.ZipFile(io.BytesIO(data)).infolist()
    except Exception:  # not a zip the loader reads either
        return 0
    return sum(i.file_size for i in infos if PurePosixPath(i.filename).name in FILES + OPTIONAL)


def load_and_bound(data: bytes, unpacked_most: int) -> None:
    """Load zip ``data``: CheckpointError or a checkpoint, nothing else, with bounded work."""
    with counting() as work:
        try:
            load_checkpoint_zip(data, LIMITS)
        except CheckpointError as exc:
            assert str(exc)
    assert work.bytes_unpacked <= min(unpacked_most, LIMITS.bytes)
    assert work.json_chars <= 8 * work.bytes_unpacked  # scan + parse, twice for snapshots
    assert work.header_entries <= work.bytes_unpacked // 5  # an entry takes '"":0,' at least
    assert work.tensor_bytes <= work.bytes_unpacked


CORPUS = settings(max_examples=150, deadline=None,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
EDITS = st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), max_size=6)


def edited(data: bytes, edits: list[tuple[int, int]], cut: int | None = None) -> bytes:
    out = bytearray(data[:cut] if cut is not None else data)
    for at, value in edits:
        if out:
            out[at % len(out)] = value
    return bytes(out)


@CORPUS
@given(EDITS, st.none() | st.integers(0, len(GOOD_ZIP)),
       st.sampled_from([0, 8, 9, 12, 14, 99]), st.binary(max_size=300))
def test_the_zip_layer(edits, cut, method, junk):
    """A valid zip with bytes changed, cut short, its members' methods rewritten (local
    header and listing), or arbitrary bytes."""
    data = bytearray(edited(GOOD_ZIP, edits, cut))
    start = 0
    while (start := data.find(b"PK\x01\x02", start) + 1) > 0:  # the listing's entries
        data[start + 9:start + 11] = method.to_bytes(2, "little")
    for raw in (bytes(data), junk, b"PK\x05\x06" + junk):
        load_and_bound(raw, declared(raw))


JSON_TEXT = st.one_of(
    st.binary(max_size=300),
    JSON_VALUES.map(lambda v: json.dumps(v).encode()),
    st.tuples(st.sampled_from([f for f in FILES if f.endswith(".json")]), EDITS).map(
        lambda fe: edited(GOOD[fe[0]], fe[1])),
)


@CORPUS
@given(st.sampled_from([GOOD, BPE]), st.sampled_from(["config.json", "tokenizer.json",
                                                      "card.json"]), JSON_TEXT,
       st.sampled_from(sorted(json.loads(GOOD["config.json"]))),
       st.sampled_from(["type", "symbols", "specials", "pattern", "merges", "special_ids",
                        "byte_order"]), JSON_VALUES)
def test_the_json_layer(base, name, text, config_field, tokenizer_field, value):
    """A JSON file replaced by bytes, by any JSON value, by itself with bytes changed; the
    config or the tokenizer (characters or BPE) with one field set to any JSON value."""
    load_and_bound(zipped(base | {name: text}), 10**9)
    config = json.loads(base["config.json"]) | {config_field: value}
    load_and_bound(zipped(base | {"config.json": json.dumps(config).encode()}), 10**9)
    tokenizer = json.loads(base["tokenizer.json"]) | {tokenizer_field: value}
    load_and_bound(zipped(base | {"tokenizer.json": json.dumps(tokenizer).encode()}), 10**9)


def header_of(data: bytes) -> dict:
    return json.loads(data[8:8 + int.from_bytes(data[:8], "little")])


ENTRY = st.fixed_dictionaries({}, optional={
    "dtype": st.sampled_from([*FLOATS, *OTHERS, "F33", ""]) | JSON_VALUES,
    "shape": st.lists(st.integers(-2, 70), max_size=3) | JSON_VALUES,
    "data_offsets": st.lists(st.integers(-5, 10**4), max_size=3) | JSON_VALUES})
NAMES = st.sampled_from(sorted(header_of(GOOD[WEIGHTS]))) | st.text(max_size=8)


@CORPUS
@given(st.sampled_from([WEIGHTS, SNAPSHOTS]), st.dictionaries(NAMES, ENTRY | JSON_VALUES,
                                                                max_size=8),
       st.integers(0, 600), st.integers(-20, 20), EDITS, st.booleans())
def test_the_safetensors_layer(name, entries, n_data, length_change, edits, replace):
    """The weights or the snapshots with a header of generated entries (names the model
    has or not, any dtype, shape and offsets) over bytes of any length, their header
    length off, or their bytes changed."""
    good = GOOD[name]
    header = (entries if replace else header_of(good) | entries)
    text = json.dumps(header).encode()
    n = max(0, len(text) + length_change)
    made = n.to_bytes(8, "little") + text + bytes(n_data)
    for data in (made, edited(good, edits), edited(good, [(a % 64, v) for a, v in edits])):
        load_and_bound(zipped(GOOD | {name: data}), 10**9)


def test_the_corpus_reaches_every_layer():
    """The loaders the generated inputs reach, so the three tests above test what they say:
    a good zip loads, and each layer's refusal is met."""
    assert load_checkpoint_zip(GOOD_ZIP, LIMITS).snapshots.steps == [3]
    assert "not a .zip file" in refusal(GOOD_ZIP[:100])[0]
    assert "config.json is not valid UTF-8 JSON" in refusal(zipped(GOOD | {
        "config.json": b"{"}))[0]
    assert "model.safetensors is not a valid safetensors file" in refusal(zipped(GOOD | {
        WEIGHTS: b"\0" * 16}))[0]
    assert header_limit(len(header_of(GOOD[WEIGHTS]))) > len(GOOD[WEIGHTS])
