"""Byte-level BPE, as in the formal notes: the base vocabulary is the 256
bytes, so no text is ever unknown; merges are learned on regex-split chunks.

The merges (pair -> new id, in the order learned) are the single source of
truth; the vocabulary and the byte ranks used by ``encode`` are derived from
them. They are stored as one array of ids (12 bytes a merge, not a dict of
tuples: GPT-2 has 50,000), which ``merges`` shows as a read-only mapping. Encoding
merges, inside each chunk, the adjacent pair whose bytes have the lowest rank,
which is exactly what tiktoken does: loaded with GPT-2's ranks, this class
gives tiktoken's ids.
"""

from __future__ import annotations

import operator
from array import array
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import regex

from gptviz.i18n import _, number
from gptviz.tokenizers.base import AllowedSpecial, TokenInfo, Tokenizer, TokenizerError
from gptviz.tokenizers.bpe_heap import merge_heap
from gptviz.tokenizers.bpe_train import PATTERNS, Merge, TrainLimits, check_upload, learn_within
from gptviz.tokenizers.byte_tokens import byte_token_infos
from gptviz.tokenizers.merge_view import MergeView
from gptviz.tokenizers.ranks import read_ranks
from gptviz.tokenizers.specials import BOS, ENDOFTEXT, EOS, SEED_SPECIALS, split_on_specials

_CACHE_LIMIT = 50_000  # chunks remembered by encode (≈ 10 MB: a shared tokenizer serves a class)
_LONG_CHUNK = 48  # above this many bytes, merge with a heap instead of rescanning
_GROUP = operator.methodcaller("group")  # a regex match -> its text


class ByteLevelBPE(Tokenizer):
    """>>> t = ByteLevelBPE(); merges = t.train("abab abab", 256 + 2 + 4)
    >>> [(m.pair, m.new_id, m.token) for m in merges]
    [((97, 98), 256, b'ab'), ((256, 256), 257, b'abab')]
    """

    kind = "bpe"
    lossless = True
    limits = TrainLimits()  # memory bounds of training (and of the tokens' bytes when loading)

    def __init__(
        self, pattern: str = "gpt2", specials: Iterable[str] = SEED_SPECIALS,
        byte_order: list[int] | None = None,
        merges: Iterable[tuple[int, int, int]] = (),
        special_ids: dict[str, int] | None = None,
    ):
        self.pattern = pattern  # a name in PATTERNS, or a regex
        source = PATTERNS.get(pattern, pattern)
        try:
            self._split = regex.compile(source) if source else None
        except regex.error as exc:
            raise TokenizerError(_("the split pattern is not a valid regex: {exc}").format(
                exc=exc)) from exc
        # byte_order[i] is the byte with id i (the identity, except for GPT-2's file).
        self.byte_order = list(byte_order) if byte_order is not None else list(range(256))
        if sorted(self.byte_order) != list(range(256)):
            raise TokenizerError(_("byte_order must be a permutation of 0..255."))
        self.merges = {(a, b): c for a, b, c in merges}
        self._special_names = list(special_ids or specials)
        self._given_special_ids = dict(special_ids) if special_ids else None
        self.trace: list[Merge] = []
        self.trained_chars: int | None = None  # characters of the corpus training read
        self._rebuild()

    @property
    def merges(self) -> Mapping[tuple[int, int], int]:
        """(left id, right id) -> new id, in the order learned: a read-only view of the
        array, built in O(1) (assign a new dict to change them)."""
        return MergeView(self._merges)

    @merges.setter
    def merges(self, merges: Mapping[tuple[int, int], int]) -> None:
        try:
            self._merges = array("i", [x for (a, b), c in merges.items() for x in (a, b, c)])
        except OverflowError:
            raise TokenizerError(_("a merge uses an id beyond 2**31; no vocabulary is that "
                                   "large.")) from None

    def _rebuild(self, ranks: dict[bytes, int] | None = None) -> None:
        """Derive vocab, ranks and special ids from the merges; or, given the ``ranks`` the
        merges were read from (``from_ranks``), the vocab from them, sharing their bytes."""
        if ranks is not None:
            self.ranks, self.vocab = ranks, {i: tok for tok, i in ranks.items()}
        else:
            self.vocab = {i: bytes([b]) for i, b in enumerate(self.byte_order)}
            size, m = 0, self._merges
            for a, b, c in zip(m[0::3], m[1::3], m[2::3], strict=True):
                if a not in self.vocab or b not in self.vocab:
                    raise TokenizerError(_("merge ({a}, {b}) -> {c} uses an id "
                                           "not defined before it.").format(a=a, b=b, c=c))
                size += len(self.vocab[a]) + len(self.vocab[b])  # checked before allocated
                if size > self.limits.token_bytes:
                    raise TokenizerError(_("the merges build over {token_bytes} bytes of "
                                           "tokens; a real vocabulary holds a few hundred "
                                           "thousand.").format(token_bytes=number(
                                               self.limits.token_bytes, 0, grouping=True)))
                self.vocab[c] = self.vocab[a] + self.vocab[b]
            self.ranks = {tok: i for i, tok in self.vocab.items()}
        self._byte_ids = [0] * 256
        for i, b in enumerate(self.byte_order):
            self._byte_ids[b] = i
        first = max(self.vocab) + 1
        self._specials = self._given_special_ids or {
            s: first + k for k, s in enumerate(self._special_names)
        }
        self._special_by_id = {i: s for s, i in self._specials.items()}
        self._cache: dict[bytes, list[int]] = {}

    # ---- training ------------------------------------------------------------
    def train(self, text: str, vocab_size: int | None = 512) -> list[Merge]:
        """Learn ``vocab_size - 256 - len(specials)`` merges; returns the trace. Training
        reads the text up to ``limits`` (``trained_chars`` says how far)."""
        n_special = len(self._special_names)
        if vocab_size is None or vocab_size < 256 + n_special:
            raise TokenizerError(
                _("vocab size {vocab_size} is too small: byte-level BPE needs the "
                  "256 bytes and {n_special} special tokens, so at least {value0}.").format(
                    vocab_size=vocab_size, n_special=n_special, value0=256 + n_special))
        if not text:
            raise TokenizerError(_("the corpus is empty: give some text to learn merges from."))
        chunks = map(_GROUP, self._split.finditer(text)) if self._split else [text]
        vocab = {i: bytes([b]) for i, b in enumerate(self.byte_order)}
        wanted = vocab_size - 256 - n_special
        trace, used = learn_within(chunks, vocab, wanted, self.limits)
        new_tokens = len({m.new_id for m in trace})
        if new_tokens < wanted:
            most = 256 + new_tokens + n_special
            raise TokenizerError((_(
                "this corpus (read up to character {used:,} of {n:,}) supports a vocabulary "
                "of at most {most} tokens (every pair of neighbouring tokens is merged by "
                "then); choose a vocab size of {most} or less, or use a longer corpus.")
                if used < len(text) else _(
                "this corpus supports a vocabulary of at most {most} tokens (every pair of "
                "neighbouring tokens is merged by then); choose a vocab size of {most} or "
                "less, or use a longer corpus.")).format(used=used, n=len(text), most=most))
        self.merges = {m.pair: m.new_id for m in trace}
        self._given_special_ids = None
        self.trace = trace
        self.trained_chars = used
        self._rebuild()
        return trace

    def split_text(self, text: str) -> list[str]:
        """The regex chunks merges never cross (the whole text for pattern "none")."""
        if self._split is None:
            return [text] if text else []
        return self._split.findall(text)

    # ---- encoding ------------------------------------------------------------
    @property
    def vocab_size(self) -> int:
        return max([*self.vocab, *self._special_by_id]) + 1

    @property
    def special_tokens(self) -> dict[str, int]:
        return dict(self._specials)

    def id_to_bytes(self, idx: int) -> bytes:
        if idx in self._special_by_id:
            return self._special_by_id[idx].encode("utf-8")
        return self.vocab[idx]

    def encode_chunk(self, chunk: bytes, max_rank: int | None = None,
                     steps: list | None = None) -> list[int]:
        """Ids of one chunk, merging lowest-rank pairs first; only tokens with
        id < ``max_rank`` may form. ``steps`` collects (rank, left, right)."""
        if max_rank is None and steps is None:
            hit = self._cache.get(chunk)
            if hit is None:
                hit = self._merge(chunk, None, None)
                if len(self._cache) < _CACHE_LIMIT:
                    self._cache[chunk] = hit
            return hit
        return self._merge(chunk, max_rank, steps)

    def _merge(self, chunk: bytes, max_rank: int | None, steps: list | None) -> list[int]:
        ranks = self.ranks
        whole = ranks.get(chunk)
        if whole is not None and max_rank is None and steps is None:
            return [whole]
        limit = float("inf") if max_rank is None else max_rank
        if len(chunk) > _LONG_CHUNK:
            parts = merge_heap(chunk, ranks, limit, steps)
        else:
            parts = [chunk[i:i + 1] for i in range(len(chunk))]
            while len(parts) > 1:
                best, at = limit, -1
                for i in range(len(parts) - 1):
                    r = ranks.get(parts[i] + parts[i + 1])
                    if r is not None and r < best:
                        best, at = r, i
                if at < 0:
                    break
                if steps is not None:
                    steps.append((best, ranks[parts[at]], ranks[parts[at + 1]]))
                parts[at:at + 2] = [parts[at] + parts[at + 1]]
        return [ranks[p] for p in parts]

    def encode(
        self, text: str, *, bos: bool = False, eos: bool = False,
        allowed_special: AllowedSpecial = "none", max_rank: int | None = None,
    ) -> list[int]:
        """``max_rank`` replays the tokenizer as it was after its first merges."""
        allowed = self.allowed_specials(allowed_special)
        ids = [self._marker(BOS)] if bos else []
        for piece, _span, is_special in split_on_specials(text, allowed):
            if is_special:
                ids.append(self._specials[piece])
                continue
            for chunk in self.split_text(piece):
                ids.extend(self.encode_chunk(chunk.encode("utf-8"), max_rank))
        if eos:
            ids.append(self._marker(EOS))
        return ids

    def encode_with_steps(self, text: str) -> list[tuple[bytes, list[tuple[int, int, int]]]]:
        """Per chunk, its bytes and the merges applied: (rank, left id, right id)."""
        out = []
        for chunk in self.split_text(text):
            steps: list = []
            data = chunk.encode("utf-8")
            self._merge(data, None, steps)
            out.append((data, steps))
        return out

    def _marker(self, name: str) -> int:
        if name not in self._specials:
            raise TokenizerError(_("this tokenizer has no {name} token.").format(name=name))
        return self._specials[name]

    def decode(self, ids: Iterable[int]) -> str:
        return b"".join(self.id_to_bytes(i) for i in self.check_ids(ids)).decode(
            "utf-8", errors="replace")

    def tokens(
        self, text: str, *, bos: bool = False, eos: bool = False,
        allowed_special: AllowedSpecial = "none", max_rank: int | None = None,
    ) -> list[TokenInfo]:
        ids = self.encode(text, bos=bos, eos=eos, allowed_special=allowed_special,
                          max_rank=max_rank)
        return byte_token_infos(ids, text, self.id_to_bytes, set(self._special_by_id),
                                bos=bos, eos=eos)

    # ---- persistence ---------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "type": self.kind, "pattern": self.pattern,
            "merges": [[a, b, c] for (a, b), c in self.merges.items()],
            "special_ids": self._specials,
        }
        if self.byte_order != list(range(256)):
            data["byte_order"] = self.byte_order
        return data

    @classmethod
    def check_untrusted(cls, data: dict[str, Any], source: str) -> None:
        check_upload(data, source)  # a named pattern, at most UNTRUSTED_IDS ids

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ByteLevelBPE:
        return cls(pattern=data["pattern"], byte_order=data.get("byte_order"),
                   merges=[tuple(m) for m in data["merges"]],
                   special_ids={str(k): int(v) for k, v in data["special_ids"].items()})

    @classmethod
    def from_tiktoken_file(cls, path: str | Path, pattern: str = "gpt2",
                           special_ids: dict[str, int] | None = None) -> ByteLevelBPE:
        """Rebuild the merges from a ``.tiktoken`` rank file (base64 token, rank)."""
        ranks = read_ranks(path)
        return cls.from_ranks(ranks, pattern, special_ids or {ENDOFTEXT: len(ranks)})

    @classmethod
    def from_ranks(cls, ranks: dict[bytes, int], pattern: str,
                   special_ids: dict[str, int]) -> ByteLevelBPE:
        """Recover the merges from a bytes -> rank table; the tokenizer keeps a copy of the
        table (sharing its bytes) as its ranks, and its vocab points to the same bytes."""
        singles = sorted((r, t[0]) for t, r in ranks.items() if len(t) == 1)
        if [r for r, _ in singles] != list(range(256)):
            raise TokenizerError(_("the rank file must give the 256 single bytes ranks 0..255."))
        if len(set(ranks.values())) != len(ranks):
            raise TokenizerError(_("the rank file gives two tokens the same rank."))
        tok = cls(pattern=pattern, byte_order=[b for _, b in singles], special_ids=special_ids)
        tok.ranks = ranks = dict(ranks)
        merges = array("i")
        for token in sorted(ranks, key=ranks.__getitem__)[256:]:
            rank = ranks[token]
            parts = tok._merge(token, rank, [])  # BPE with only the earlier tokens
            if len(parts) != 2:
                raise TokenizerError(_("rank {rank} is not the merge of two earlier "
                                       "tokens.").format(rank=rank))
            merges.extend((parts[0], parts[1], rank))
        tok._merges = merges
        tok._rebuild(ranks)
        return tok
