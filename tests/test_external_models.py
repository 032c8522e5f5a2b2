"""Models from elsewhere: Hugging Face GPT-2 folders and nanoGPT checkpoints give the same
numbers as their own code, and hostile or broken files are refused with a clear message.

Parity is against ``transformers`` (a test dependency only): random GPT2LMHeadModels of
several shapes, their weights drawn large enough that every parameter moves the logits,
saved with safetensors. nanoGPT's side is a forward pass written here from its model.py.
"""

from __future__ import annotations

import json
import os
import pickle

import pytest
import torch
import torch.nn.functional as F

from gptviz.checkpoints.folder import CheckpointError, Limits, load_checkpoint
from gptviz.checkpoints.gpt2_weights import save_hf_gpt2
from gptviz.checkpoints.nanogpt import NanoCharTokenizer
from gptviz.model import GPTConfig, act_name
from gptviz.tokenizers import TokenizerError

SHAPES = {  # name: GPT2Config fields (besides vocab_size)
    "3 heads of 4, tied": dict(n_layer=2, n_head=3, n_embd=12, n_positions=16),
    "one layer, untied, d_ff 20, eps 1e-3": dict(
        n_layer=1, n_head=5, n_embd=20, n_positions=12, n_inner=20, tie_word_embeddings=False,
        layer_norm_epsilon=1e-3),
    "exact GELU, padded vocabulary": dict(n_layer=2, n_head=2, n_embd=8, n_positions=10,
                                          activation_function="gelu", vocab_size=50304),
}
IDS = torch.tensor([[464, 3139, 286, 4881, 318, 6342, 13, 50256, 0, 1]])  # (1, 10)


def _transformers():
    """transformers (requirements-dev.txt), offline; CI fails rather than skips without it."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if os.environ.get("CI"):
        import transformers

        return transformers
    return pytest.importorskip("transformers")


def _hf_model(seed: int, **fields):
    transformers, _ = _transformers(), torch.manual_seed(seed)
    model = transformers.GPT2LMHeadModel(transformers.GPT2Config(**{"vocab_size": 50257,
                                                                    **fields})).eval()
    with torch.no_grad():  # N(0, 0.3): every weight and bias, LayerNorms included, matters
        for p in model.parameters():
            p.normal_(0.0, 0.3)
    return model


@pytest.fixture(scope="module")
def hf_folders(tmp_path_factory):
    out = {}
    for i, (name, fields) in enumerate(SHAPES.items()):
        model = _hf_model(i, **fields)
        folder = tmp_path_factory.mktemp(f"hf{i}")
        model.save_pretrained(folder, safe_serialization=True)
        with torch.no_grad():
            hf = model(IDS, output_hidden_states=True)
        out[name] = (folder, hf.logits[..., :50257], hf.hidden_states, model)
    return out


@pytest.mark.parametrize("shape", SHAPES)
def test_logits_and_residual_stream_equal_transformers(hf_folders, shape):
    folder, logits, hidden, _ = hf_folders[shape]
    ckpt = load_checkpoint(folder)
    n_layer = ckpt.config.n_layer
    ours, cache = ckpt.model.run_with_cache(IDS)
    torch.testing.assert_close(ours, logits, atol=1e-4, rtol=0)
    torch.testing.assert_close(ckpt.model(IDS), logits, atol=1e-4, rtol=0)  # the fused path
    assert ckpt.model.config.activation == ("gelu" if "exact" in shape else "gelu_tanh")
    torch.testing.assert_close(cache["hook_embed"] + cache["hook_pos_embed"], hidden[0],
                               atol=1e-5, rtol=0)
    for layer in range(n_layer - 1):  # transformers' last hidden state is after ln_f
        torch.testing.assert_close(cache[act_name("resid_post", layer)], hidden[layer + 1],
                                   atol=1e-4, rtol=0)
    torch.testing.assert_close(cache["ln_final.hook_normalized"], hidden[n_layer],
                               atol=1e-4, rtol=0)
    assert ckpt.tokenizer.encode("The capital of France is") == [464, 3139, 286, 4881, 318]
    assert ("50,304" in ckpt.card["note"]) == ("padded" in shape)


def test_the_parity_test_sees_a_swap_of_two_heads(hf_folders):
    folder, logits, _, _ = hf_folders["3 heads of 4, tied"]
    model = load_checkpoint(folder).model
    with torch.no_grad():  # W_Q of heads 0 and 1 exchanged: what a wrong split would do
        w = model.blocks[0].attn.W_QKV.weight
        w[:4], w[4:8] = w[4:8].clone(), w[:4].clone()
    assert (model(IDS) - logits).abs().max() > 1e-2


def test_the_hub_layout_reads_the_same(tmp_path, hf_folders):
    """gpt2's own model.safetensors: no "transformer." prefix, the causal masks saved."""
    from safetensors.torch import load_file, save_file

    folder, logits, _, _ = hf_folders["3 heads of 4, tied"]
    tensors = {k.removeprefix("transformer."): v for k, v in
               load_file(folder / "model.safetensors").items()}
    for i in range(2):
        tensors[f"h.{i}.attn.bias"] = torch.ones(1, 1, 16, 16).tril()
        tensors[f"h.{i}.attn.masked_bias"] = torch.tensor(-1e4)
    save_file(tensors, tmp_path / "model.safetensors")
    (tmp_path / "config.json").write_bytes((folder / "config.json").read_bytes())
    torch.testing.assert_close(load_checkpoint(tmp_path).model(IDS), logits, atol=1e-4, rtol=0)


def test_our_export_loads_in_transformers_with_the_same_logits(tmp_path, hf_folders):
    transformers = _transformers()
    ours = load_checkpoint(hf_folders["one layer, untied, d_ff 20, eps 1e-3"][0]).model
    save_hf_gpt2(tmp_path, ours)
    theirs = transformers.GPT2LMHeadModel.from_pretrained(tmp_path).eval()
    with torch.no_grad():
        torch.testing.assert_close(theirs(IDS).logits, ours(IDS), atol=1e-4, rtol=0)


# ---- nanoGPT -------------------------------------------------------------------------------

def _nanogpt_state(hf_model, bias: bool = True) -> dict[str, torch.Tensor]:
    """The HF model's weights in nanoGPT's names and nn.Linear orientation, as a compiled
    run saves them (``_orig_mod.``), with the causal-mask buffer of a run without flash."""
    sd = {}
    for k, v in hf_model.state_dict().items():
        if k.endswith(".attn.bias") or (not bias and k.endswith(".bias")):
            continue
        if k.endswith(".weight") and v.dim() == 2 and ".h." in k:
            v = v.t()  # Conv1D (in, out) -> nn.Linear (out, in)
        sd["_orig_mod." + k] = v.clone()
    sd["_orig_mod.lm_head.weight"] = sd["_orig_mod.transformer.wte.weight"]
    sd["_orig_mod.transformer.h.0.attn.bias"] = torch.ones(1, 1, 8, 8).tril()
    return sd


def _nanogpt_forward(sd: dict[str, torch.Tensor], n_layer: int, n_head: int, ids):
    """nanoGPT's GPT.forward (model.py) for every position, from the state dict."""
    w = {k.removeprefix("_orig_mod.").removeprefix("transformer."): v for k, v in sd.items()}

    def ln(x, name):
        return F.layer_norm(x, x.shape[-1:], w[f"{name}.weight"], w.get(f"{name}.bias"), 1e-5)

    def linear(x, name):
        return F.linear(x, w[f"{name}.weight"], w.get(f"{name}.bias"))

    x = w["wte.weight"][ids] + w["wpe.weight"][: ids.shape[1]]
    B, T, C = x.shape
    for i in range(n_layer):
        q, k, v = linear(ln(x, f"h.{i}.ln_1"), f"h.{i}.attn.c_attn").split(C, dim=2)
        q, k, v = (t.view(B, T, n_head, C // n_head).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + linear(y.transpose(1, 2).reshape(B, T, C), f"h.{i}.attn.c_proj")
        h = F.gelu(linear(ln(x, f"h.{i}.ln_2"), f"h.{i}.mlp.c_fc"))  # nn.GELU(): exact
        x = x + linear(h, f"h.{i}.mlp.c_proj")
    return F.linear(ln(x, "ln_f"), w["lm_head.weight"])


def _save_ckpt(path, sd, vocab_size: int, bias: bool, n_layer=2, n_head=2, n_embd=8, **extra):
    args = dict(n_layer=n_layer, n_head=n_head, n_embd=n_embd, block_size=10, bias=bias,
                vocab_size=vocab_size, dropout=0.0)  # and what else nanoGPT's train.py saves:
    torch.save({"model": sd, "model_args": args, "iter_num": 5, "best_val_loss":
                torch.tensor(3.5), "config": {"dataset": "shakespeare_char"}, **extra}, path)


@pytest.mark.parametrize("bias", [True, False])
def test_nanogpt_ckpt_gives_the_same_logits(hf_folders, tmp_path, bias):
    folder, logits, _, hf = hf_folders["exact GELU, padded vocabulary"]
    sd = _nanogpt_state(hf, bias)
    _save_ckpt(tmp_path / "ckpt.pt", sd, 50304, bias, optimizer={"state": {}})
    ckpt = load_checkpoint(tmp_path)  # the folder; the file itself works too
    want = _nanogpt_forward(sd, 2, 2, IDS)[..., :50257]
    torch.testing.assert_close(ckpt.model(IDS), want, atol=1e-4, rtol=0)
    if bias:
        torch.testing.assert_close(want, logits, atol=1e-4, rtol=0)
    assert ckpt.config.bias is bias and ckpt.config.activation == "gelu"
    assert ckpt.config.vocab_size == 50257 and "padding" in ckpt.card["note"]
    assert load_checkpoint(tmp_path / "ckpt.pt").config == ckpt.config


def test_nanogpt_character_model_reads_its_meta_pkl(tmp_path):
    chars = sorted(set("First Citizen:\nBefore we proceed any further, hear me speak."))
    torch.manual_seed(0)
    n = len(chars)
    sd = {"transformer.wte.weight": torch.randn(n, 8), "transformer.wpe.weight":
          torch.randn(10, 8), "transformer.ln_f.weight": torch.randn(8)}
    for i in range(2):
        for name, shape in [("ln_1", (8,)), ("attn.c_attn", (24, 8)), ("attn.c_proj", (8, 8)),
                            ("ln_2", (8,)), ("mlp.c_fc", (32, 8)), ("mlp.c_proj", (8, 32))]:
            sd[f"transformer.h.{i}.{name}.weight"] = torch.randn(shape) * 0.5
    sd["lm_head.weight"] = sd["transformer.wte.weight"]
    data = tmp_path / "data" / "shakespeare_char"
    data.mkdir(parents=True)
    meta = {"vocab_size": n, "itos": dict(enumerate(chars)), "stoi": {c: i for i, c in
            enumerate(chars)}}
    (data / "meta.pkl").write_bytes(pickle.dumps(meta))
    (tmp_path / "out").mkdir()
    _save_ckpt(tmp_path / "out" / "ckpt.pt", sd, n, bias=False)
    ckpt = load_checkpoint(tmp_path / "out")
    ids = ckpt.tokenizer.encode("hear me")
    assert ids == [meta["stoi"][c] for c in "hear me"]
    assert isinstance(ckpt.tokenizer, NanoCharTokenizer) and ckpt.tokenizer.vocab_size == n
    torch.testing.assert_close(ckpt.model(ids)[0], _nanogpt_forward(sd, 2, 2,
                               torch.tensor([ids]))[0], atol=1e-4, rtol=0)
    with pytest.raises(TokenizerError, match="characters"):
        ckpt.tokenizer.encode("hear me 2")  # '2' is not in the vocabulary


# ---- hostile and broken files ---------------------------------------------------------------

class _Evil:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


@pytest.mark.filterwarnings("ignore:Detected pickle protocol")
def test_a_ckpt_or_meta_with_a_global_is_refused_and_nothing_runs(tmp_path):
    marker = tmp_path / "ran"
    torch.save({"model": {}, "model_args": {}, "payload": _Evil(marker)}, tmp_path / "ckpt.pt")
    with pytest.raises(CheckpointError, match="system.*nothing in it ran"):
        load_checkpoint(tmp_path / "ckpt.pt")
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "ckpt.pt").write_bytes(pickle.dumps(_Evil(marker)))  # a bare pickle, no zip
    with pytest.raises(CheckpointError, match="nothing in it ran"):
        load_checkpoint(raw)
    (tmp_path / "meta.pkl").write_bytes(pickle.dumps({"itos": _Evil(marker)}))
    sd = {"transformer.wte.weight": torch.zeros(5, 8)}
    _save_ckpt(tmp_path / "ckpt.pt", sd, vocab_size=5, bias=False)
    with pytest.raises(CheckpointError, match="meta.pkl was refused.*system.*nothing in it ran"):
        load_checkpoint(tmp_path)
    assert not marker.exists()


def test_pytorch_model_bin_alone_is_refused_with_the_conversion(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "gpt2"}))
    torch.save({"wte.weight": torch.zeros(2, 2)}, tmp_path / "pytorch_model.bin")
    with pytest.raises(CheckpointError, match=r"pickle.*never.*save_file\(") as exc:
        load_checkpoint(tmp_path)
    assert "huggingface-cli download gpt2 config.json model.safetensors" in str(exc.value)
    with pytest.raises(CheckpointError, match="pickle"):
        load_checkpoint(tmp_path / "pytorch_model.bin")


@pytest.mark.parametrize("model_type, name", [("llama", "LLaMA"), ("bert", "BERT")])
def test_another_architecture_is_named_as_unsupported(tmp_path, model_type, name):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": model_type}))
    (tmp_path / "model.safetensors").write_bytes(b"")
    with pytest.raises(CheckpointError, match=f"describes a {name} model.*not support"):
        load_checkpoint(tmp_path)


def test_missing_files_and_mismatched_shapes_get_clear_messages(tmp_path, hf_folders):
    folder = hf_folders["3 heads of 4, tied"][0]
    broken = tmp_path / "gpt2"
    broken.mkdir()
    config = json.loads((folder / "config.json").read_text())
    (broken / "config.json").write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match="no model.safetensors: download it"):
        load_checkpoint(broken)
    (broken / "model.safetensors").write_bytes((folder / "model.safetensors").read_bytes())
    (broken / "config.json").write_text(json.dumps({**config, "n_embd": 24}))
    with pytest.raises(CheckpointError, match=r"h.0.ln_1.weight has shape \(12,\) but the "
                                              r"config implies \(24,\)"):
        load_checkpoint(broken)
    (broken / "config.json").write_text(json.dumps({**config, "n_layer": 3}))
    with pytest.raises(CheckpointError, match=r"missing \['h.2.attn.c_attn.bias'"):
        load_checkpoint(broken)
    (broken / "model.safetensors").write_bytes(b"not safetensors at all")
    (broken / "config.json").write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match="not a readable safetensors file"):
        load_checkpoint(broken)
    with pytest.raises(CheckpointError, match="limit here is 1,000"):
        load_checkpoint(folder, limits=Limits(params=1_000))


def test_ln_eps_round_trips_and_old_configs_still_read():
    old = GPTConfig(vocab_size=10).to_dict()
    assert "ln_eps" not in old and GPTConfig.from_dict(old).ln_eps == 1e-5
    odd = GPTConfig(vocab_size=10, ln_eps=1e-3, activation="gelu_tanh")
    assert GPTConfig.from_dict(odd.to_dict()) == odd
    with pytest.raises(ValueError, match="ln_eps"):
        GPTConfig(vocab_size=10, ln_eps=0.0)
