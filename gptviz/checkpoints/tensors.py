"""Reading a safetensors file someone gave: its header checked whole before any tensor exists.

    8 bytes   N, the header's length (little-endian)
    N bytes   a JSON object, first byte "{": {"__metadata__": {str: str}, name: {"dtype":
              "F32", "shape": [3, 4], "data_offsets": [begin, end]}, ...}
    the rest  the tensors' bytes, back to back in the order of their offsets

That shape is how the format is told apart (``is_safetensors``), not a first byte: N is
any number, so a header of 128 + 256k bytes starts the file with 0x80, a pickle's first
byte. ``read_header`` bounds N before reading the JSON, then checks every entry's form
(a float dtype, a shape, offsets that tile the data); ``match`` checks the names and shapes
against what the model expects; ``view`` then shows one entry's bytes as a tensor, without
a copy when the data is a bytearray (the zip reader's), in the machine's byte order
(little-endian, as the format's, on every machine torch publishes wheels for but s390x).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import torch
from torch import Tensor

from gptviz.checkpoints.errors import CheckpointError, brief
from gptviz.i18n import _, number
from gptviz.tokenizers.base import TokenizerError, read_json
from gptviz.work import add

FLOATS = {"F64": torch.float64, "F32": torch.float32, "F16": torch.float16,
          "BF16": torch.bfloat16, "F8_E4M3": torch.float8_e4m3fn, "F8_E5M2": torch.float8_e5m2}
OTHERS = ("BOOL", "U8", "I8", "U16", "I16", "U32", "I32", "U64", "I64", "F8_E8M0", "F4",
          "F6_E2M3", "F6_E3M2", "C64")  # valid safetensors dtypes that are not weights
ENTRY_BYTES = 256  # header bytes allowed per expected tensor (ours take ~100, spaces too)
HEADER_BYTES = 65_536  # header bytes allowed besides (metadata, padding)
_JSON = {dict: "an object", list: "an array", str: "a string", int: "a number",
         float: "a number", bool: "true or false", type(None): "null"}


@dataclass(frozen=True)
class Entry:
    """One tensor of the file: its dtype, shape, and where its bytes are in the data."""

    dtype: str  # a key of FLOATS
    shape: tuple[int, ...]
    start: int  # offset of its first byte in the whole file
    end: int


def is_safetensors(data: bytes) -> bool:
    """Whether ``data`` is shaped as a safetensors file: a header length that fits the data,
    then a JSON object.

    >>> is_safetensors(bytes([2, 0, 0, 0, 0, 0, 0, 0]) + b"{}"), is_safetensors(b"\\x80\\x04")
    (True, False)
    """
    n = int.from_bytes(data[:8], "little")
    return len(data) >= 10 and 2 <= n <= len(data) - 8 and data[8:9] == b"{"


def header_limit(n_tensors: int) -> int:
    """The largest header accepted for a file of ``n_tensors`` tensors, in bytes."""
    return HEADER_BYTES + ENTRY_BYTES * n_tensors


def read_header(data: bytes, file: str, max_header: int) -> tuple[dict[str, Entry], dict]:
    """The entries (name -> Entry) and the metadata of safetensors ``data``, each checked for
    form; CheckpointError naming ``file`` otherwise. A header over ``max_header`` bytes is
    refused before it is read."""
    if not is_safetensors(data):
        if data[:1] == b"\x80" or data[:4] == b"PK\x03\x04":  # pickle; torch.save's zip
            raise CheckpointError(_("{file} looks like a pickle / torch.save "
                                    "file; gptviz never unpickles files. Save the "
                                    "weights with safetensors instead.").format(file=file))
        raise CheckpointError(_("{file} is not a valid safetensors file (it must "
                                "start with its header's length, then the header, "
                                "a JSON object).").format(file=file))
    n = int.from_bytes(data[:8], "little")
    if n > max_header:
        raise CheckpointError(_("{file}'s header takes {n} bytes; the tensors "
                                "this model needs take far less (the limit here "
                                "is {max_header}).").format(
                                  file=file, n=number(n, 0, grouping=True),
                                  max_header=number(max_header, 0, grouping=True)))
    try:
        header = read_json(bytes(data[8:8 + n]), f"{file}'s header", max_depth=3)
    except TokenizerError as exc:
        raise CheckpointError(brief(exc)) from None
    if not isinstance(header, dict):
        raise CheckpointError(_("{file}'s header is {json}, not a JSON object.").format(
                                  file=file, json=_JSON[type(header)]))
    meta = header.pop("__metadata__", {})
    if not isinstance(meta, dict) or not all(isinstance(v, str) for v in meta.values()):
        raise CheckpointError(_("{file}: __metadata__ must map names to strings.").format(
                                  file=file))
    add(header_entries=len(header))
    entries = {name: _entry(file, name, value, 8 + n) for name, value in header.items()}
    at = 8 + n  # the tensors tile the rest of the file, in the order of their offsets
    for name, e in sorted(entries.items(), key=lambda kv: (kv[1].start, kv[1].end)):
        if e.start != at:
            raise CheckpointError(_("{file}: {name}'s bytes start at {start}, "
                                    "where {at} was expected (offsets overlap "
                                    "or leave a gap).").format(
                                      file=file, name=name,
                                      start=number(e.start - 8 - n, 0, grouping=True),
                                      at=number(at - 8 - n, 0, grouping=True)))
        at = e.end
    if at != len(data):
        raise CheckpointError(_("{file}'s tensors take {at} bytes but the file "
                                "holds {n_data} after its header.").format(
                                  file=file, at=number(at - 8 - n, 0, grouping=True),
                                  n_data=number(len(data) - 8 - n, 0, grouping=True)))
    return entries, meta


def _entry(file: str, name: str, value: object, base: int) -> Entry:
    """One header entry as an Entry, once its dtype, shape and offsets make sense."""
    if not isinstance(value, dict):
        raise CheckpointError(_("{file}: the entry of {name} is {json}, not a "
                                "JSON object.").format(
                                  file=file, name=name, json=_JSON[type(value)]))
    dtype, shape, offsets = value.get("dtype"), value.get("shape"), value.get("data_offsets")
    if not isinstance(dtype, str) or dtype not in FLOATS:
        what = f"dtype {dtype}" if dtype in OTHERS else f"no known dtype ({str(dtype)[:20]!r})"
        raise CheckpointError(_("{file}: {name} has {what}; weights must be "
                                "floats ({floats}).").format(
                                  file=file, name=name, what=what, floats=', '.join(FLOATS)))
    if not _naturals(shape) or not _naturals(offsets) or len(offsets) != 2:
        raise CheckpointError(_("{file}: {name} needs a shape (a list of sizes) "
                                "and data_offsets [begin, end].").format(file=file, name=name))
    size = math.prod(shape) * FLOATS[dtype].itemsize
    if offsets[1] - offsets[0] != size:
        raise CheckpointError(_("{file}: {name} of shape {shape} and dtype "
                                "{dtype} takes {size} bytes, but its offsets "
                                "give {offsets}.").format(
                                  file=file, name=name, shape=tuple(shape), dtype=dtype,
                                  size=number(size, 0, grouping=True),
                                  offsets=number(offsets[1] - offsets[0], 0, grouping=True)))
    return Entry(dtype, tuple(shape), base + offsets[0], base + offsets[1])


def _naturals(value: object) -> bool:
    return isinstance(value, list) and all(
        isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value)


def match(entries: Mapping[str, Entry], expected: Mapping[str, tuple[int, ...]], file: str,
          against: str) -> None:
    """CheckpointError unless ``entries`` holds exactly the names of ``expected``, each of
    its shape (``against`` names what implies them, e.g. "config.json")."""
    unknown = sorted(set(entries) - set(expected))
    absent = sorted(set(expected) - set(entries))
    if unknown or absent:
        raise CheckpointError(_("{file} does not match {against}: missing "
                                "{absent}, unexpected {unknown}.").format(
                                  file=file, against=against, absent=absent[:5],
                                  unknown=unknown[:5]))
    for name, e in entries.items():
        if e.shape != tuple(expected[name]):
            raise CheckpointError(_("{file}: {name} has shape {shape} but "
                                    "{against} implies {expected}.").format(
                                      file=file, name=name, shape=e.shape, against=against,
                                      expected=tuple(expected[name])))


def view(data: bytes, entry: Entry) -> Tensor:
    """The tensor ``entry`` describes, its bytes viewed in ``data`` (a bytearray: no copy;
    bytes: copied, torch views only writable memory)."""
    add(tensor_bytes=entry.end - entry.start)
    dtype = FLOATS[entry.dtype]
    if entry.end == entry.start:
        return torch.empty(entry.shape, dtype=dtype)
    buffer = data if isinstance(data, bytearray) else bytearray(data[entry.start:entry.end])
    offset = entry.start if buffer is data else 0
    count = (entry.end - entry.start) // dtype.itemsize
    return torch.frombuffer(buffer, dtype=dtype, count=count, offset=offset).view(entry.shape)


def finite(t: Tensor) -> bool:
    """Whether every number of ``t`` is finite (float8 has no isfinite: widened first)."""
    return bool(torch.isfinite(t if t.dtype.itemsize > 1 else t.float()).all())
