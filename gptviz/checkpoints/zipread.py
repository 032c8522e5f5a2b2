"""Reading a zip's members within declared sizes (for uploaded checkpoints)."""

from __future__ import annotations

import zipfile
import zlib


class ZipReadError(ValueError):
    """A member of the zip cannot be read as declared; the message says which and why."""


def directory_size(data: bytes) -> int | None:
    """Bytes of the zip's list of files, from its end record found as ``zipfile`` finds it."""
    end = len(data) - 22
    if not (end >= 0 and data[end:end + 4] == b"PK\x05\x06" and data[-2:] == b"\0\0"):
        end = data.rfind(b"PK\x05\x06", max(0, len(data) - 22 - 65_535))
        if end < 0 or len(data) - end < 22:
            return None
    if end >= 20 and data[end - 20:end - 16] == b"PK\x06\x07":
        return 1 << 64  # zip64: never needed for a checkpoint
    return int.from_bytes(data[end + 12:end + 16], "little")


class ZipMembers(dict):
    """name -> ZipInfo; an item is unpacked when read, a megabyte at a time, up to its size."""

    def __init__(self, zf: zipfile.ZipFile) -> None:
        super().__init__()
        self.zf = zf

    def size(self, name: str) -> int:
        return dict.__getitem__(self, name).file_size

    def __getitem__(self, name: str) -> bytes:
        info, parts, size = dict.__getitem__(self, name), [], 0
        try:
            with self.zf.open(info) as f:
                while chunk := f.read(min(1 << 20, info.file_size + 1 - size)):
                    parts.append(chunk)
                    size += len(chunk)
        except (zipfile.BadZipFile, OSError, EOFError, zlib.error, RuntimeError,
                NotImplementedError) as exc:  # damaged, encrypted, or an unknown method
            raise ZipReadError(f"{name} in the zip cannot be unpacked ({exc}); zip the "
                                  "folder again, without encryption.") from None
        if size > info.file_size:
            raise ZipReadError(f"{name} in the zip unpacks to more than it declares.")
        return b"".join(parts)
