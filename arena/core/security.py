"""API tokens and bot signing secrets.

Tokens are 256-bit random strings prefixed ``arena_``; only their SHA-256 hex digest is stored
(``accounts.token_hash``). A plain hash is enough because the token is high-entropy random
data, not a password, and it lets the API find the account with one indexed lookup.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

TOKEN_PREFIX = "arena_"


def new_token() -> str:
    """A fresh bearer token, e.g. ``arena_3q2...`` (49 characters)."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    """SHA-256 hex digest (64 characters) of ``token``, as stored in ``accounts.token_hash``."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def new_secret() -> str:
    """A fresh signing secret for a bot (64 hex characters)."""
    return secrets.token_hex(32)


def constant_time_equal(a: str, b: str) -> bool:
    """Compare two strings without leaking where they differ."""
    return hmac.compare_digest(a.encode("utf-8"), b.encode("utf-8"))
