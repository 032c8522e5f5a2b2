"""Tokenizers whose vocabulary is a list of symbols seen in a corpus.

The character and word tokenizers differ only in how they cut a text into
symbols (``split``); everything else — vocabulary, UNK, specials, ids — lives
here. Ids are deterministic: the kept symbols sorted by code point get
0 .. n-1, and the specials follow in the seeds' order (BOS, EOS, UNK, PAD).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any, ClassVar

from gptviz.i18n import _, number
from gptviz.tokenizers.base import (
    AllowedSpecial,
    TokenInfo,
    Tokenizer,
    TokenizerError,
    check_untrusted_ids,
)
from gptviz.tokenizers.specials import BOS, EOS, SEED_SPECIALS, UNK, split_on_specials


class SymbolTokenizer(Tokenizer):
    """Shared machinery; subclasses define ``split``."""

    kind: ClassVar[str]
    unit: ClassVar[str] = "symbol"  # "character" or "word", for messages
    # Distinct symbols training may count. Real text stays far below (Tiny Shakespeare has
    # ~14k distinct words, a Chinese novel ~5k characters); random data does not (4.8 MB of
    # random Unicode: 740k distinct characters, ~200 MB of counts on a shared server).
    max_distinct: ClassVar[int] = 50_000

    def __init__(self, symbols: Iterable[str] = (), specials: Iterable[str] = SEED_SPECIALS):
        self.specials = tuple(specials)
        if UNK not in self.specials:
            raise TokenizerError(_("a {kind} tokenizer needs {unk} among its "
                                   "specials.").format(kind=self.kind, unk=UNK))
        self.symbols = sorted(set(symbols) - set(self.specials))  # the one source of truth
        self._rebuild()

    def _rebuild(self) -> None:
        self.stoi = {s: i for i, s in enumerate(self.symbols)}
        n = len(self.symbols)
        self._special_ids = {s: n + i for i, s in enumerate(self.specials)}
        self.itos = self.symbols + list(self.specials)

    @staticmethod
    def split(text: str) -> Iterator[tuple[str, int, int]]:
        """Yield (symbol, start, end) covering ``text`` with no gaps."""
        raise NotImplementedError

    # ---- training ------------------------------------------------------------
    def train(self, text: str, vocab_size: int | None = None) -> Counter:
        """Keep every symbol of ``text`` or, with ``vocab_size`` (specials
        included), the most frequent ones; returns the symbol counts.

        >>> from gptviz.tokenizers.char import CharTokenizer
        >>> tok = CharTokenizer(); tok.train("abca", vocab_size=6)  # 2 symbols + 4 specials
        Counter({'a': 2, 'b': 1, 'c': 1})
        >>> tok.symbols                                             # ties: by code point
        ['a', 'b']
        """
        if not text:
            raise TokenizerError(_("the corpus is empty: give some text to learn "
                                   "a vocabulary from."))
        counts: Counter = Counter()
        for i, (piece, _start, _end) in enumerate(self.split(text)):
            counts[piece] += 1
            if i % 4096 == 0 and len(counts) > self.max_distinct:
                raise TokenizerError(
                    _("the corpus has more than {max_distinct} different "
                      "{unit}s (within its first {i} {unit}s): it looks like "
                      "random data rather than text, and a vocabulary of every "
                      "one would take hundreds of MB. Use BPE, or a real text.").format(
                        max_distinct=number(self.max_distinct, 0, grouping=True), unit=self.unit,
                        i=number(i + 1, 0, grouping=True)))
        ranked = sorted(counts, key=lambda s: (-counts[s], s))
        if vocab_size is not None:
            keep = vocab_size - len(self.specials)
            if keep < 1:
                raise TokenizerError(
                    _("vocab size {vocab_size} leaves no room for {unit}s: it "
                      "must be at least {n_specials} ({n_specials1} specials + 1).").format(
                        vocab_size=vocab_size, unit=self.unit, n_specials=len(self.specials) + 1,
                        n_specials1=len(self.specials))
                )
            ranked = ranked[:keep]
        self.symbols = sorted(set(ranked) - set(self.specials))
        self._rebuild()
        return counts

    # ---- encoding ------------------------------------------------------------
    @property
    def vocab_size(self) -> int:
        return len(self.itos)

    @property
    def special_tokens(self) -> dict[str, int]:
        return dict(self._special_ids)

    def id_to_bytes(self, idx: int) -> bytes:
        return self.itos[idx].encode("utf-8")

    def tokens(
        self, text: str, *, bos: bool = False, eos: bool = False,
        allowed_special: AllowedSpecial = "none",
    ) -> list[TokenInfo]:
        allowed = self.allowed_specials(allowed_special)
        out = []
        if bos:
            out.append(self._special_info(BOS, (0, 0)))
        for piece, start, is_special in split_on_specials(text, allowed):
            if is_special:
                out.append(self._special_info(piece, (start, start + len(piece))))
                continue
            for sym, s, e in self.split(piece):
                idx = self.stoi.get(sym)
                if idx is None:
                    out.append(TokenInfo(self._special_ids[UNK], UNK, UNK.encode(),
                                         (start + s, start + e), special=True, unknown=True))
                else:
                    out.append(TokenInfo(idx, sym, sym.encode("utf-8"), (start + s, start + e)))
        if eos:
            out.append(self._special_info(EOS, (len(text), len(text))))
        return out

    def _special_id(self, name: str) -> int:
        if name not in self._special_ids:
            raise TokenizerError(_("{name} is not a special token of this tokenizer.").format(
                                     name=name))
        return self._special_ids[name]

    def _special_info(self, name: str, span: tuple[int, int]) -> TokenInfo:
        return TokenInfo(self._special_id(name), name, name.encode(), span, special=True)

    def encode(
        self, text: str, *, bos: bool = False, eos: bool = False,
        allowed_special: AllowedSpecial = "none",
    ) -> list[int]:
        """The ids of ``tokens``, without building a ``TokenInfo`` per token: a 250 KB
        corpus is 250k of them (~40 MB of small objects, whose freed arenas the server
        keeps), where the ids alone are one list. A vocabulary without UNK (a nanoGPT
        model's) goes through ``tokens``, which says what it cannot encode."""
        unk = self._special_ids.get(UNK)
        if unk is None:
            return [t.id for t in self.tokens(text, bos=bos, eos=eos,
                                              allowed_special=allowed_special)]
        allowed = self.allowed_specials(allowed_special)
        stoi = self.stoi
        ids = [self._special_id(BOS)] if bos else []
        for piece, _span, is_special in split_on_specials(text, allowed):
            if is_special:
                ids.append(self._special_id(piece))
            else:
                ids.extend(stoi.get(sym, unk) for sym, _, _ in self.split(piece))
        if eos:
            ids.append(self._special_id(EOS))
        return ids

    def decode(self, ids: Iterable[int]) -> str:
        """Join the symbols; a special decodes to its own text, e.g. "<|UNK|>"."""
        return "".join(self.itos[i] for i in self.check_ids(ids))

    # ---- persistence ---------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {"type": self.kind, "symbols": self.symbols, "specials": list(self.specials)}

    @classmethod
    def check_untrusted(cls, data: dict[str, Any], source: str) -> None:
        check_untrusted_ids(sum(len(v) for v in (data.get("symbols"), data.get("specials"))
                                if isinstance(v, list | dict | str)), source)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SymbolTokenizer:
        symbols, specials = data["symbols"], data.get("specials", SEED_SPECIALS)
        if not all(isinstance(s, str) for s in [*symbols, *specials]):
            raise TokenizerError(_("symbols and specials must be strings."))
        return cls(symbols, specials)
