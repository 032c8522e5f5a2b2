"""Checkpoints: round trips (folder and zip) and a clear error for every bad file."""

from __future__ import annotations

import io
import json
import pickle
import zipfile

import pytest
import torch
from safetensors.torch import save as save_safetensors

from gptviz.checkpoints.folder import (
    CheckpointError,
    Limits,
    checkpoint_files,
    checkpoint_from_files,
    checkpoint_to_zip,
    load_checkpoint,
    load_checkpoint_zip,
    save_checkpoint,
)
from gptviz.model import GPT, GPTConfig
from gptviz.tokenizers.char import CharTokenizer


def make(tie: bool = True) -> tuple[GPT, CharTokenizer]:
    tok = CharTokenizer()
    tok.train("hello world")
    torch.manual_seed(0)
    config = GPTConfig(vocab_size=tok.vocab_size, context_length=8, d_model=16, n_layer=1,
                       n_head=2, tie_embeddings=tie, positional="sinusoidal")
    return GPT(config).eval(), tok


@pytest.mark.parametrize("tie", [True, False])
def test_folder_round_trip(tmp_path, tie):
    model, tok = make(tie)
    folder = save_checkpoint(tmp_path / "ck", model, tok, {"corpus": "hello", "steps": 0})
    assert sorted(p.name for p in folder.iterdir()) == [
        "card.json", "config.json", "model.safetensors", "tokenizer.json"]
    ck = load_checkpoint(folder)
    ids = tok.encode("hello")
    torch.testing.assert_close(ck.model(ids), model(ids))
    assert ck.config == model.config and ck.card == {"corpus": "hello", "steps": 0}
    assert ck.tokenizer.decode(ck.tokenizer.encode("hello")) == "hello"
    assert not ck.model.training
    if tie:
        assert ck.model.unembed.weight is ck.model.embed.weight


def test_zip_round_trip_at_root_or_in_a_folder():
    model, tok = make()
    data = checkpoint_to_zip(model, tok, {"steps": 3})
    assert load_checkpoint_zip(data).card == {"steps": 3}
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf, zipfile.ZipFile(io.BytesIO(data)) as src:
        for name in src.namelist():
            zf.writestr(f"my-model/{name}", src.read(name))
    torch.testing.assert_close(load_checkpoint_zip(buffer.getvalue()).model([1, 2]), model([1, 2]))


def files() -> dict[str, bytes]:
    model, tok = make()
    return checkpoint_files(model, tok, {})


def broken(**changes: bytes | None) -> dict[str, bytes]:
    out = files()
    for name, data in changes.items():
        name = name.replace("_", ".")
        if data is None:
            out.pop(name)
        else:
            out[name] = data
    return out


def config_with(**kw) -> bytes:
    return json.dumps({**json.loads(files()["config.json"]), **kw}).encode()


@pytest.mark.parametrize("bad,message", [
    (dict(model_safetensors=None), "lacks model.safetensors"),
    (dict(config_json=b"{not json"), "config.json is not valid UTF-8 JSON"),
    (dict(config_json=b"[1, 2]"), "config.json is not a valid model config"),
    (dict(config_json=config_with(n_embd=3)), "unknown field"),
    (dict(config_json=config_with(d_model=15)), "divisible by n_head"),
    (dict(config_json=config_with(vocab_size=99)), "tokenizer.json has 12 ids but config.json"),
    (dict(config_json=config_with(d_model=32)),
     r"model.safetensors: \S+ has shape \(.*\) but config.json implies"),
    (dict(config_json=config_with(n_layer=2)), "missing \\['blocks.1"),
    (dict(config_json=config_with(n_layer=10**6)), "parameters; the limit"),
    (dict(tokenizer_json=b'{"type": "alien"}'), "unknown tokenizer 'type'"),
    (dict(card_json=b"[]"), "card.json must hold a JSON object"),
    (dict(model_safetensors=b"garbage bytes"), "not a valid safetensors file"),
    (dict(model_safetensors=save_safetensors({"x": torch.zeros(2)})), "unexpected \\['x'\\]"),
])
def test_bad_files_name_the_problem(bad, message):
    with pytest.raises(CheckpointError, match=message):
        checkpoint_from_files(broken(**bad))


def test_nan_and_integer_weights_are_rejected():
    model, tok = make()
    with torch.no_grad():
        model.embed.weight[0, 0] = float("nan")
    with pytest.raises(CheckpointError, match="NaN"):
        checkpoint_from_files(checkpoint_files(model, tok))
    weights = {k: v.long() for k, v in model.state_dict().items() if k != "unembed.weight"}
    with pytest.raises(CheckpointError, match="must be floats"):
        checkpoint_from_files(broken(model_safetensors=save_safetensors(weights)))


class Boom:
    """Unpickling this would create a file: proof that nothing is unpickled."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_pickles_are_refused_not_loaded(tmp_path):
    marker = tmp_path / "pwned"
    for data in (pickle.dumps(Boom(str(marker))), _torch_save_bytes()):
        with pytest.raises(CheckpointError, match="never unpickles"):
            checkpoint_from_files(broken(model_safetensors=data))
    assert not marker.exists()


def _torch_save_bytes() -> bytes:
    buffer = io.BytesIO()
    torch.save({"embed.weight": torch.zeros(2)}, buffer)
    return buffer.getvalue()


def test_bad_uploads(tmp_path):
    with pytest.raises(CheckpointError, match="not a .zip file"):
        load_checkpoint_zip(b"plain text")
    empty = io.BytesIO()
    with zipfile.ZipFile(empty, "w") as zf:
        zf.writestr("notes.txt", "hi")
    missing = "lacks model.safetensors, config.json, tokenizer.json"
    with pytest.raises(CheckpointError, match=missing):
        load_checkpoint_zip(empty.getvalue())
    model, tok = make()
    with pytest.raises(CheckpointError, match="unpack to"):
        load_checkpoint_zip(checkpoint_to_zip(model, tok), Limits(bytes=100))
    with pytest.raises(CheckpointError, match="not a checkpoint folder"):
        load_checkpoint(tmp_path / "nowhere")


def test_tokenizer_and_model_must_agree_when_saving(tmp_path):
    model, _ = make()
    other = CharTokenizer()
    other.train("xyz")
    with pytest.raises(CheckpointError, match="vocab_size"):
        save_checkpoint(tmp_path, model, other)
