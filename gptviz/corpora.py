"""Bundled corpora and user uploads, read safely.

>>> sorted(bundled_corpora())[:1]
['mathematics']        # or ['sample'] before the large corpus is bundled
"""

from __future__ import annotations

from pathlib import Path

CORPORA_DIR = Path(__file__).resolve().parents[1] / "assets" / "corpora"
MAX_UPLOAD_BYTES = 5_000_000  # about 5 MB of text: enough to train, small enough to share a server


class CorpusError(ValueError):
    """A corpus that cannot be used; the message says why and what to do."""


def bundled_corpora() -> dict[str, Path]:
    """Name -> path of every ``assets/corpora/*.txt``, the largest first."""
    paths = sorted(CORPORA_DIR.glob("*.txt"), key=lambda p: (-p.stat().st_size, p.name))
    return {p.stem: p for p in paths}


def read_corpus(name: str) -> str:
    """The text of a bundled corpus, or CorpusError naming the missing/broken file."""
    path = bundled_corpora().get(name)
    if path is None:
        raise CorpusError(f"there is no bundled corpus named {name!r}.")
    return decode_text(path.read_bytes(), str(path.relative_to(CORPORA_DIR.parents[1])))


def decode_text(data: bytes, name: str = "the upload", limit: int = MAX_UPLOAD_BYTES) -> str:
    """Bytes of a ``.txt`` file -> text, refusing what is empty, huge, binary or not UTF-8.

    >>> decode_text("héllo".encode())
    'héllo'
    """
    if not data.strip():
        raise CorpusError(f"{name} is empty: choose a file with some text in it.")
    if len(data) > limit:
        raise CorpusError(
            f"{name} is {len(data) / 1e6:.1f} MB; the limit is {limit / 1e6:.0f} MB. "
            "Use a shorter extract."
        )
    if b"\x00" in data:
        raise CorpusError(f"{name} contains NUL bytes, so it looks binary: upload plain text.")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise CorpusError(
            f"{name} is not UTF-8 text (byte {exc.start} is 0x{data[exc.start]:02x}): "
            "save it as UTF-8 and upload it again."
        ) from None
    return text.replace("\r\n", "\n")
