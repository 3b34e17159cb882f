"""Seed derivation: the one function every seed of the arena comes from (docs/fairness.md).

``derive_seed(x, p1, p2, ...)`` is the first 8 bytes of
``SHA-256(":".join(decimal/str of x, p1, p2, ...) as UTF-8)`` read big-endian, shifted right
by one bit: a 63-bit integer (fits a signed BIGINT). The chain of a tournament::

    match seed   = derive_seed(S, "tournament", tournament_id, "match", match_index)
    attempt seed = derive_seed(match seed, "attempt", attempt)    # attempt = 1, 2, ...
    game seed    = derive_seed(attempt seed, game_index)          # game_index = 0, 1, ...

Schedules (:mod:`arena.schedule`) and house bots derive their own seeds the same way, with
other labels. Pure, standard library only.
"""

from __future__ import annotations

import hashlib


def derive_seed(seed: int, *parts: object) -> int:
    """A 63-bit seed from ``seed`` and ``parts`` (module docstring), reproducible."""
    text = ":".join(str(p) for p in (seed, *parts))
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") >> 1


def match_seed(tournament_seed: int, tournament_id: int, index: int) -> int:
    """The seed of match ``index`` (schedule position) of tournament ``tournament_id``."""
    return derive_seed(tournament_seed, "tournament", tournament_id, "match", index)


def attempt_seed(seed_of_match: int, attempt: int) -> int:
    """The seed a match is played from on its ``attempt``-th claim (1, 2, ...): a match
    played again after a crash or an outage gets fresh deals."""
    return derive_seed(seed_of_match, "attempt", attempt)


def game_seed(seed_of_attempt: int, game_index: int) -> int:
    """The seed of game ``game_index`` of a match played from ``seed_of_attempt``."""
    return derive_seed(seed_of_attempt, game_index)
