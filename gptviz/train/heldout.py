"""Held-out loss over a whole text, per token and per character.

A loss per token depends on the tokenizer: a BPE token carries several characters, a
character token one. Per character, models with different tokenizers compare:

    nats/char = (Σ over the held-out tokens of −log P(token)) / (characters of the text)

The text is cut into windows of ``context_length + 1`` tokens that overlap by one, so
that every token but the first is predicted exactly once.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F

from gptviz.model import GPT
from gptviz.tokenizers.base import Tokenizer


@dataclass(frozen=True)
class HeldOut:
    nats_per_token: float
    nats_per_char: float
    tokens: int  # tokens predicted
    chars: int  # characters of the held-out text

    def to_dict(self) -> dict:
        return asdict(self)


@torch.no_grad()
def held_out_loss(model: GPT, tokenizer: Tokenizer, text: str, batch_size: int = 32) -> HeldOut:
    """Cross-entropy of ``model`` on every token of ``text`` but the first.

    >>> from gptviz.tokenizers import CharTokenizer
    >>> tok = CharTokenizer(); _ = tok.train("0123456789")
    >>> r = held_out_loss(model, tok, "0123456789" * 3)
    >>> r.tokens, r.chars, abs(r.nats_per_char * r.chars - r.nats_per_token * r.tokens) < 1e-9
    (29, 30, True)
    """
    ids = torch.tensor(tokenizer.encode(text), dtype=torch.long)
    if ids.numel() < 2:
        raise ValueError("the held-out text holds fewer than two tokens.")
    n = model.config.context_length
    starts = list(range(0, ids.numel() - 1, n))
    was_training = model.training
    model.eval()
    total, count = 0.0, 0
    for b in range(0, len(starts), batch_size):
        chunk = [ids[s:s + n + 1] for s in starts[b:b + batch_size]]
        for length in sorted({c.numel() for c in chunk}):  # the last window may be shorter
            same = torch.stack([c for c in chunk if c.numel() == length])  # (B, length)
            logits = model(same[:, :-1])  # (B, length - 1, |V|)
            loss = F.cross_entropy(logits.float().flatten(0, 1), same[:, 1:].flatten(),
                                   reduction="sum")
            total += loss.item()
            count += same[:, 1:].numel()
    model.train(was_training)
    return HeldOut(total / count, total / len(text), count, len(text))
