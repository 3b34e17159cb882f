"""Provably fair deals: the seed chain of a tournament and its commitment (docs/fairness.md).

Pure functions, no database. Every deal of a tournament follows from its secret seed ``S``
(an integer, ``0 <= S < 2**63``) by this chain, where ``H(x, p1, p2, ...)`` is
:func:`arena.seeds.derive_seed`: the first 8 bytes of
``SHA-256(":".join(decimal/str of x, p1, p2, ...) as UTF-8)`` read big-endian, shifted
right by one bit (a 63-bit integer)::

    match seed   = H(S, "tournament", tournament_id, "match", match_index)
    attempt seed = H(match seed, "attempt", attempt)          # attempt = 1, 2, ... (claims)
    game seed    = H(attempt seed, game_index)                # game_index = 0, 1, ...
    deal         = engine.new_game(ruleset, options, game seed)

When the tournament starts, ``S`` (:func:`new_seed`, unless the organizer set it) and a
fresh 32-byte ``salt`` are drawn and the *commitment*
``SHA-256(salt || S.to_bytes(8, "big"))`` (lowercase hex) is published; the seed and salt
stay secret until the tournament is over (:func:`arena.access.can_see_seed`), then
both are shown, so anyone can check the commitment and recompute every deal
(``arena logs verify --seed S --salt HEX``).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

from arena.seeds import attempt_seed, derive_seed, game_seed, match_seed

#: Salt length in bytes (shown as 64 lowercase hex digits).
SALT_BYTES = 32
#: Seeds are unsigned 63-bit integers (they fit a signed BIGINT).
SEED_LIMIT = 2**63


class FairnessError(ValueError):
    """A seed, salt or commitment that does not check; the message says which."""


def new_seed() -> int:
    """A fresh tournament seed: 63 random bits from :mod:`secrets` (drawn when a tournament
    starts, in the transaction that publishes its commitment)."""
    return secrets.randbits(63)


def new_salt() -> str:
    """A fresh random salt: ``SALT_BYTES`` bytes from :mod:`secrets`, as lowercase hex."""
    return secrets.token_hex(SALT_BYTES)


def seed_bytes(seed: int) -> bytes:
    """The 8-byte big-endian encoding of a tournament seed.

    Raises:
        FairnessError: ``seed`` is not an integer in ``0 .. 2**63 - 1``.
    """
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < SEED_LIMIT:
        raise FairnessError(f"a tournament seed is an integer from 0 to 2**63 - 1, got {seed!r}")
    return seed.to_bytes(8, "big")


def salt_bytes(salt: str) -> bytes:
    """The bytes of a hex salt.

    Raises:
        FairnessError: not ``2 * SALT_BYTES`` hex digits.
    """
    try:
        raw = bytes.fromhex(salt)
    except (TypeError, ValueError):
        raw = b""
    if len(raw) != SALT_BYTES:
        raise FairnessError(f"a salt is {2 * SALT_BYTES} hex digits")
    return raw


def commitment(seed: int, salt: str) -> str:
    """``SHA-256(salt || seed as 8 bytes big-endian)`` in lowercase hex (64 digits).

    Raises:
        FairnessError: a bad seed or salt (see :func:`seed_bytes`, :func:`salt_bytes`).
    """
    return hashlib.sha256(salt_bytes(salt) + seed_bytes(seed)).hexdigest()


def check_commitment(seed: int, salt: str, published: str) -> None:
    """Raise :class:`FairnessError` unless ``published`` is the commitment of ``seed`` and ``salt``."""
    if not isinstance(published, str) or not hmac.compare_digest(commitment(seed, salt), published.lower()):
        raise FairnessError("the seed and salt do not match the published commitment")


__all__ = [
    "SALT_BYTES",
    "derive_seed",
    "FairnessError",
    "new_seed",
    "new_salt",
    "seed_bytes",
    "salt_bytes",
    "commitment",
    "check_commitment",
    "match_seed",
    "attempt_seed",
    "game_seed",
]
