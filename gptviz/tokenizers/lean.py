"""tiktoken's ``Encoding`` without its Python copy of the ranks.

``tiktoken.Encoding`` keeps the ``mergeable_ranks`` dict it was built from, although only
its Rust core (which holds its own copy) encodes and decodes; the dict is read back only
to pickle the encoding. For o200k that dict is 200k bytes objects, 200k ints and the table:
~25 MB per server, ~10 MB for cl100k, ~5 MB for GPT-2. ``LeanEncoding`` drops it as it is
given and rebuilds it from the core when asked (pickling, ``ordinary_ranks``): the same ids,
the same bytes, the same pickle.

>>> import tiktoken
>>> enc = LeanEncoding(name="ab", pat_str=r"\\S+|\\s+", special_tokens={"<|end|>": 257},
...                    mergeable_ranks={**{bytes([i]): i for i in range(256)}, b"ab": 256})
>>> enc.encode("abc ab"), "_mergeable_ranks" in vars(enc), enc._mergeable_ranks[b"ab"]
([256, 99, 32, 256], False, 256)
>>> import pickle; pickle.loads(pickle.dumps(enc)).encode("abab")
[256, 256]
"""

from __future__ import annotations

import tiktoken


def ordinary_ranks(enc: tiktoken.Encoding) -> dict[bytes, int]:
    """Token bytes -> rank of every ordinary (not special) token of ``enc``, read back from
    its Rust core: what its rank file holds. Ids that no token has (o200k leaves a few next
    to its special tokens) are skipped."""
    specials = set(enc._special_tokens.values())
    ranks = {}
    for idx in range(enc.max_token_value + 1):
        if idx not in specials:
            try:
                ranks[enc.decode_single_token_bytes(idx)] = idx
            except KeyError:
                continue
    return ranks


class LeanEncoding(tiktoken.Encoding):
    """A ``tiktoken.Encoding`` that does not keep the dict of ranks it is built from."""

    @property
    def _mergeable_ranks(self) -> dict[bytes, int]:
        return ordinary_ranks(self)

    @_mergeable_ranks.setter
    def _mergeable_ranks(self, ranks: dict[bytes, int]) -> None:
        """Dropped: ``Encoding.__init__`` builds the core from its argument, not from this."""
