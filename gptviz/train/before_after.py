"""Before vs after training: the same prompt through an untrained and a trained model.

>>> from gptviz.checkpoints.folder import initial_model
>>> before = continuation(initial_model(model.config, 1337), tokenizer, "abc", 4)
>>> before.n_prompt_tokens, round(before.prompt_loss, 2)   # ln 10 = 2.30: a uniform guess
(3, 2.18)

"After" is ``continuation`` of the trained model: same prompt, same sampling seed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from gptviz.generation.sampling import encode_prompt, generate
from gptviz.model import GPT
from gptviz.tokenizers.base import Tokenizer
from gptviz.tokenizers.readable import readable_decode


@dataclass(frozen=True)
class Continuation:
    text: str  # what the model wrote after the prompt (unfinished characters as ‹e2 80›)
    prompt_loss: float  # mean cross-entropy of the prompt's own next tokens (nan if < 2 tokens)
    n_prompt_tokens: int
    cropped: int  # prompt tokens dropped to fit the context window


@torch.no_grad()
def prompt_loss(model: GPT, ids: list[int]) -> float:
    """Mean −ln P(t_{i+1} | t_1..t_i) over the prompt: how surprised the model is by it.

    >>> prompt_loss(model, [5])        # one token predicts nothing
    nan
    """
    ids = ids[-(model.config.context_length + 1):]
    if len(ids) < 2:
        return math.nan
    x = torch.tensor([ids[:-1]], device=model.device)  # (1, n-1)
    logits = model(x)[0].float()  # (n-1, |V|)
    return float(F.cross_entropy(logits, torch.tensor(ids[1:], device=model.device)))


def continuation(model: GPT, tokenizer: Tokenizer, prompt: str, max_new_tokens: int = 80,
                 temperature: float = 0.8, seed: int = 0) -> Continuation:
    """The prompt's loss and a sampled continuation (fixed seed, so runs compare fairly)."""
    ids = encode_prompt(tokenizer, prompt)
    cropped = max(0, len(ids) - model.config.context_length)
    out = generate(model, ids, max_new_tokens, temperature=temperature, seed=seed)
    return Continuation(readable_decode(tokenizer, out[len(ids):]), prompt_loss(model, ids),
                        len(ids), cropped)
