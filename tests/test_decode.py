"""The lean decode step (``gptviz.model.decode``) gives the module path's logits bit for bit,
for every model option, and steps aside wherever the module path must run."""

from __future__ import annotations

import pytest
import torch

from gptviz.generation.sampling import generate
from gptviz.model import GPT, GPTConfig, hooks
from gptviz.model.decode import Decoder

VARIANTS = [
    dict(positional="learned"),
    dict(positional="sinusoidal", bias=True, activation="gelu_tanh", tie_embeddings=False),
    dict(positional="none", activation="relu"),
    dict(positional="rope", bias=False),
    dict(positional="rope", bias=True, activation="gelu_tanh"),
]


def model_of(**options) -> GPT:
    torch.manual_seed(0)
    config = GPTConfig(vocab_size=23, context_length=8, d_model=16, n_layer=2, n_head=2,
                       **options)
    model = GPT(config).eval()
    with torch.no_grad():  # LayerNorm's λ and b away from 1 and 0, so that they count
        for p in model.parameters():
            p.add_(0.1 * torch.randn_like(p))
    return model


@pytest.mark.parametrize("options", VARIANTS, ids=lambda o: "-".join(map(str, o.values())))
@torch.inference_mode()
def test_step_equals_the_module_path_bit_for_bit(options):
    model = model_of(**options)
    ids = torch.randint(0, 23, (1, 30), generator=torch.Generator().manual_seed(1)).tolist()[0]
    steps = 30 if model.config.rope else 8 - 3  # a RoPE cache rolls past the window
    lean, modules = model.new_cache(), model.new_cache()
    prompt = torch.tensor([ids[:3]])
    model._forward(prompt, lean), model._forward(prompt, modules)
    decoder = Decoder.of(model)
    assert decoder is not None
    for token in ids[3:3 + steps]:
        want = model._forward(torch.tensor([[token]]), modules, last_only=True)[0, -1]
        got = decoder.step(token, lean)
        assert torch.equal(got, want)
        assert (lean.position, lean.length) == (modules.position, modules.length)
    assert torch.equal(lean.kv, modules.kv)


def test_generate_gives_the_same_tokens_with_and_without_the_decoder(monkeypatch):
    model = model_of(positional="rope")
    fast = generate(model, [1, 2], 40, temperature=0.9, seed=3)
    monkeypatch.setattr(Decoder, "of", classmethod(lambda cls, m: None))
    assert generate(model, [1, 2], 40, temperature=0.9, seed=3) == fast


def test_the_module_path_runs_wherever_it_must():
    model = model_of(positional="learned")
    with torch.inference_mode():
        assert Decoder.of(model) is not None
        with hooks(model, [("hook_logits", lambda x, name: None)]):
            assert Decoder.of(model) is None  # a page's capture sees every activation
    assert Decoder.of(model) is None  # autograd on
    dropping = GPT(GPTConfig(vocab_size=23, context_length=8, d_model=16, n_layer=1,
                             n_head=2, dropout=0.1))
    with torch.inference_mode():
        assert Decoder.of(dropping.train()) is None  # dropout active
        assert Decoder.of(dropping.eval()) is not None
        assert Decoder.of(model.to(torch.bfloat16)) is None  # bf16 attention is float32 on CPU
