"""The bundled models load, are small, are documented, and are good at what they
were trained for (loss on held-out text, real words, induction heads)."""

from __future__ import annotations

import json
import math
import random
import re
import shutil
import string

import pytest
import torch

from gptviz.analysis.induction import standard_induction
from gptviz.checkpoints.folder import (
    DEFAULT_MODEL,
    MODELS_DIR,
    CheckpointError,
    bundled_models,
    load_checkpoint,
)
from gptviz.data import split_text
from gptviz.generation.sampling import generate
from gptviz.model.names import act_name
from gptviz.tokenizers import ByteLevelBPE, CharTokenizer
from gptviz.train.heldout import held_out_loss

NAMES = ["mathematics-char", "mathematics-bpe", "induction-2layer"]
# Held-out loss per character each model must reach, on every token of the corpus's last
# 10 % (gptviz.train.heldout; neither the model nor its tokenizer saw that part). Per
# character, so that tokenizers compare. Issue 12's target is 1.45 for both.
MAX_NATS_PER_CHAR = {"mathematics-char": 1.45, "mathematics-bpe": 1.45}
PROMPT = "The Steenrod problem for closed orientable"


@pytest.fixture(scope="module")
def models():
    return {name: load_checkpoint(MODELS_DIR / name) for name in NAMES}


def test_three_models_are_bundled_and_small():
    assert set(bundled_models()) == set(NAMES)
    assert DEFAULT_MODEL in NAMES
    for name in NAMES:  # the model itself <= 5 MB; its training snapshots <= 2 MB more
        files = {f.name: f.stat().st_size for f in (MODELS_DIR / name).iterdir()}
        snapshots = files.pop("snapshots.safetensors", 0)
        assert sum(files.values()) <= 5_000_000, f"{name} is {sum(files.values()) / 1e6:.1f} MB"
        assert snapshots <= 2 * 2**20, f"{name}'s snapshots take {snapshots / 1e6:.1f} MB"


@pytest.mark.parametrize("name", NAMES)
def test_cards_record_how_the_model_was_made(models, name):
    card = models[name].card
    for key in ("corpus", "tokenizer", "model_config", "steps", "final_train_loss",
                "final_val_loss", "final_val_perplexity", "wall_time_s", "date", "recipe"):
        assert key in card, key
    assert card["final_val_perplexity"] == pytest.approx(math.exp(card["final_val_loss"]))
    assert card["model_config"] == models[name].config.to_dict()


@pytest.mark.parametrize("name", ["mathematics-char", "mathematics-bpe"])
def test_held_out_loss_per_character_is_below_the_target_and_as_the_card_says(models, name):
    text = (MODELS_DIR.parent / "corpora" / "mathematics.txt").read_text(encoding="utf-8")
    _, val = split_text(text, 0.1)
    held = held_out_loss(models[name].model, models[name].tokenizer, val)
    card = models[name].card["held_out"]
    assert held.nats_per_char == pytest.approx(card["nats_per_char"], abs=1e-4)
    assert held.nats_per_token == pytest.approx(card["nats_per_token"], abs=1e-4)
    assert held.nats_per_char <= MAX_NATS_PER_CHAR[name], f"{name}: {held}"


def test_the_bpe_tokenizer_learned_from_the_training_part_only(models):
    """Its merges are those of BPE trained on the first 90 % of the corpus."""
    text = (MODELS_DIR.parent / "corpora" / "mathematics.txt").read_text(encoding="utf-8")
    train, _ = split_text(text, 0.1)
    bpe = models["mathematics-bpe"].tokenizer
    again = ByteLevelBPE()
    again.train(train, bpe.vocab_size)
    assert again.to_dict() == bpe.to_dict()


@pytest.mark.parametrize("name", ["mathematics-char", "mathematics-bpe"])
def test_greedy_continuation_is_made_of_corpus_words(models, name):
    ckpt = models[name]
    corpus = (MODELS_DIR.parent / "corpora" / "mathematics.txt").read_text()
    vocabulary = set(re.findall(r"[A-Za-z]+", corpus))
    ids = ckpt.tokenizer.encode(PROMPT)
    out = generate(ckpt.model, ids, max_new_tokens=40 if name.endswith("char") else 15,
                   temperature=0)
    text = ckpt.tokenizer.decode(out[len(ids):])
    words = re.findall(r"[A-Za-z]+", text)[:-1]  # the last word may be cut off
    assert len(words) >= 3, text
    unknown = [w for w in words if w not in vocabulary]
    assert not unknown, f"{text!r}: {unknown}"


def own_format_score(ckpt, n_lines: int = 40, length: int = 10, seed: int = 12345) -> float:
    """The model's own format: the best head's mean attention from each token of the repeat
    to the token that followed its first occurrence, on fresh random lines "r|r"."""
    rng = random.Random(seed)
    model, tok = ckpt.model, ckpt.tokenizer
    scores = []
    for _ in range(n_lines):
        r = "".join(rng.choice(string.ascii_lowercase) for _ in range(length))
        ids = tok.encode(f"{r}|{r}\n")
        _, cache = model.run_with_cache(ids)
        per_head = []
        for layer in range(model.config.n_layer):
            pattern = cache[act_name("pattern", layer)][0]  # (H, T, T)
            # token k of the repeat sits at length+1+k; its first copy's successor at k+1
            rows = [length + 1 + k for k in range(length)]
            cols = [k + 1 for k in range(length)]
            per_head.append(pattern[:, rows, cols].mean(dim=1))  # (H,)
        scores.append(torch.stack(per_head))  # (L, H)
    return torch.stack(scores).mean(dim=0).max().item()


def test_the_induction_model_passes_the_standard_induction_test(models):
    """gptviz.analysis.induction's protocol: random letters and digits repeated once, no separator,
    lengths 10 and 20: the best head scores >= 0.5 and the repeat is copied >= 90 %."""
    ckpt = models["induction-2layer"]
    results = standard_induction(ckpt.model, ckpt.tokenizer)
    assert [r.length for r in results] == [10, 20]
    for r in results:
        assert r.best[2] >= 0.5, (r.length, r.best)
        assert r.copy_accuracy >= 0.9, (r.length, r.copy_accuracy)
    recorded = ckpt.card["induction"]["results"]
    assert [round(r.best[2], 4) for r in results] == [x["score"] for x in recorded]


def test_the_induction_model_has_an_induction_head_in_its_own_format(models):
    assert own_format_score(models["induction-2layer"]) >= 0.5


def test_an_untrained_model_has_no_induction_head(models):
    from gptviz.model import GPT

    torch.manual_seed(0)
    fresh = GPT(models["induction-2layer"].config).eval()
    tok = models["induction-2layer"].tokenizer
    for r in standard_induction(fresh, tok):
        assert r.best[2] < 0.3 and r.copy_accuracy < 0.2


def test_tokenizers_match_their_kind(models):
    assert isinstance(models["mathematics-char"].tokenizer, CharTokenizer)
    bpe = models["mathematics-bpe"].tokenizer
    assert isinstance(bpe, ByteLevelBPE) and 1024 <= bpe.vocab_size <= 2048


def test_a_corrupted_model_is_named_and_the_others_still_load(tmp_path, monkeypatch):
    for name in NAMES:
        shutil.copytree(MODELS_DIR / name, tmp_path / name)
    (tmp_path / "mathematics-char" / "model.safetensors").write_bytes(b"\x80\x04garbage")
    (tmp_path / "induction-2layer" / "config.json").write_text("{not json")
    with pytest.raises(CheckpointError, match="model.safetensors"):
        load_checkpoint(tmp_path / "mathematics-char")
    with pytest.raises(CheckpointError, match="config.json"):
        load_checkpoint(tmp_path / "induction-2layer")
    assert load_checkpoint(tmp_path / "mathematics-bpe").config.vocab_size > 256
    cards = json.loads((tmp_path / "mathematics-bpe" / "card.json").read_text())
    assert cards["tokenizer"] == "bpe"
