"""Generated text as a reader sees it: never a "�".

A byte-level model writes bytes, and nothing forces it to finish a character: it may
emit ``e2 80`` (the start of "—") and then a space. ``decode`` turns such bytes into
U+FFFD, which hides what the model wrote. Here the ids are joined into one byte string
first (so a character split over two tokens is whole again), every complete UTF-8
character is shown as text, and each run of bytes that is no character is shown as its
bytes, ``‹e2 80›``, the notation of the token chips; control characters other than
newline and tab are shown as ``\\x1b``, as the chips show them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from gptviz.tokenizers.base import Tokenizer

_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # C0 and C1 but newline and tab


def byte_notation(data: bytes) -> str:
    """Bytes as the chips show a partial token: two-digit hex between ‹ and ›.

    >>> byte_notation(b"\\xe2\\x80")
    '‹e2 80›'
    """
    return "‹" + " ".join(f"{b:02x}" for b in data) + "›"


def byte_runs(data: bytes) -> list[tuple[str | bytes, bool]]:
    """``data`` cut into runs: (text, True) for whole UTF-8, (bytes, False) for the rest.

    Neighbouring bad bytes form one run.

    >>> byte_runs("é".encode() + b"\\xf0\\x9d" + b"\\x80 ok")
    [('é', True), (b'\\xf0\\x9d\\x80', False), (' ok', True)]
    """
    runs: list[tuple[str | bytes, bool]] = []
    rest = data
    while rest:
        try:
            runs.append((rest.decode("utf-8"), True))
            break
        except UnicodeDecodeError as exc:
            if exc.start:
                runs.append((rest[:exc.start].decode("utf-8"), True))
            bad = rest[exc.start:exc.end]
            if runs and not runs[-1][1]:
                bad = runs.pop()[0] + bad  # type: ignore[operator]
            runs.append((bad, False))
            rest = rest[exc.end:]
    return runs


def shown_controls(text: str) -> str:
    """Control characters other than newline and tab as ``\\x1b``, as the chips show them:
    a model may write them, and a terminal escape or a lone carriage return would garble
    the text around it.

    >>> shown_controls("a\\x1b[0m\\r\\n\\tb")
    'a\\\\x1b[0m\\\\x0d\\n\\tb'
    """
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def readable_bytes(data: bytes) -> str:
    """Whole characters as text (control characters as ``\\x01``), other bytes as ``‹…›``.

    >>> readable_bytes("é 𝔄".encode()[:-2] + b" ok")
    'é ‹f0 9d› ok'
    """
    return "".join(shown_controls(run) if ok else byte_notation(run)
                   for run, ok in byte_runs(data))


def readable_decode(tokenizer: Tokenizer, ids: Iterable[int]) -> str:
    """``tokenizer.decode(ids)``, except that bytes which are no character show as ``‹…›``
    and control characters (but newline and tab) as ``\\x1b``.

    Equal to ``decode`` whenever the ids spell whole characters and no control character
    (so for the char and word tokenizers on ordinary text); raises TokenizerError for an id
    outside the vocabulary.
    """
    data = b"".join(tokenizer.id_to_bytes(i) for i in tokenizer.check_ids(ids))
    return readable_bytes(data)
