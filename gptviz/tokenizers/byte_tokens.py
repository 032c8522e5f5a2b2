"""Byte-level tokens for display: TokenInfo rows whose spans follow the UTF-8 bytes, and a
BPE merge trace replayed on a text, one state per merge."""

from __future__ import annotations

from gptviz.tokenizers.base import TokenInfo


def byte_token_infos(ids: list[int], text: str, id_to_bytes, special_ids: set[int],
                     bos: bool = False, eos: bool = False) -> list[TokenInfo]:
    """Character spans for byte-level ids: a token that holds part of a
    multi-byte character covers that character and is marked ``partial``.

    Works for any tokenizer whose ids concatenate to the UTF-8 of ``text``
    (specials spelled out in it), with optional BOS/EOS markers around it.
    """
    char_of_byte = []  # byte offset -> index of the character it belongs to
    for ci, ch in enumerate(text):
        char_of_byte.extend([ci] * len(ch.encode("utf-8")))
    char_of_byte.append(len(text))
    out, pos = [], 0
    body = ids[1 if bos else 0: len(ids) - (1 if eos else 0)]
    if bos:
        out.append(_info(ids[0], id_to_bytes, (0, 0), True))
    for idx in body:
        data = id_to_bytes(idx)
        start = char_of_byte[pos]
        end = char_of_byte[pos + len(data) - 1] + 1 if data else start
        pos += len(data)
        out.append(_info(idx, id_to_bytes, (start, end), idx in special_ids))
    if eos:
        out.append(_info(ids[-1], id_to_bytes, (len(text), len(text)), True))
    return out


def _info(idx: int, id_to_bytes, span: tuple[int, int], special: bool) -> TokenInfo:
    data = id_to_bytes(idx)
    try:
        data.decode("utf-8")
        partial = False
    except UnicodeDecodeError:
        partial = True
    return TokenInfo(idx, data.decode("utf-8", errors="replace"), data, span,
                     special=special, partial=partial)


def replay_steps(data: bytes, steps: list[tuple[int, int, int]], id_to_bytes) -> list[list[bytes]]:
    """The parts of a chunk before and after each merge step of ``encode_with_steps``.

    >>> replay_steps(b"abc", [(256, 97, 98)], {97: b"a", 98: b"b"}.get)
    [[b'a', b'b', b'c'], [b'ab', b'c']]
    """
    parts = [data[i:i + 1] for i in range(len(data))]
    states = [list(parts)]
    for _, left, right in steps:
        a, b = id_to_bytes(left), id_to_bytes(right)
        i = next(i for i in range(len(parts) - 1) if parts[i] == a and parts[i + 1] == b)
        parts[i:i + 2] = [a + b]
        states.append(list(parts))
    return states
