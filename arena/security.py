"""API tokens and bot signing secrets.

Tokens are 256-bit random strings prefixed ``arena_``; only their SHA-256 hex digest is stored
(``accounts.token_hash``). A plain hash is enough because the token is high-entropy random
data, not a password, and it lets the API find the account with one indexed lookup.

A token may carry an expiry (``accounts.token_expires_at``); ``POST /api/v1/accounts/me/token``
replaces it (the old one stops working at once). A bot's signing secret is rotated with
``POST /api/v1/bots/{id}/secret``: the arena signs with the new secret at once and, for
:data:`SECRET_GRACE_S` seconds, also with the previous one (header
``X-Arena-Signature-Previous``, bots_sdk.protocol), so a bot still configured with the old
secret keeps verifying requests until its owner deploys the new one.
"""

from __future__ import annotations

import hashlib
import secrets

TOKEN_PREFIX = "arena_"
#: Grace period of a rotated bot secret, seconds (24 hours): the previous secret still signs.
SECRET_GRACE_S = 24 * 3600
#: Longest token lifetime a caller may ask for, days.
MAX_TOKEN_DAYS = 3650


def new_token() -> str:
    """A fresh bearer token, e.g. ``arena_3q2...`` (49 characters)."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    """SHA-256 hex digest (64 characters) of ``token``, as stored in ``accounts.token_hash``."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def new_secret() -> str:
    """A fresh signing secret for a bot (64 hex characters)."""
    return secrets.token_hex(32)
