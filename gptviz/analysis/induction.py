"""The standard induction test: random tokens, repeated once, no separator.

This is the test of Olsson et al. (2022), "In-context learning and induction heads",
as TransformerLens's tutorials run it, without the BOS token our models never saw:

- draw ``L`` tokens ``r`` uniformly from the model's ordinary tokens (here: the
  vocabulary entries made only of letters and digits; special tokens, spaces,
  newlines and punctuation are left out, so that no separator sneaks in);
- feed ``r r`` (``2L`` tokens, no separator);
- the **induction score** of a head is its mean attention from each position ``i`` of
  the repeat (``L ≤ i < 2L``) to position ``i − L + 1``, the token that followed the
  earlier copy of the current token;
- the **copy accuracy** is the share of the repeat's tokens ``r_1 … r_{L−1}`` the model
  predicts with its top-1 guess (the first token of the repeat cannot be known).

Scores are averaged over ``n`` sequences from a fixed seed, for each length
(``STANDARD_LENGTHS``: 10 and 20).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from gptviz.model import GPT
from gptviz.model.hooks import hooks
from gptviz.model.names import act_name
from gptviz.tokenizers.base import Tokenizer

STANDARD_LENGTHS = (10, 20)
STANDARD_SEQUENCES = 32
STANDARD_SEED = 0
PROTOCOL = ("random letter-and-digit tokens, repeated once with no separator, lengths 10 and "
            "20, 32 sequences each (seed 0); score = mean attention from each repeated token "
            "to the token after its first copy")


def ordinary_ids(tokenizer: Tokenizer) -> list[int]:
    """Ids of the vocabulary entries made only of letters and digits (no specials).

    >>> from gptviz.tokenizers import CharTokenizer
    >>> tok = CharTokenizer(); _ = tok.train("ab|1 \\n")
    >>> [tok.id_to_string(i) for i in ordinary_ids(tok)]
    ['1', 'a', 'b']
    """
    specials = set(tokenizer.special_tokens.values())
    out = []
    for idx in range(tokenizer.vocab_size):
        if idx in specials:
            continue
        try:
            text = tokenizer.id_to_bytes(idx).decode("utf-8")
        except UnicodeDecodeError:
            continue
        if text.isalnum():
            out.append(idx)
    return out


def repeated_random(candidates: list[int], length: int, n: int, seed: int = STANDARD_SEED
                    ) -> Tensor:
    """``n`` sequences ``r r`` of ``2 * length`` ids, ``r`` drawn uniformly from ``candidates``."""
    if not candidates:
        raise ValueError("the vocabulary has no letter-or-digit tokens to draw from.")
    if length < 2:
        raise ValueError(f"length must be at least 2, got {length}.")
    gen = torch.Generator().manual_seed(seed)
    pick = torch.randint(len(candidates), (n, length), generator=gen)
    r = torch.tensor(candidates)[pick]  # (n, L)
    return torch.cat([r, r], dim=1)  # (n, 2L)


@dataclass(frozen=True)
class InductionResult:
    length: int
    scores: Tensor  # (n_layer, n_head): each head's induction score
    copy_accuracy: float  # share of r_1 .. r_{L-1} predicted top-1 in the repeat

    @property
    def best(self) -> tuple[int, int, float]:
        """(layer, head, score) of the head with the highest score."""
        flat = int(self.scores.argmax())
        layer, head = divmod(flat, self.scores.shape[1])
        return layer, head, float(self.scores[layer, head])


@torch.no_grad()
def induction_test(model: GPT, tokenizer: Tokenizer, length: int,
                   n: int = STANDARD_SEQUENCES, seed: int = STANDARD_SEED,
                   copy: bool = True) -> InductionResult:
    """Run the standard test at one ``length`` (needs ``2 * length`` ≤ the context).
    ``copy=False`` measures the heads' scores only (copy accuracy NaN): the model's output
    is then never computed, the final LayerNorm's rows being cut to none, so W_U (a third
    of GPT-2 small's work here, and (n, 2L, |V|) logits: 257 MB) multiplies nothing."""
    if 2 * length > model.config.context_length:
        raise ValueError(f"2 × {length} tokens do not fit the context of "
                         f"{model.config.context_length}.")
    ids = repeated_random(ordinary_ids(tokenizer), length, n, seed)  # (n, 2L)
    names = [act_name("pattern", layer) for layer in range(model.config.n_layer)]
    was_training = model.training
    model.eval()
    if copy:
        logits, cache = model.run_with_cache(ids, names_filter=names)  # (n, 2L, |V|)
    else:
        cache = {}

        def keep(x: Tensor, name: str) -> None:
            cache[name] = x.detach()

        def no_rows(x: Tensor, name: str) -> Tensor:
            return x[:, :0]  # (n, 0, d): nothing left to unembed

        with hooks(model, [(names, keep), (act_name("normalized", ln="ln_final"), no_rows)]):
            model._forward(model.check_ids(ids))
    model.train(was_training)
    rows = torch.arange(length, 2 * length)  # the repeat
    cols = rows - length + 1  # the token after each one's first copy
    scores = torch.stack([cache[name][:, :, rows, cols].mean(dim=(0, 2)) for name in names])
    if not copy:
        return InductionResult(length, scores.float(), math.nan)
    guess = logits[:, length:2 * length - 1].argmax(-1)  # predictions of r_1 .. r_{L-1}
    accuracy = (guess == ids[:, length + 1:]).float().mean().item()
    return InductionResult(length, scores.float(), accuracy)


def standard_induction(model: GPT, tokenizer: Tokenizer, copy: bool = True
                       ) -> list[InductionResult]:
    """The test at each of ``STANDARD_LENGTHS`` that fits the model's context."""
    return [induction_test(model, tokenizer, length, copy=copy) for length in STANDARD_LENGTHS
            if 2 * length <= model.config.context_length]
