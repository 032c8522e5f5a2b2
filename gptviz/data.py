"""Corpora and the seeds' sliding-window dataset.

A text becomes ids; ids become (input, target) windows of ``context_length``
tokens whose starts are ``stride`` apart, the target being the input shifted
by one token. Synthetic corpora (made by code) give tasks with a known answer.
"""

from __future__ import annotations

import random
import string
from collections.abc import Sequence
from pathlib import Path

import torch
from torch import Tensor

from gptviz.i18n import _, number


class SlidingWindowDataset:
    """Windows x = ids[i : i+N], y = ids[i+1 : i+N+1] for i = 0, k, 2k, ... (k = stride).

    >>> ds = SlidingWindowDataset([10, 11, 12, 13, 14], context_length=2, stride=2)
    >>> len(ds), ds[1]
    (2, (tensor([12, 13]), tensor([13, 14])))
    """

    def __init__(self, ids: Sequence[int] | Tensor, context_length: int, stride: int = 1) -> None:
        if context_length < 1 or stride < 1:
            raise ValueError(
                f"context_length and stride must be >= 1, got {context_length}, {stride}."
            )
        self.ids = torch.as_tensor(ids, dtype=torch.long)  # (n_tokens,)
        self.context_length = context_length
        self.stride = stride
        n = self.ids.numel()
        if n < context_length + 1:
            raise ValueError(
                f"the corpus has {n} tokens but one window needs context_length + 1 = "
                f"{context_length + 1} (input plus the next token): give a longer text or "
                "a shorter context length."
            )
        self.starts = torch.arange(0, n - context_length, stride)  # (n_windows,)

    def __len__(self) -> int:
        return self.starts.numel()

    def __getitem__(self, index: int) -> tuple[Tensor, Tensor]:
        i = int(self.starts[index])
        x = self.ids[i:i + self.context_length]  # (N,)
        return x, self.ids[i + 1:i + 1 + self.context_length]

    def batch(self, window_indices: Tensor) -> tuple[Tensor, Tensor]:
        """Stack the chosen windows: x, y of shape (B, N)."""
        offsets = self.starts[window_indices][:, None] + torch.arange(self.context_length)  # (B, N)
        return self.ids[offsets], self.ids[offsets + 1]

    def random_batch(self, batch_size: int, generator: torch.Generator) -> tuple[Tensor, Tensor]:
        """``batch_size`` windows drawn uniformly (with replacement), as nanoGPT does."""
        return self.batch(torch.randint(len(self), (batch_size,), generator=generator))

    def fixed_batches(self, n_batches: int, batch_size: int) -> list[tuple[Tensor, Tensor]]:
        """Evenly spread windows, the same every call: a stable validation set."""
        n = min(n_batches * batch_size, len(self))
        picks = torch.linspace(0, len(self) - 1, n).round().long()  # (n,)
        return [self.batch(picks[i:i + batch_size]) for i in range(0, n, batch_size)]


def train_val_split(ids: Sequence[int] | Tensor, val_fraction: float, context_length: int
                    ) -> tuple[Tensor, Tensor]:
    """The first (1 - f) of the tokens train, the last f validate; both must hold a window.

    >>> [t.tolist() for t in train_val_split(list(range(10)), 0.3, 2)]
    [[0, 1, 2, 3, 4, 5, 6], [7, 8, 9]]
    """
    if not 0 < val_fraction < 1:
        raise ValueError(f"val_fraction must be in (0, 1), got {val_fraction}.")
    ids = torch.as_tensor(ids, dtype=torch.long)
    n_val = round(ids.numel() * val_fraction)
    need = context_length + 1
    if ids.numel() - n_val < need or n_val < need:
        raise ValueError(
            f"the corpus has {ids.numel()} tokens: too short to hold one window of "
            f"{need} tokens in both the training part and the {val_fraction:.0%} validation "
            f"part. Use at least {int(need / min(val_fraction, 1 - val_fraction)) + 1} tokens "
            "or a shorter context length."
        )
    return ids[:ids.numel() - n_val], ids[ids.numel() - n_val:]


def split_text(text: str, val_fraction: float) -> tuple[str, str]:
    """The first (1 - f) of the characters train, the last f validate.

    Split the text before a tokenizer learns anything, so that the held-out part
    never shapes the vocabulary.

    >>> split_text("abcdefghij", 0.3)
    ('abcdefg', 'hij')
    """
    if not 0 < val_fraction < 1:
        raise ValueError(f"val_fraction must be in (0, 1), got {val_fraction}.")
    cut = len(text) - round(len(text) * val_fraction)
    return text[:cut], text[cut:]


# ---- synthetic corpora --------------------------------------------------------
def induction_corpus(n_lines: int = 2000, length: int = 10, alphabet: str = string.ascii_lowercase,
                     seed: int = 0, max_length: int | None = None,
                     separators: tuple[str, ...] = ("|",)) -> str:
    """Lines "r|r" where r is random: the second half is predictable only by copying
    from the first, which is what induction heads learn to do. With ``max_length``
    each r has a random length in [length, max_length], so that the copy is not at
    a fixed distance and a head that merely looks a fixed number of places back fails.
    Each line takes one of ``separators`` at random ("" gives "rr", the form of the
    standard induction test, see gptviz.analysis.induction).

    >>> induction_corpus(n_lines=2, length=3, seed=1)
    'esz|esz\\nyci|yci\\n'
    """
    _check_synthetic(n_lines, length, alphabet)
    if max_length is not None and max_length < length:
        raise ValueError(f"max_length ({max_length}) must be >= length ({length}).")
    rng = random.Random(seed)
    lines = []
    for _line in range(n_lines):
        n = length if max_length is None else rng.randint(length, max_length)
        r = "".join(rng.choice(alphabet) for _ in range(n))
        sep = separators[0] if len(separators) == 1 else rng.choice(separators)
        lines.append(f"{r}{sep}{r}\n")
    return "".join(lines)


def sorting_corpus(n_lines: int = 2000, length: int = 6, alphabet: str = string.digits,
                   seed: int = 0) -> str:
    """Lines "s>sorted(s)": the model must sort the characters before the arrow.

    >>> sorting_corpus(n_lines=2, length=4, seed=1)
    '2914>1249\\n1777>1777\\n'
    """
    _check_synthetic(n_lines, length, alphabet)
    rng = random.Random(seed)
    lines = []
    for _line in range(n_lines):
        s = "".join(rng.choice(alphabet) for _ in range(length))
        lines.append(f"{s}>{''.join(sorted(s))}\n")
    return "".join(lines)


SYNTHETIC_CORPORA = {"induction": induction_corpus, "sorting": sorting_corpus}


def synthetic_corpus(name: str, **kwargs: int | str) -> str:
    """One of ``SYNTHETIC_CORPORA`` by name, e.g. ``synthetic_corpus("sorting", n_lines=10)``."""
    if name not in SYNTHETIC_CORPORA:
        raise ValueError(
            f"unknown synthetic corpus {name!r}; choose from {sorted(SYNTHETIC_CORPORA)}."
        )
    return SYNTHETIC_CORPORA[name](**kwargs)


def _check_synthetic(n_lines: int, length: int, alphabet: str) -> None:
    if n_lines < 1 or length < 1 or not alphabet:
        raise ValueError("n_lines and length must be >= 1 and the alphabet non-empty.")
    if set(alphabet) & set("|>\n"):
        raise ValueError("the alphabet must not contain the separators '|', '>' or newline.")


CORPORA_DIR = Path(__file__).resolve().parents[1] / "assets" / "corpora"


MAX_UPLOAD_BYTES = 5_000_000  # about 5 MB of text: enough to train, small enough to share a server


class CorpusError(ValueError):
    """A corpus that cannot be used; the message says why and what to do."""


DEFAULT_CORPUS = "mathematics"  # real prose: what the Tokenizers and Training pages open on


def bundled_corpora() -> dict[str, Path]:
    """Name -> path of every ``assets/corpora/*.txt``: the prose corpus first (the pages'
    default), then the largest first.

    >>> list(bundled_corpora())
    ['mathematics', 'induction', 'sample']
    """
    paths = sorted(CORPORA_DIR.glob("*.txt"),
                   key=lambda p: (p.stem != DEFAULT_CORPUS, -p.stat().st_size, p.name))
    return {p.stem: p for p in paths}


def read_corpus(name: str) -> str:
    """The text of a bundled corpus, or CorpusError naming the missing/broken file.

    >>> read_corpus("sample")[:20]
    'The Steenrod problem'
    """
    path = bundled_corpora().get(name)
    if path is None:
        raise CorpusError(_("there is no bundled corpus named {name}.").format(name=repr(name)))
    return decode_text(path.read_bytes(), str(path.relative_to(CORPORA_DIR.parents[1])))


def decode_text(data: bytes, name: str | None = None, limit: int = MAX_UPLOAD_BYTES) -> str:
    """Bytes of a ``.txt`` file -> text, refusing what is empty, huge, binary or not UTF-8.

    >>> decode_text("héllo".encode())
    'héllo'
    """
    name = _("the upload") if name is None else name
    if not data.strip():
        raise CorpusError(_("{name} is empty: choose a file with some text in it.").format(
            name=name))
    if len(data) > limit:
        raise CorpusError(_(
            "{name} is {size} MB; the limit is {limit} MB. Use a shorter extract."
        ).format(name=name, size=number(len(data) / 1e6, 1), limit=number(limit / 1e6, 0)))
    if b"\x00" in data:
        raise CorpusError(_(
            "{name} contains NUL bytes, so it looks binary: upload plain text.").format(name=name))
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise CorpusError(_(
            "{name} is not UTF-8 text (byte {byte} is {value}): save it as UTF-8 and upload "
            "it again."
        ).format(name=name, byte=exc.start, value=f"0x{data[exc.start]:02x}")) from None
    return text.replace("\r\n", "\n")
