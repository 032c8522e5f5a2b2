"""The interface every tokenizer shares, and the record it returns for display.

A tokenizer is the map ``T: TEXTS -> Seq(V)`` of the seeds: ``encode`` sends a
text to a list of ids, ``decode`` is its (partial) inverse, and ``tokens``
returns the same ids together with what a page needs to draw them.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from gptviz.i18n import _, number
from gptviz.work import add

# What encode does with text that spells a special token, e.g. "<|EOS|>":
#   "none": it is ordinary text; "all": every registered special is recognised;
#   or a set of the special strings to recognise.
AllowedSpecial = str | frozenset[str] | set[str]


class TokenizerError(ValueError):
    """Bad input to a tokenizer; the message says what is wrong and what to do."""


JSON_DEPTH = 32  # nesting of arrays and objects accepted in a JSON file (ours use 3)
# Ids an uploaded tokenizer may have: the Training page's largest vocabulary (50,000) and
# GPT-2's (50,257) fit; past it a tokenizer.json of 2 MB takes ~1 s to build.
UNTRUSTED_IDS = 65_536
_SCAN_CHUNK = 1 << 18  # bytes per step of the nesting scan: it holds ~4 MB whatever the size
_STEP = np.zeros(256, np.int8)  # what a byte does to the nesting: "[" "{" +1, "]" "}" -1
_STEP[list(b"[{")], _STEP[list(b"]}")] = 1, -1


def json_depth(data: bytes) -> int:
    r"""How deeply arrays and objects nest in JSON ``data``, counted without parsing it (so
    without recursion), in one pass whatever the text: the escapes go first (``\\`` pairs,
    then ``\"``), so every quote left opens or closes a string; a bracket counts when an even
    number of quotes stand before it. Linear in ``len(data)``, in steps of _SCAN_CHUNK.

    >>> json_depth(b'{"a": [1, [2]], "b": "[[\\"[["}'), json_depth(b"[" * 100_000)
    (3, 100000)
    """
    pairs = data.replace(b"\\\\", b"")
    plain = pairs.replace(b'\\"', b"")
    add(json_chars=len(data) + len(pairs))  # the two passes over the escapes
    depth = deepest = quotes = 0  # quotes: how many stand before the step (its parity)
    for start in range(0, len(plain), _SCAN_CHUNK):
        chunk = np.frombuffer(plain, np.uint8, min(_SCAN_CHUNK, len(plain) - start), start)
        seen = np.cumsum(chunk == ord('"'), dtype=np.int64) + quotes  # quotes up to each byte
        steps = np.where(seen & 1, 0, _STEP[chunk])  # (chunk,) brackets outside strings
        levels = np.cumsum(steps, dtype=np.int64) + depth
        deepest, depth, quotes = max(deepest, int(levels.max())), int(levels[-1]), int(seen[-1])
        add(json_chars=len(chunk))
    return deepest


def check_untrusted_ids(n_ids: int, source: str) -> None:
    """TokenizerError when a tokenizer from an upload would have over UNTRUSTED_IDS ids."""
    if n_ids > UNTRUSTED_IDS:
        raise TokenizerError(_("{source} describes {n_ids} ids; an uploaded "
                               "model's vocabulary may have {untrusted_ids} at most.").format(
                                 source=source, n_ids=number(n_ids, 0, grouping=True),
                                 untrusted_ids=number(UNTRUSTED_IDS, 0, grouping=True)))


def read_json(data: bytes, source: str, max_bytes: int | None = None,
              max_depth: int = JSON_DEPTH) -> Any:
    """Parse JSON from a file a user gave: at most ``max_bytes`` bytes and ``max_depth``
    levels deep (``json`` recurses per level and raises RecursionError at ~1,000), UTF-8.
    Anything else is a TokenizerError naming ``source``.

    >>> read_json(b'{"merges": [[97, 98, 256]]}', "tokenizer.json")
    {'merges': [[97, 98, 256]]}
    """
    if max_bytes is not None and len(data) > max_bytes:
        raise TokenizerError(_("{source} is {n_data} bytes; the limit here is "
                               "{max_bytes}.").format(
                                 source=source, n_data=number(len(data), 0, grouping=True),
                                 max_bytes=number(max_bytes, 0, grouping=True)))
    depth = json_depth(data)
    if depth > max_depth:
        raise TokenizerError(_("{source} nests arrays and objects {depth} deep; "
                               "the limit is {max_depth}. Save it with json.dump "
                               "from plain lists and dicts.").format(
                                 source=source, depth=number(depth, 0, grouping=True),
                                 max_depth=max_depth))
    try:
        text = data.decode("utf-8")
        add(json_chars=len(text))
        return json.loads(text)
    except ValueError as exc:  # bad UTF-8, bad JSON, or a number of over 4,300 digits
        raise TokenizerError(_("{source} is not valid UTF-8 JSON ({exc}).").format(
                                 source=source, exc=exc)) from None


@dataclass(frozen=True)
class TokenInfo:
    """One token of an encoded text, as a page displays it.

    ``span`` is the half-open range of *characters* of the input the token
    covers; a byte-level token that holds part of a multi-byte character
    covers that whole character and has ``partial=True``.
    """

    id: int
    string: str  # the vocabulary entry, decoded with U+FFFD for broken UTF-8
    bytes: bytes  # the vocabulary entry's UTF-8 bytes
    span: tuple[int, int]  # characters of the input, [start, end)
    special: bool = False  # a special token such as <|BOS|>
    unknown: bool = False  # the input piece was not in the vocabulary
    partial: bool = False  # the bytes are not a complete UTF-8 sequence


class Tokenizer(ABC):
    """Base class: subclasses implement ``train``, ``encode``, ``decode`` and
    ``tokens``, plus ``to_dict``/``from_dict``; ``save``/``load`` live here."""

    kind: ClassVar[str]  # registry name, written as "type" in tokenizer.json
    trainable: ClassVar[bool] = True
    lossless: ClassVar[bool] = False  # decode(encode(x)) == x for every text x

    _registry: ClassVar[dict[str, type[Tokenizer]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "kind" in cls.__dict__:
            Tokenizer._registry[cls.kind] = cls

    # ---- the four operations -------------------------------------------------
    @abstractmethod
    def train(self, text: str, vocab_size: int | None = None) -> Any:
        """Learn the vocabulary from ``text``; returns a trace where there is one."""

    @abstractmethod
    def encode(
        self, text: str, *, bos: bool = False, eos: bool = False,
        allowed_special: AllowedSpecial = "none",
    ) -> list[int]:
        """Text -> ids. Special-token strings in ``text`` are plain text unless allowed."""

    @abstractmethod
    def decode(self, ids: Iterable[int]) -> str:
        """Ids -> text; raises TokenizerError for an id outside the vocabulary."""

    @abstractmethod
    def tokens(
        self, text: str, *, bos: bool = False, eos: bool = False,
        allowed_special: AllowedSpecial = "none",
    ) -> list[TokenInfo]:
        """Like ``encode`` but returns a TokenInfo per id (same ids, same order)."""

    @property
    @abstractmethod
    def vocab_size(self) -> int:
        """Number of ids, specials included: valid ids are 0 .. vocab_size - 1."""

    @property
    @abstractmethod
    def special_tokens(self) -> dict[str, int]:
        """Special string -> id."""

    @abstractmethod
    def id_to_bytes(self, idx: int) -> bytes:
        """The bytes of one vocabulary entry."""

    # ---- shared helpers ------------------------------------------------------
    def id_to_string(self, idx: int) -> str:
        return self.id_to_bytes(idx).decode("utf-8", errors="replace")

    def check_ids(self, ids: Iterable[int]) -> list[int]:
        """Return ``ids`` as a list, or raise TokenizerError naming the bad one."""
        out = []
        for pos, idx in enumerate(ids):
            if isinstance(idx, bool) or not isinstance(idx, int):
                raise TokenizerError(_("id #{pos} ({idx}) is not an integer.").format(
                                         pos=pos, idx=repr(idx)))
            if not 0 <= idx < self.vocab_size:
                raise TokenizerError(
                    _("id {idx} (position {pos}) is outside the vocabulary: valid "
                      "ids are 0 to {vocab_size}.").format(
                        idx=idx, pos=pos, vocab_size=self.vocab_size - 1)
                )
            out.append(idx)
        return out

    def allowed_specials(self, allowed: AllowedSpecial) -> set[str]:
        if allowed == "none":
            return set()
        if allowed == "all":
            return set(self.special_tokens)
        unknown = set(allowed) - set(self.special_tokens)
        if unknown:
            raise TokenizerError(_("not special tokens of this tokenizer: {unknown}").format(
                                     unknown=sorted(unknown)))
        return set(allowed)

    # ---- persistence ---------------------------------------------------------
    @abstractmethod
    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable description, with "type" set to ``kind``."""

    @classmethod
    @abstractmethod
    def from_dict(cls, data: dict[str, Any]) -> Tokenizer: ...

    def save(self, path: str | Path) -> Path:
        """Write ``tokenizer.json`` (or the given file name)."""
        path = Path(path)
        if path.is_dir():
            path = path / "tokenizer.json"
        path.write_text(json.dumps(self.to_dict(), ensure_ascii=False), encoding="utf-8")
        return path

    @staticmethod
    def load(path: str | Path) -> Tokenizer:
        """Read a file written by ``save``, whatever its tokenizer type."""
        path = Path(path)
        if path.is_dir():
            path = path / "tokenizer.json"
        try:
            data = read_json(path.read_bytes(), str(path))
        except (OSError, TokenizerError) as exc:
            raise TokenizerError(_("cannot read tokenizer file {path}: {exc}").format(
                                     path=path, exc=exc)) from exc
        return Tokenizer.from_json_dict(data, source=str(path))

    @staticmethod
    def from_json_dict(data: Any, source: str = "tokenizer.json",
                       trusted: bool = True) -> Tokenizer:
        """The tokenizer ``data`` describes; ``trusted=False`` (an upload) also applies the
        type's ``check_untrusted``."""
        if not isinstance(data, dict) or not isinstance(data.get("type"), str) \
                or data["type"] not in Tokenizer._registry:
            known = ", ".join(sorted(Tokenizer._registry))
            raise TokenizerError(_("{source}: missing or unknown tokenizer 'type' "
                                   "(known: {known}).").format(source=source, known=known))
        kind = Tokenizer._registry[data["type"]]
        if not trusted:
            kind.check_untrusted(data, source)
        try:
            return kind.from_dict(data)
        except (KeyError, TypeError, ValueError, AttributeError, ArithmeticError) as exc:
            raise TokenizerError(_("{source}: malformed {type} tokenizer ({exc}).").format(
                                     source=source, type=data['type'], exc=exc)) from exc

    @classmethod
    def check_untrusted(cls, data: dict[str, Any], source: str) -> None:
        """Raise TokenizerError if ``data`` from an upload could cost the server more than its
        size says (e.g. a regex that backtracks for minutes, or over UNTRUSTED_IDS ids);
        nothing to check by default."""
        return None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(vocab_size={self.vocab_size})"
