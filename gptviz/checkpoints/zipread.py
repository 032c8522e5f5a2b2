"""Reading an uploaded zip's members: only stored and deflated ones (what a checkpoint's zip
holds), each unpacked in bounded chunks into a buffer of its declared size, never past it.

Python's ``zipfile`` unpacks a bzip2 or LZMA member a whole compressed block at a time
(a 4 KB piece of bzip2 can hold a gigabyte of zeros), so those are refused before a byte
is read; deflate unpacks at most one chunk per step (``zlib``'s ``max_length``).
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Collection
from pathlib import PurePosixPath

from gptviz.checkpoints.errors import CheckpointError, brief
from gptviz.i18n import _, number
from gptviz.work import add

CHUNK = 1 << 20  # bytes unpacked per step
LISTING = 65_536  # bytes of the zip's list of files (zipfile keeps ~500 B per entry)
METHODS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflate"}
OTHERS = {zipfile.ZIP_BZIP2: "bzip2", zipfile.ZIP_LZMA: "LZMA", 9: "Deflate64", 93: "Zstandard"}


class ZipReadError(CheckpointError):
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


def zip_members(data: bytes, wanted: Collection[str], what: str) -> ZipMembers:
    """The members of zip ``data`` named in ``wanted`` (at its root or in one folder), each
    checked to be readable here before any is unpacked; ``what`` says what the zip should
    hold, for the messages."""
    if (listing := directory_size(data) or 0) > LISTING:
        raise CheckpointError(_("the zip's list of files takes {listing} bytes "
                                "(the limit is {listing1}); a checkpoint zip "
                                "holds {what}.").format(
                                  listing=number(listing, 0, grouping=True),
                                  listing1=number(LISTING, 0, grouping=True), what=what))
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except Exception:  # zipfile's parser on any bytes (BadZipFile, NotImplementedError for a
        # "version 6.4" zip, struct.error, ...), its listing bounded above
        raise CheckpointError(_("the upload is not a .zip file: zip a checkpoint "
                                "folder holding {what}.").format(what=what)) from None
    found = ZipMembers(zf)
    for info in zf.infolist():
        name = PurePosixPath(info.filename).name
        if name not in wanted or info.is_dir() or "__MACOSX" in info.filename:
            continue
        if name in found:
            raise CheckpointError(_("the zip holds two files named {name}; keep "
                                    "one checkpoint per zip.").format(name=name))
        if info.flag_bits & 0x1:
            raise CheckpointError(_("{name} in the zip is encrypted; zip the "
                                    "folder again without a password.").format(name=name))
        if info.compress_type not in METHODS:
            method = OTHERS.get(info.compress_type, f"method {info.compress_type}")
            raise CheckpointError(_("{name} in the zip is compressed with "
                                    "{method}; a checkpoint zip uses deflate "
                                    "(what the Training page and every zip tool "
                                    "write by default) or no compression.").format(
                                      name=name, method=method))
        found[name] = info
    return found


class ZipMembers(dict):
    """name -> ZipInfo; an item is unpacked when read, CHUNK bytes at a time, into a
    bytearray of its declared size (a reader may view tensors in it without a copy)."""

    def __init__(self, zf: zipfile.ZipFile) -> None:
        super().__init__()
        self.zf = zf

    def size(self, name: str) -> int:
        return dict.__getitem__(self, name).file_size

    def __getitem__(self, name: str) -> bytearray:
        info = dict.__getitem__(self, name)
        out, size = bytearray(info.file_size), 0
        try:  # zipfile stops at the declared size, and checks the CRC of what it unpacked
            with self.zf.open(info) as f:
                while size < info.file_size and (chunk := f.read(min(CHUNK,
                                                                     info.file_size - size))):
                    add(bytes_unpacked=len(chunk))
                    out[size:size + len(chunk)] = chunk
                    size += len(chunk)
        except Exception as exc:  # zipfile on a damaged member: BadZipFile (its CRC), EOFError,
            # zlib.error, NotImplementedError, struct.error, ...; every step bounded by CHUNK
            raise ZipReadError(_("{name} in the zip cannot be unpacked ({exc}); "
                                 "zip the folder again.").format(
                                   name=name, exc=brief(exc))) from None
        if size < info.file_size:
            raise ZipReadError(_("{name} in the zip unpacks to {size} bytes but "
                                 "declares {file_size}; zip the folder again.").format(
                                   name=name, size=number(size, 0, grouping=True),
                                   file_size=number(info.file_size, 0, grouping=True)))
        return out
