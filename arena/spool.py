"""The result spool: a played match's result kept in Redis while PostgreSQL cannot store it.

A worker whose store of a played match fails for a transient database error (an outage)
writes the result to the spool before it retries (:func:`put`): the key
``arena:spool:<match_id>`` (:func:`key`) holds the gzip of one strict-JSON record
(:mod:`arena.matchlog`'s codec)::

    {"format": "daifugo-arena-spool", "version": 1, "match_id", "tournament_id",
     "match_index", "commitment", "ruleset", "attempt", "fields": {...}, "log": {...}}

``fields`` are the :func:`arena.lifecycle.store_result` keyword arguments besides the
log (scores, places, faults, games, timings). The key expires after ``ARENA_SPOOL_TTL_S``
seconds. The worker deletes it once the result is stored. If the worker gives up
(``ARENA_STORE_RETRY_S``) or dies, the reaper stores the spooled result when the database is
back (:func:`store_spooled`), and does not re-queue the match meanwhile, even with its lease
expired: a played match is stored, never played again with new deals. ``store_result`` is
idempotent, so the worker and the reaper racing store it once.

A record is stored only into the match it was played for: the row's tournament, schedule
index and the tournament's seed commitment must be the record's (a Redis shared by mistake
with another database holds keys of the same match ids).
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any, cast

import redis
from sqlalchemy.orm import Session

from arena import lifecycle, matchlog
from arena.db.models import Match, Tournament

log = logging.getLogger("arena.spool")

KEY_PREFIX = "arena:spool:"
SPOOL_FORMAT = "daifugo-arena-spool"
SPOOL_VERSION = 1
#: Keys read per ``SCAN`` call.
SCAN_COUNT = 500


def key(match_id: int) -> str:
    """The Redis key of match ``match_id``'s spooled result."""
    return f"{KEY_PREFIX}{int(match_id)}"


@dataclass(frozen=True)
class SpooledResult:
    """A played match's result waiting to be stored: who it belongs to (match, tournament,
    schedule index, seed commitment, rule set, the attempt that played it), the
    ``store_result`` keyword arguments besides the log (``fields``) and the log."""

    match_id: int
    tournament_id: int
    match_index: int
    commitment: str | None
    ruleset: str
    attempt: int
    fields: dict[str, Any]
    log: matchlog.MatchLog

    def encode(self) -> bytes:
        """The gzip of the record as strict JSON (module docstring).

        Raises:
            arena.matchlog.LogEncodingError: the log or the fields are not strict JSON.
        """
        return matchlog.compress({"format": SPOOL_FORMAT, "version": SPOOL_VERSION, **asdict(self)})[0]

    @classmethod
    def decode(cls, data: bytes) -> SpooledResult:
        """The record of :meth:`encode`'s bytes.

        Raises:
            ValueError: not a spooled result of this version.
        """
        raw = matchlog.decode(data)
        if not isinstance(raw, dict) or raw.get("format") != SPOOL_FORMAT or raw.get("version") != SPOOL_VERSION:
            raise ValueError("not a spooled result")
        try:
            return cls(
                match_id=int(raw["match_id"]),
                tournament_id=int(raw["tournament_id"]),
                match_index=int(raw["match_index"]),
                commitment=raw["commitment"],
                ruleset=str(raw["ruleset"]),
                attempt=int(raw["attempt"]),
                fields=dict(raw["fields"]),
                log=cast(matchlog.MatchLog, dict(raw["log"])),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"a spooled result without {exc}") from None


def put(client: redis.Redis, record: SpooledResult, ttl_s: float) -> None:
    """Spool ``record`` for ``ttl_s`` seconds (replacing an earlier one of the match).

    Raises:
        redis.RedisError: Redis cannot be written.
        arena.matchlog.LogEncodingError: the record is not strict JSON.
    """
    client.set(key(record.match_id), record.encode(), ex=max(1, int(ttl_s)))


def get(client: redis.Redis, match_id: int) -> SpooledResult | None:
    """The spooled result of match ``match_id``; None when there is none, or it cannot be
    read back (logged: it is deleted, as nothing could store it).

    Raises:
        redis.RedisError: Redis cannot be read.
    """
    data = client.get(key(match_id))
    if data is None:
        return None
    try:
        return SpooledResult.decode(bytes(data))  # type: ignore[arg-type]
    except ValueError as exc:
        log.error("match %s: the spooled result cannot be read (%s); deleted", match_id, exc)
        drop(client, match_id)
        return None


def drop(client: redis.Redis, match_id: int) -> None:
    """Delete match ``match_id``'s spooled result (none: nothing happens).

    Raises:
        redis.RedisError: Redis cannot be written.
    """
    client.delete(key(match_id))


def spooled_ids(client: redis.Redis) -> list[int]:
    """Match ids of every spooled result in Redis, ascending (``SCAN``, never ``KEYS``).

    Raises:
        redis.RedisError: Redis cannot be read.
    """
    ids = set()
    for raw in client.scan_iter(match=KEY_PREFIX + "*", count=SCAN_COUNT):
        tail = (raw.decode() if isinstance(raw, bytes) else str(raw))[len(KEY_PREFIX) :]
        if tail.isdigit():
            ids.add(int(tail))
    return sorted(ids)


class Outcome(StrEnum):
    """What :func:`store_spooled` did with a spooled result."""

    #: Stored now; the spool entry is deleted.
    STORED = "stored"
    #: The match already had its result (the worker stored it first), or another attempt took
    #: the match over (the result is stale: fencing); the entry is deleted.
    DUPLICATE = "duplicate"
    #: Not this database's match (another tournament, index or commitment, or no such
    #: match): left alone.
    FOREIGN = "foreign"
    #: The match's result can never be stored from it (its seats do not fit, a log that is
    #: not strict JSON); the entry is deleted, so the reaper may play the match again.
    UNUSABLE = "unusable"


def belongs(session: Session, record: SpooledResult) -> bool:
    """True when ``record`` was played for the match row of its id in this database (the
    module docstring's check)."""
    match = session.get(Match, record.match_id)
    if match is None or match.tournament_id != record.tournament_id or match.index != record.match_index:
        return False
    t = session.get(Tournament, record.tournament_id)
    return t is not None and t.commitment == record.commitment


def store_spooled(session: Session, client: redis.Redis, record: SpooledResult) -> tuple[Outcome, lifecycle.Stored]:
    """Store a spooled result (:func:`arena.lifecycle.store_result`: exactly once; it
    commits) if it belongs to this database, and delete its spool entry unless it is
    :attr:`Outcome.FOREIGN`. Returns what happened and what the store did
    (:class:`arena.lifecycle.Stored`: the round it added, to send to the broker).

    Raises:
        sqlalchemy.exc.OperationalError, sqlalchemy.exc.InterfaceError: the database is
            unreachable (the entry stays; try again later).
        redis.RedisError: the entry could not be deleted (the result is stored; the next
            attempt finds it stored and deletes the entry).
    """
    if not belongs(session, record):
        session.rollback()
        return Outcome.FOREIGN, lifecycle.Stored(False)
    try:
        stored = lifecycle.store_result(
            session, record.match_id, log=record.log, attempt=record.attempt, **record.fields
        )
    except (ValueError, TypeError) as exc:  # LogEncodingError is a ValueError
        session.rollback()
        log.error("match %s: the spooled result cannot be stored (%s); deleted", record.match_id, type(exc).__name__)
        drop(client, record.match_id)
        return Outcome.UNUSABLE, lifecycle.Stored(False)
    if stored.stale:  # another delivery took the match over: its result counts, not this one
        log.warning("match %s: the spooled result of attempt %d is stale; deleted", record.match_id, record.attempt)
    drop(client, record.match_id)
    return (Outcome.STORED if stored else Outcome.DUPLICATE), stored
