"""Uploads sized to a shared server: crafted checkpoint zips are refused cheaply and
clearly, uploaded models share one memory budget (oldest unloaded first, with a note to
their session), and BPE training on an uploaded corpus keeps to its memory limits."""

from __future__ import annotations

import io
import json
import random
import tracemalloc
import zipfile
from unittest import mock

import pytest
import torch
from safetensors.torch import load as load_safetensors
from safetensors.torch import save as save_safetensors

import gptviz.checkpoints.folder
from gptviz.app.serving.budget import ModelBudget, Shelf, model_bytes
from gptviz.app.shared import picker
from gptviz.checkpoints.folder import (
    CheckpointError,
    checkpoint_files,
    initial_model,
    load_checkpoint_zip,
)
from gptviz.model import GPTConfig, parameter_counts
from gptviz.tokenizers import (
    ByteLevelBPE,
    Tokenizer,
    TokenizerError,
    make_tokenizer,
    train_tokenizer,
)
from gptviz.tokenizers.base import JSON_DEPTH, read_json
from gptviz.tokenizers.bpe_train import TrainLimits, count_chunks, count_chunks_within
from gptviz.tokenizers.symbols import SymbolTokenizer
from gptviz.train.plan import TrainingCaps
from tests.helpers import app_test, checkpoint_uploader, rerun, texts

LIMITS = picker.UPLOAD_LIMITS
DEEP = b"[" * 100_000


def tiny_files(**config) -> dict[str, bytes]:
    tok = train_tokenizer("bpe", "abcabc abd " * 20, 256 + 4 + 4)
    shape = dict(vocab_size=tok.vocab_size, context_length=8, d_model=8, n_layer=1, n_head=2)
    return checkpoint_files(initial_model(GPTConfig(**shape | config), 0), tok, {"steps": 0})


def zipped(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return buffer.getvalue()


def refusal(data: bytes) -> str:
    """The message of the CheckpointError an upload gets; every refusal comes before a GPT
    is built (the test fails if one is)."""
    never = mock.Mock(side_effect=AssertionError("the GPT was built"))
    with mock.patch.object(gptviz.checkpoints.folder, "GPT", never), \
            pytest.raises(CheckpointError) as info:
        load_checkpoint_zip(data, LIMITS)
    return str(info.value)


def config_for(n_params_wanted: int, **kw) -> GPTConfig:
    """A config with about ``n_params_wanted`` parameters (in its embedding)."""
    base = dict(context_length=8, d_model=64, n_layer=1, n_head=2) | kw
    rest = parameter_counts(GPTConfig(vocab_size=1, **base))["total"]
    return GPTConfig(vocab_size=1 - (rest - n_params_wanted) // base["d_model"], **base)


def zeros_weights(n: int) -> bytes:
    header = json.dumps({"embed.weight": {"dtype": "F32", "shape": [n],
                                          "data_offsets": [0, 4 * n]}}).encode()
    return len(header).to_bytes(8, "little") + header + bytes(4 * n)


@pytest.mark.parametrize("name", ["config.json", "card.json", "tokenizer.json"])
def test_deeply_nested_json_is_refused_clearly(name):
    message = refusal(zipped(tiny_files() | {name: DEEP}))
    assert message.startswith(f"{name} nests arrays and objects 100,000 deep")


def test_json_depth_and_size_bounds(tmp_path):
    assert read_json(b"[" * JSON_DEPTH + b"]" * JSON_DEPTH, "x") is not None
    with pytest.raises(TokenizerError, match="33 deep"):
        read_json(b"[" * 33 + b"]" * 33, "x")
    assert read_json(b'["[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\\"[["]', "x")[0].startswith("[[")
    with pytest.raises(TokenizerError, match="11 bytes; the limit here is 10"):
        read_json(b'"abcdefghi"', "x", max_bytes=10)
    (tmp_path / "tokenizer.json").write_bytes(DEEP)
    with pytest.raises(TokenizerError, match="deep"):  # trusted files too: no RecursionError
        Tokenizer.load(tmp_path)
    message = refusal(zipped(tiny_files() | {"card.json": b"[" + b"0," * 1_100_000 + b"0]"}))
    assert message == f"card.json is 2,200,003 bytes; the limit here is {LIMITS.json_bytes:,}."


def test_33m_parameters_of_zeros_are_refused_before_allocating():
    config = config_for(33_000_000, d_model=512)
    honest = zipped(tiny_files() | {"config.json": json.dumps(config.to_dict()).encode(),
                                    "model.safetensors": zeros_weights(33_000_000)})
    assert len(honest) < 200_000  # a small upload that unpacks to 133 MB
    lying = tiny_files() | {"config.json": json.dumps(config.to_dict()).encode()}
    tracemalloc.start()
    try:
        assert "unpack to 13" in refusal(honest)
        assert "describes 33,0" in refusal(zipped(lying))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 5_000_000  # Python allocations; torch's: refusal() fails if a GPT is built


def test_the_parameter_cap_is_the_training_pages():
    assert LIMITS.params == TrainingCaps().max_params
    over = config_for(LIMITS.params + 1)
    assert f"parameters; the limit here is {LIMITS.params:,}" in refusal(zipped(tiny_files() | {
        "config.json": json.dumps(over.to_dict()).encode()}))
    deep = tiny_files() | {"config.json": json.dumps(
        GPTConfig(vocab_size=8, d_model=2, n_head=1, n_layer=49).to_dict()).encode()}
    assert "49 layers; the limit here is 48" in refusal(zipped(deep))
    wide = GPTConfig(vocab_size=8, context_length=200_000, d_model=4, n_head=1, n_layer=4,
                     positional="sinusoidal")
    assert "a context of 200,000 tokens" in refusal(zipped(tiny_files() | {
        "config.json": json.dumps(wide.to_dict()).encode()}))
    many = GPTConfig(vocab_size=8, context_length=1024, d_model=32, n_head=32, n_layer=1)
    assert "attention maps of 33,554,432 numbers" in refusal(zipped(tiny_files() | {
        "config.json": json.dumps(many.to_dict()).encode()}))
    ok = load_checkpoint_zip(zipped(tiny_files()), LIMITS)
    assert ok.card == {"steps": 0} and not ok.model.training


def test_oversized_declared_and_actual_members():
    files = tiny_files()
    assert "unpack to" in refusal(zipped(files | {"card.json": b" " * 70_000_000}))
    too_big = files | {"model.safetensors": files["model.safetensors"] + b"\0" * 2_000_000}
    assert "model.safetensors is" in refusal(zipped(too_big))
    # a member that declares 100 bytes but inflates to 50 MB: read no further than declared
    data = bytearray(zipped(files | {"model.safetensors": bytes(50_000_000)}))
    entry = data.index(b"PK\x01\x02")  # the first file listed: the weights
    assert data[entry + 46:entry + 63] == b"model.safetensors"
    data[entry + 24:entry + 28] = (100).to_bytes(4, "little")  # its declared size
    tracemalloc.start()
    try:
        assert "model.safetensors in the zip cannot be unpacked" in refusal(bytes(data))
        assert tracemalloc.get_traced_memory()[1] < 5_000_000
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("special_ids", [[1], {"x": float("inf")}, {"x": "1e9"}])
def test_malformed_tokenizers_are_refused_not_raised(special_ids):
    data = json.loads(tiny_files()["tokenizer.json"]) | {"special_ids": special_ids}
    message = refusal(zipped(tiny_files() | {"tokenizer.json": json.dumps(data).encode()}))
    assert message.startswith("tokenizer.json: malformed bpe tokenizer")


def test_float8_weights_load_as_float32():
    files = tiny_files()
    weights = {k: v.to(torch.float8_e4m3fn) for k, v in load_safetensors(
        files["model.safetensors"]).items()}
    ckpt = load_checkpoint_zip(zipped(files | {"model.safetensors": save_safetensors(weights)}),
                               LIMITS)
    assert ckpt.model.embed.weight.dtype == torch.float32


def test_a_zip_with_thousands_of_entries_is_refused_before_it_is_listed():
    many = {f"junk/{i}.txt": b"" for i in range(3000)}
    assert "list of files takes" in refusal(zipped(tiny_files() | many))


def test_uploaded_split_patterns_must_be_named():
    files = tiny_files()
    data = json.loads(files["tokenizer.json"]) | {"pattern": "(a+)+$"}
    evil = files | {"tokenizer.json": json.dumps(data).encode()}
    assert "not one of the named patterns (gpt2, gpt4, none)" in refusal(zipped(evil))
    trusted = gptviz.checkpoints.folder.checkpoint_from_files(evil)  # a folder on the server
    assert trusted.tokenizer.pattern == "(a+)+$"


class Model:
    """Stands for a model: the budget only needs a weakly referable object."""


def test_the_budget_unloads_the_oldest_first_and_leaves_a_note():
    budget, mine, theirs = ModelBudget(limit=100), Shelf(), Shelf()
    a, b, c, d = Model(), Model(), Model(), Model()
    budget.admit(mine, "a", a, 40, "a unloaded")
    budget.admit(theirs, "b", b, 40, "b unloaded")
    assert budget.admit(theirs, "c", c, 40, "c unloaded") == 80  # a goes: the oldest
    assert list(mine) == [] and mine.take_notes() == ["a unloaded"] and mine.take_notes() == []
    del a, b, c  # b and c are still on their shelf: still charged
    assert budget.used() == 80 and sorted(theirs) == ["b", "c"]
    theirs.clear()  # its session let go of both: they are freed and stop counting
    assert budget.used() == 0
    assert budget.admit(mine, "d", d, 90, "") == 90 and theirs.take_notes() == []


def test_the_budget_is_thread_safe():
    from concurrent.futures import ThreadPoolExecutor

    budget, shelves = ModelBudget(limit=1000), [Shelf() for _ in range(8)]
    models = [Model() for _ in range(400)]
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda i: budget.admit(shelves[i % 8], str(i), models[i], 30, ""),
                      range(400)))
    assert budget.used() == sum(len(s) for s in shelves) * 30 <= 1000


def test_model_bytes_counts_tied_weights_once():
    model = initial_model(GPTConfig(vocab_size=10, d_model=8, n_layer=1, n_head=2), 0)
    assert model_bytes(model) == 4 * sum(p.numel() for p in model.parameters())


@pytest.fixture
def small_budget(monkeypatch):
    one = model_bytes(initial_model(GPTConfig(**json.loads(tiny_files()["config.json"])), 0))
    monkeypatch.setattr(picker, "MODEL_BUDGET", int(2.5 * one))  # two uploads fit, not three


def upload(at, name: str, data: bytes):
    checkpoint_uploader(at).upload(name, data, "application/zip")
    return rerun(at)


def test_an_upload_evicts_another_sessions_oldest_model_with_a_message(small_budget):
    alice, bob = rerun(app_test()), rerun(app_test())
    upload(alice, "a.zip", zipped(tiny_files()))
    upload(bob, "b.zip", zipped(tiny_files(d_model=8)))
    upload(bob, "c.zip", zipped(tiny_files(n_head=4)))
    names = [o.removesuffix(" (this session)") for o in bob.sidebar.pills(key="model").options]
    assert names[-2:] == ["b", "c"]
    rerun(alice)
    assert ("Your uploaded model 'a' was unloaded to free memory for the class; upload it "
            "again.") in texts(alice, "warning")
    assert not any(o.startswith("a") for o in alice.sidebar.pills(key="model").options)
    assert "unloaded" not in texts(rerun(alice), "warning")  # told once


def test_a_deep_json_upload_through_the_sidebar_gets_a_message():
    at = upload(rerun(app_test()), "deep.zip", zipped(tiny_files() | {"card.json": DEEP}))
    assert "Cannot use deep.zip: card.json nests arrays" in texts(at.sidebar, "error")


def random_unicode(n_chars: int, seed: int = 0) -> str:
    rng = random.Random(seed)
    return "".join(chr(cp) for cp in (rng.randrange(0x20, 0x110000) for _ in range(n_chars))
                   if not 0xD800 <= cp < 0xE000)


def test_counting_chunks_within_limits_is_a_prefix():
    chunks = ByteLevelBPE().split_text(random_unicode(3000) + " the the a " * 50)
    counts, used = count_chunks_within(chunks, max_bytes=3000, max_chunks=10**6)
    assert sum(map(len, counts)) <= 3000 and sum(map(len, counts)) > 2900
    prefix = "".join(chunks)[:used]
    assert counts == count_chunks(ByteLevelBPE().split_text(prefix))
    assert count_chunks_within(chunks, 10**9, 10**9)[1] == len("".join(chunks))
    assert len(count_chunks_within(chunks, 10**9, 7)[0]) == 7


def traced_peak(fn) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_bpe_training_memory_stops_growing_with_a_random_corpus(monkeypatch):
    monkeypatch.setattr(ByteLevelBPE, "limits", TrainLimits(chunk_bytes=60_000))
    peaks, read = {}, {}
    for n in (10_000, 40_000, 160_000):
        tok, text = ByteLevelBPE(), random_unicode(n)
        peaks[n] = traced_peak(lambda t=tok, x=text: t.train(x, 300))
        read[n] = tok.trained_chars / len(text)
    assert read[10_000] == 1 and read[40_000] < 1 and read[160_000] < 0.3
    assert peaks[160_000] < 1.2 * peaks[40_000]  # 4x the text, the same memory
    assert peaks[160_000] < 60_000 * 100  # ~50 bytes a byte of distinct chunks, measured


def test_bpe_stops_with_a_message_past_its_pair_and_token_limits(monkeypatch):
    monkeypatch.setattr(ByteLevelBPE, "limits", TrainLimits(pairs=2_000, token_bytes=3_000))
    with pytest.raises(TokenizerError, match="distinct pairs of neighbouring tokens"):
        ByteLevelBPE().train(random_unicode(20_000), 2000)
    with pytest.raises(TokenizerError, match="the new tokens hold over"):
        ByteLevelBPE(pattern="none").train("ab" * 5_000 + "cd" * 5_000, 280)
    chain = [[256 + k - 1 if k else 97, 97, 256 + k] for k in range(200)]  # a, aa, aaa, ...
    with pytest.raises(TokenizerError, match="bytes of tokens"):
        ByteLevelBPE(merges=chain)


def test_a_random_corpus_upload_gets_a_bounded_bpe_and_messages(monkeypatch):
    monkeypatch.setattr(ByteLevelBPE, "limits", TrainLimits(chunk_bytes=40_000))
    monkeypatch.setattr(SymbolTokenizer, "max_distinct", 20_000)
    at = app_test("tokenizers")
    at.session_state["corpus"] = "Upload a .txt file…"
    rerun(at)
    at.sidebar.file_uploader(key="upload").upload("noise.txt", random_unicode(40_000).encode(),
                                                  "text/plain")
    rerun(at)
    assert "BPE learned its merges from the first" in texts(at.sidebar, "warning")
    errors = texts(at.sidebar, "error")  # ~39,000 different characters: no char/word vocabulary
    assert "Character tokenizer: the corpus has more than 20,000 different characters" in errors
    assert "Word tokenizer: the corpus has more than 20,000 different words" in errors
    assert 'class="gv-chip' in "".join(h.value for h in at.get("html"))  # BPE's chips


@pytest.mark.parametrize("kind", ["char", "word"])
def test_symbol_vocabularies_stop_counting_past_their_bound(kind):
    """Random data has a new symbol at every step; training stops early with a message,
    while the counts are still small, instead of holding hundreds of MB."""
    tok = make_tokenizer(kind)
    text = " ".join(random_unicode(60_000)) if kind == "word" else random_unicode(60_000)
    with pytest.raises(TokenizerError, match="more than 50,000 different"):
        tok.train(text)
    real = "a real text, with real words, and a real text again"
    counts = tok.train(real)  # real text is fine, and counted exactly
    assert sum(counts.values()) == (len(real) if kind == "char" else len(real.split()) * 2 - 1
                                    + real.count(","))
