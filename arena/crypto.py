"""Bot signing secrets encrypted at rest (``cryptography``'s Fernet: AES-128-CBC + HMAC-SHA256).

Keys: ``ARENA_ENCRYPTION_KEYS``, a comma-separated list of Fernet keys (44 URL-safe base64
characters each; make one with ``arena secrets new-key``). The first key encrypts; every key
decrypts (``MultiFernet``), which is how keys are rotated (``new,old``, then ``arena secrets
reencrypt``, then drop the old key: docs/operations.md, "Rotating").

Without the variable (a single-machine development install) the key is read from
``<ARENA_DATA_DIR>/bot-secret-key`` (created on first use, mode 0600); every process of an
installation must share it, so production sets ``ARENA_ENCRYPTION_KEYS`` explicitly.

A process whose keys cannot decrypt the stored secrets (a wrong key, the variable missing
so that its own key file is used, a malformed key) gets :class:`EncryptionKeyError`, whose
message says which of these it is, for an operator: a match it is given ends ``failed``
with that reason, a bot check ``error``, an API request 503.

Stored values are ``fernet:<token>``; a value without the prefix (a plaintext row from before
migration 0004, which encrypts them) is read as is. :class:`EncryptedText` is the
SQLAlchemy column type doing this transparently: ``bot.secret`` is always the plain secret in
Python and always ciphertext in the database.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from sqlalchemy import Text
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator

from arena.config import DEFAULT_DATA_DIR, ConfigError

ENV_KEYS = "ARENA_ENCRYPTION_KEYS"
KEY_FILE = "bot-secret-key"
PREFIX = "fernet:"


class EncryptionKeyError(ConfigError):
    """This process's ``ARENA_ENCRYPTION_KEYS`` cannot encrypt or decrypt the bot signing
    secrets (wrong, missing or malformed); ``str(exc)`` says which, for an operator (it
    starts with :data:`KEY_PROBLEM`; the caller adds where: which worker, the API), and
    holds no secret, key or path."""


#: The first words of every :class:`EncryptionKeyError` message.
KEY_PROBLEM = "the bot signing secrets cannot be decrypted"


def _key_file_path() -> Path:
    return Path(os.environ.get("ARENA_DATA_DIR") or DEFAULT_DATA_DIR).expanduser().resolve() / KEY_FILE


def new_key() -> str:
    """A fresh Fernet key (44 characters)."""
    return Fernet.generate_key().decode("ascii")


def _key_file_key() -> str:
    path = _key_file_path()
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
        raise EncryptionKeyError(
            f"{KEY_PROBLEM} or encrypted: {ENV_KEYS} is malformed (it must be comma-separated "
            f"Fernet keys, made with `arena secrets new-key`: {exc})"
        ) from None


def _env_keys() -> str:
    return os.environ.get(ENV_KEYS, "").strip()


def fernet() -> MultiFernet:
    """The keys of this process (module docstring).

    Raises:
        EncryptionKeyError: a malformed key (``ARENA_ENCRYPTION_KEYS``, or the key file).
    """
    return _fernet(_env_keys() or _key_file_key())


def encrypt(plain: str) -> str:
    """``fernet:<token>`` of ``plain`` with the first key."""
    return PREFIX + fernet().encrypt(plain.encode("utf-8")).decode("ascii")


def decrypt(stored: str) -> str:
    """The plain text of a stored value (a value without the prefix is returned as is).

    Raises:
        EncryptionKeyError: no key of this process decrypts it, or a key is malformed (the
            message names ``ARENA_ENCRYPTION_KEYS`` and says whether it is wrong or missing).
    """
    if not stored.startswith(PREFIX):
        return stored
    try:
        return fernet().decrypt(stored[len(PREFIX) :].encode("ascii")).decode("utf-8")
    except InvalidToken:
        raise EncryptionKeyError(_not_decrypted()) from None


def _not_decrypted() -> str:
    if _env_keys():
        return (
            f"{KEY_PROBLEM}: {ENV_KEYS} is wrong (none of its keys decrypts them; the API and "
            "every worker need the same keys)"
        )
    return (
        f"{KEY_PROBLEM}: {ENV_KEYS} is missing (the key file used instead holds another key; "
        "the API and every worker need the same keys)"
    )


def reencrypt(stored: str) -> str:
    """``stored`` encrypted with the first key (plaintext values are encrypted)."""
    if not stored.startswith(PREFIX):
        return encrypt(stored)
    return PREFIX + fernet().rotate(stored[len(PREFIX) :].encode("ascii")).decode("ascii")


class EncryptedText(TypeDecorator[str]):
    """A text column stored encrypted (module docstring); None stays NULL."""

    impl = Text
    cache_ok = True

    def process_bind_param(self, value: str | None, dialect: Dialect) -> str | None:
        return None if value is None else encrypt(value)

    def process_result_value(self, value: str | None, dialect: Dialect) -> str | None:
        return None if value is None else decrypt(value)
