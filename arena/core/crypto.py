"""Bot signing secrets encrypted at rest (``cryptography``'s Fernet: AES-128-CBC + HMAC-SHA256).

Keys: ``ARENA_ENCRYPTION_KEYS``, a comma-separated list of Fernet keys (44 URL-safe base64
characters each; make one with ``arena secrets new-key``). The first key encrypts; every key
decrypts (``MultiFernet``), which is how keys are rotated:

1. put a new key in front (``ARENA_ENCRYPTION_KEYS=new,old``) on the API and every worker;
2. run ``arena secrets reencrypt`` (every stored secret re-encrypted with the new key);
3. drop the old key from the list.

Without the variable (a single-machine development install) the key is read from
``<ARENA_DATA_DIR>/bot-secret-key`` (created on first use, mode 0600); every process of an
installation must share it, so production sets ``ARENA_ENCRYPTION_KEYS`` explicitly.

Stored values are ``fernet:<token>``; a value without the prefix is a plaintext row from
before migration 0004 (which encrypts them) and is read as is. :class:`EncryptedText` is the
SQLAlchemy column type doing this transparently: ``bot.secret`` is always the plain secret in
Python and always ciphertext in the database.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from sqlalchemy import Text
from sqlalchemy.types import TypeDecorator

from arena.core.config import DEFAULT_DATA_DIR, ConfigError

ENV_KEYS = "ARENA_ENCRYPTION_KEYS"
KEY_FILE = "bot-secret-key"
PREFIX = "fernet:"


def new_key() -> str:
    """A fresh Fernet key (44 characters)."""
    return Fernet.generate_key().decode("ascii")


def _key_file_key() -> str:
    path = Path(os.environ.get("ARENA_DATA_DIR") or DEFAULT_DATA_DIR).expanduser().resolve() / KEY_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_text().strip()
    key = new_key()
    with os.fdopen(fd, "w") as f:
        f.write(key + "\n")
    return key


@lru_cache(maxsize=4)
def _fernet(keys: str) -> MultiFernet:
    try:
        return MultiFernet([Fernet(k.strip().encode("ascii")) for k in keys.split(",") if k.strip()])
    except (ValueError, UnicodeEncodeError) as exc:
        raise ConfigError(f"{ENV_KEYS} must be comma-separated Fernet keys ({exc})") from None


def fernet() -> MultiFernet:
    """The keys of this process (module docstring). Raises :class:`ConfigError` for a bad key."""
    keys = os.environ.get(ENV_KEYS, "").strip() or _key_file_key()
    return _fernet(keys)


def encrypt(plain: str) -> str:
    """``fernet:<token>`` of ``plain`` with the first key."""
    return PREFIX + fernet().encrypt(plain.encode("utf-8")).decode("ascii")


def decrypt(stored: str) -> str:
    """The plain text of a stored value (a value without the prefix is returned as is).

    Raises:
        ConfigError: no configured key decrypts it (the message names ``ARENA_ENCRYPTION_KEYS``).
    """
    if not stored.startswith(PREFIX):
        return stored
    try:
        return fernet().decrypt(stored[len(PREFIX):].encode("ascii")).decode("utf-8")
    except InvalidToken:
        raise ConfigError(f"a stored bot secret is not decrypted by any key of {ENV_KEYS}") from None


def reencrypt(stored: str) -> str:
    """``stored`` encrypted with the first key (plaintext values are encrypted)."""
    if not stored.startswith(PREFIX):
        return encrypt(stored)
    return PREFIX + fernet().rotate(stored[len(PREFIX):].encode("ascii")).decode("ascii")


class EncryptedText(TypeDecorator):
    """A text column stored encrypted (module docstring); None stays NULL."""

    impl = Text
    cache_ok = True

    def process_bind_param(self, value, dialect):
        return None if value is None else encrypt(value)

    def process_result_value(self, value, dialect):
        return None if value is None else decrypt(value)
