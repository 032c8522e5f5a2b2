"""Reading a ``.tiktoken`` rank file: one ``base64-token rank`` per line, e.g. ``IQ== 0``.

GPT-2's ranks are such a file; tiktoken builds its encoder from them and
``ByteLevelBPE.from_ranks`` rebuilds the merges from them.
"""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

from gptviz.tokenizers.base import TokenizerError


class MissingEncoding(TokenizerError):
    """The rank file of an encoding is not on this machine."""


def read_ranks(path: str | Path, sha256: str | None = None) -> dict[bytes, int]:
    """The token bytes → rank table of a ``.tiktoken`` file, checked against ``sha256``.

    >>> import tempfile; f = Path(tempfile.mkdtemp()) / "r.tiktoken"
    >>> _ = f.write_bytes(b"YQ== 0\\nYg== 1\\n"); read_ranks(f)
    {b'a': 0, b'b': 1}
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise MissingEncoding(f"{path} cannot be read ({exc.strerror}).") from exc
    if sha256 and hashlib.sha256(data).hexdigest() != sha256:
        raise TokenizerError(f"{path} is corrupted: its sha256 is not {sha256}.")
    ranks = {}
    for line in data.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks
