"""Join codes, the teacher's credential and the students' ids: random, and checked by shape.

A join code is short enough to type from a projector and too many to guess: ``CODE_LENGTH``
characters of ``ALPHABET`` (25 letters and digits, without look-alikes such as 0/O, 1/I/L,
2/Z, 5/S, 8/B), about 2.4e8 codes, and join attempts are rate-limited per client. The
teacher's credential is a 256-bit random token kept only as a hash by the store.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets

ALPHABET = "ACDEFGHJKMNPQRTUVWXY34679"  # no 0 O 1 I L 2 Z 5 S 8 B: nothing read as another
CODE_LENGTH = 6  # 25**6 ≈ 2.4e8 codes
TOKEN_BYTES = 32  # the teacher's credential: 256 random bits
STUDENT_ID_BYTES = 16
_ID = re.compile(r"[A-Za-z0-9_-]{16,64}")  # what token_urlsafe makes (ids and tokens)
_SEPARATORS = re.compile(r"[\s\-_.·]+")


def new_code() -> str:
    """A fresh join code: ``len(new_code()) == CODE_LENGTH``, letters of ``ALPHABET`` only."""
    return "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))


def normalize_code(raw: object) -> str | None:
    """The code a student meant, or None when it cannot be one: case, spaces and dashes
    do not matter; a character outside ``ALPHABET`` (a look-alike such as 0 or 1) makes
    it no code at all.

    >>> normalize_code(" ac-d e3f "), normalize_code("ACDE3FX"), normalize_code(None)
    ('ACDE3F', None, None)
    >>> normalize_code("HAN0EY") is None
    True
    """
    if not isinstance(raw, str) or len(raw) > 64:
        return None
    code = _SEPARATORS.sub("", raw).upper()
    if len(code) != CODE_LENGTH or any(c not in ALPHABET for c in code):
        return None
    return code


def new_token() -> str:
    """The teacher's credential (43 URL-safe characters); the store keeps its hash only."""
    return secrets.token_urlsafe(TOKEN_BYTES)


def token_hash(token: str) -> str:
    """What the store keeps of a credential: its SHA-256, hex.

    >>> token_hash("abc")[:16]
    'ba7816bf8f01cfea'
    """
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def same_token(token: object, stored_hash: str) -> bool:
    """Whether ``token`` is the credential whose hash is ``stored_hash`` (in constant time).

    >>> same_token("abc", token_hash("abc")), same_token("abd", token_hash("abc"))
    (True, False)
    """
    if not isinstance(token, str) or not token or len(token) > 256:
        return False
    return hmac.compare_digest(token_hash(token), stored_hash)


def new_student_id() -> str:
    """A student's id, kept in the browser: 22 URL-safe characters."""
    return secrets.token_urlsafe(STUDENT_ID_BYTES)


def valid_id(raw: object) -> bool:
    """Whether ``raw`` has the shape of an id or token this module makes.

    >>> valid_id("a" * 22), valid_id("a b" * 8), valid_id("x"), valid_id(None)
    (True, False, False, False)
    """
    return isinstance(raw, str) and _ID.fullmatch(raw) is not None
