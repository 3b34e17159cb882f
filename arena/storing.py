"""Storing a played match's result (step 4 of :func:`arena.delivery.play_and_store`): the
store with retries (:func:`store_with_retry`, for ``ARENA_STORE_RETRY_S``), the spool that
keeps the result in Redis meanwhile (:class:`ResultSpool`), and the store of a spooled result
(:func:`store_from_spool`, the reaper's and a later delivery's).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import redis
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.orm import Session, sessionmaker

from arena import lifecycle, matchlog, spool
from arena.config import Settings
from arena.dispatch import Dispatcher
from arena.followups import Ending, follow
from arena.lifecycle import MatchPlan
from arena.matchlog import MatchLog
from arena.playing import worker_redis
from arena.status import ParStatus

log = logging.getLogger("arena.tasks")


def par_status(settings: Settings) -> str:
    """The ``par_status`` a result is stored with: ``pending``, or ``skipped`` when pars are
    off (``ARENA_PAR_ROLLOUTS=0``)."""
    return ParStatus.PENDING.value if settings.par_rollouts > 0 else ParStatus.SKIPPED.value


#: The first wait between two attempts at storing a played match's result, seconds, doubling
#: each time up to :data:`STORE_BACKOFF_MAX_S`; the worker keeps trying for
#: ``ARENA_STORE_RETRY_S`` (:attr:`Settings.store_retry_s`), then leaves the result to the
#: spool (:mod:`arena.spool`) and the reaper. Retry the store, never the play.
STORE_BACKOFF_S = 0.5


STORE_BACKOFF_MAX_S = 10.0


#: Database errors worth another attempt (connection lost, server restarting, serialization
#: failure, deadlock, no pooled connection free in time); anything else fails the store at once.
TRANSIENT_DB_ERRORS = (OperationalError, InterfaceError, PoolTimeout)


class StoreFailed(RuntimeError):
    """A played match's result could not be stored; ``str(exc)`` is a short reason.
    ``transient``: the database kept failing for a transient error until the retries were
    spent (it may store it later), as opposed to a result it can never store."""

    def __init__(self, reason: str, *, transient: bool = False):
        super().__init__(reason)
        self.transient = transient


def store_with_retry(
    factory: sessionmaker[Session],
    match_id: int,
    match_log: MatchLog,
    fields: dict[str, Any],
    *,
    retry_s: float,
    backoff_s: float | None = None,
    backoff_max_s: float | None = None,
    on_retry: Callable[[int], None] | None = None,
    fence: int | None = None,
) -> lifecycle.Stored:
    """Step 4 with retries: :func:`arena.lifecycle.store_result` (fenced by ``fence``, the attempt
    that played it: it stores only while that is the match's current attempt), again after a
    transient database error (:data:`TRANSIENT_DB_ERRORS`) for up to ``retry_s`` seconds from the
    first attempt, waiting ``backoff_s`` seconds (default :data:`STORE_BACKOFF_S`), then twice as
    long each time up to ``backoff_max_s`` (default :data:`STORE_BACKOFF_MAX_S`). Before each wait
    ``on_retry(attempt)`` is called (the caller spools the result). The match is never played again
    for it.

    Returns:
        :class:`arena.lifecycle.Stored`: true if stored, false if a result was already stored
        (a duplicate delivery, or the reaper stored the spooled result first) or the attempt
        is stale (``stale``: another delivery took the match over).
    Raises:
        StoreFailed: the log is not strict JSON, a non-transient database error, or
            transient errors for ``retry_s`` seconds (``transient`` set; the cause is chained).
    """
    wait = STORE_BACKOFF_S if backoff_s is None else backoff_s
    cap = STORE_BACKOFF_MAX_S if backoff_max_s is None else backoff_max_s
    deadline = time.monotonic() + retry_s
    attempt = 0
    while True:
        attempt += 1
        try:
            with factory() as session:
                return lifecycle.store_result(session, match_id, log=match_log, attempt=fence, **fields)
        except matchlog.LogEncodingError as exc:
            raise StoreFailed(f"could not store the result: {exc}") from exc
        except TRANSIENT_DB_ERRORS as exc:
            left = deadline - time.monotonic()
            if left <= 0:
                raise StoreFailed(
                    f"could not store the result in {retry_s:g} s ({attempt} attempts): "
                    f"{type(exc).__name__} (database unavailable)",
                    transient=True,
                ) from exc
            pause = min(wait, left)
            log.warning(
                "match %s: storing the result failed (%s), attempt %d, again in %.1f s",
                match_id,
                type(exc).__name__,
                attempt,
                pause,
            )
            if on_retry is not None:
                on_retry(attempt)
            time.sleep(pause)
            wait = min(wait * 2, cap)
        except DBAPIError as exc:
            raise StoreFailed(f"could not store the result: {type(exc).__name__}") from exc


def spool_client(settings: Settings) -> redis.Redis | None:
    """The Redis client of the result spool (:mod:`arena.spool`): the broker's, the
    process's pooled client; None in eager mode (no Redis: no spool)."""
    return worker_redis(settings.broker_url) if settings.shared_redis else None


class ResultSpool:
    """Step 4's spool of one played match (:mod:`arena.spool`): :meth:`save` writes the
    result to Redis once (tried again at each call until it succeeds), :meth:`drop` deletes
    it once stored. Never raises for Redis (a failure is logged: the worker keeps retrying
    the database)."""

    def __init__(self, settings: Settings, plan: MatchPlan, match_log: MatchLog, fields: dict[str, Any]):
        self.client = spool_client(settings)
        self.ttl_s = settings.spool_ttl_s
        self.record = spool.SpooledResult(
            match_id=plan.match_id,
            tournament_id=plan.tournament_id,
            match_index=plan.match_index,
            commitment=plan.commitment,
            ruleset=plan.ruleset,
            attempt=plan.attempt,
            fields=fields,
            log=match_log,
        )
        self.saved = False

    def save(self, _attempt: int = 0) -> None:
        if self.saved or self.client is None:
            return
        try:
            spool.put(self.client, self.record, self.ttl_s)
        except (redis.RedisError, matchlog.LogEncodingError) as exc:
            log.warning("match %s: result not spooled (%s)", self.record.match_id, type(exc).__name__)
            return
        self.saved = True
        log.warning(
            "match %s: result spooled in Redis (%s) while the database cannot store it",
            self.record.match_id,
            spool.key(self.record.match_id),
        )

    def drop(self) -> None:
        if not self.saved or self.client is None:
            return
        try:
            spool.drop(self.client, self.record.match_id)
        except redis.RedisError as exc:  # the reaper finds it stored and deletes it
            log.warning("match %s: spooled result not deleted (%s)", self.record.match_id, type(exc).__name__)


def store_from_spool(
    settings: Settings,
    factory: sessionmaker[Session],
    client: redis.Redis,
    record: spool.SpooledResult,
    dispatcher: Dispatcher,
) -> spool.Outcome:
    """Store a spooled result (:func:`arena.spool.store_spooled`), then what follows a store
    (:func:`arena.followups.follow`, through ``dispatcher``): the ``finished`` event, the next
    round of a tournament played until settled, the ratings, the ladder's next sets, the pars.

    Raises:
        sqlalchemy.exc.OperationalError, sqlalchemy.exc.InterfaceError: the database is
            unreachable (the spooled result stays).
        redis.RedisError: the spool entry could not be deleted (the result is stored).
    """
    with factory() as session:
        outcome, stored = spool.store_spooled(session, client, record)
    if outcome is spool.Outcome.STORED:
        log.warning("match %s: result of attempt %d stored from the spool", record.match_id, record.attempt)
        pars = record.fields.get("par_status") == ParStatus.PENDING and settings.par_rollouts > 0
        # whether it is a ladder's set is not spooled: the refill finds out (rare: an outage)
        ending = Ending.stored(record.match_id, record.tournament_id, record.ruleset, stored, pars=pars, ladder=True)
        follow(settings, factory, dispatcher, ending)
    return outcome
