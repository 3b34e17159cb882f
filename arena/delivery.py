"""Delivery of a scheduled match: claim it, play it, store its result, then what follows
(what the Celery task ``arena.run_match`` does: :func:`play_and_store`, also called in-process
by :class:`arena.inprocess.InProcessDispatcher`). The pure runner (:mod:`arena.runner`) plays
(:mod:`arena.playing`); this module claims (lease ``ARENA_LEASE_S``, kept by
:class:`arena.heartbeat.LeaseKeeper`), stores (:mod:`arena.storing`: for
``ARENA_STORE_RETRY_S``, spooling meanwhile) and hands the ending to :func:`arena.followups.follow`
(the event, the next round, the ratings, the ladder's next sets, the pars: each sent through the
dispatcher the delivery was given). An internal error ends the match ``failed``
(:func:`internal_reason`); the task returns normally. Steps: docs/operations.md, "What a worker
does with a match".

Idempotent: any number of deliveries of the same match store one result; the result of a
delivery that loses the race is dropped (``"duplicate"``). A store that ends a round of a
tournament played until settled may add the next round (:class:`arena.lifecycle.Stored`).

Pars (luck-adjusted scores, docs/ranking.md): a result is stored with ``par_status``
``pending`` (``skipped`` when ``ARENA_PAR_ROLLOUTS`` is 0) and, once stored, the dispatcher's
``send_pars`` computes them off the match's path (a worker's: the task ``arena.compute_par`` on
the low-priority queue :data:`arena.queue.PAR_QUEUE`); the reaper sends it again if it was lost.
"""

from __future__ import annotations

import logging
import os
import socket
import time
import traceback
import uuid
from functools import lru_cache

import redis
from sqlalchemy.orm import Session, sessionmaker

import engine
from arena import lifecycle, spool
from arena.config import Settings
from arena.db.session import shared_sessions
from arena.dispatch import Dispatcher, QueueError
from arena.followups import Ending, follow, rate_if_done, update_ratings
from arena.heartbeat import LeaseKeeper, WorkerHealth
from arena.lifecycle import MatchPlan
from arena.limits import longest_match_seconds, visibility_timeout
from arena.live import LivePublisher, announce, live_enabled
from arena.playing import play_plan, result_fields, worker_redis
from arena.queue import CeleryDispatcher
from arena.runner.answers import safe_text
from arena.runner.claims import Claim, EndpointClaims, Refused
from arena.runner.match import MatchError
from arena.runner.players import ArenaFailure
from arena.status import ParStatus
from arena.storing import (
    TRANSIENT_DB_ERRORS,
    ResultSpool,
    StoreFailed,
    par_status,
    spool_client,
    store_from_spool,
    store_with_retry,
)

log = logging.getLogger("arena.tasks")


def internal_reason(step: str, exc: BaseException) -> str:
    """A short failure reason for the organizer: the step and the exception type, plus the
    message only for our own exceptions that never hold a log or hands (bad options)."""
    reason = f"internal error while {step}: {type(exc).__name__}"
    if isinstance(exc, (MatchError, engine.OptionsError, ArenaFailure)):
        reason += f": {safe_text(str(exc), 200)}"
    return reason


def _fail(
    factory: sessionmaker[Session],
    plan: MatchPlan,
    reason: str,
    exc: BaseException | None,
    settings: Settings,
    dispatcher: Dispatcher,
) -> str:
    """End a claimed match ``failed`` with ``reason``; log the traceback's frames (never the
    exception's text: it may hold the log and every hand). Returns the task's status line."""
    frames = "".join(traceback.format_tb(exc.__traceback__)) if exc is not None else ""
    log.error("match %s failed: %s\n%s", plan.match_id, reason, frames)
    for attempt in range(3):
        try:
            with factory() as session:
                failed = lifecycle.fail_match(session, plan.match_id, reason)
            break
        except TRANSIENT_DB_ERRORS:
            if attempt == 2:  # the match stays running; its lease expires and the reaper takes it
                log.error("match %s: could not record the failure (database unavailable)", plan.match_id)
                return f"lost match {plan.match_id}: {reason}"
            time.sleep(1.0 * (attempt + 1))
    follow(
        settings,
        factory,
        dispatcher,
        Ending.failed(plan.match_id, plan.tournament_id, plan.ruleset, now=failed, ladder=plan.ladder_id is not None),
    )
    return f"failed match {plan.match_id} (attempt {plan.attempt}): {reason}"


#: Attempts after which a match the arena keeps failing is failed (an organizer retries it).
MAX_ARENA_ATTEMPTS = 20


def _played_again(
    factory: sessionmaker[Session],
    plan: MatchPlan,
    settings: Settings,
    exc: ArenaFailure,
    dispatcher: Dispatcher,
) -> str:
    """A match the arena could not finish (its relay, its gateways or this worker failed; never
    its bots): nothing of it is stored; it goes back to ``queued`` (if this attempt still holds
    it, :func:`arena.lifecycle.requeue_match`) and is sent again, to be played from the start
    on fresh deals. When the database cannot be reached, its lease expires and the reaper
    sends it again. After :data:`MAX_ARENA_ATTEMPTS` attempts it fails instead. Returns the
    task's status line."""
    reason = safe_text(f"the arena's own failure, not the bots': {exc}", 300)
    if plan.attempt >= MAX_ARENA_ATTEMPTS:
        return _fail(factory, plan, f"{reason} (attempt {plan.attempt})", exc, settings, dispatcher)
    log.warning("match %s (attempt %d) stopped, to be played again: %s", plan.match_id, plan.attempt, reason)
    try:
        with factory() as session:
            queued = lifecycle.requeue_match(session, plan.match_id, plan.attempt)
    except TRANSIENT_DB_ERRORS:
        return f"stopped match {plan.match_id} (attempt {plan.attempt}): {reason}; the reaper sends it again"
    if not queued:
        return f"stopped match {plan.match_id} (attempt {plan.attempt}): {reason}; another delivery has it"
    try:
        dispatcher.send_matches([plan.match_id], priority=True)
    except QueueError as exc2:  # queued in the database: the reaper sends it
        log.warning("match %s not sent again now (%s); the reaper sends it", plan.match_id, exc2)
    announce(settings, plan.tournament_id, "queued", [plan.match_id])
    return f"replayed match {plan.match_id} (attempt {plan.attempt} stopped): {reason}"


def lease_owner() -> str:
    """``host:pid:token``: who holds a match's lease (a new token per delivery)."""
    return f"{socket.gethostname()[:64]}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


class MatchDeferred(RuntimeError):
    """A delivery not played now: a bot endpoint of the match holds as many matches as it may
    (:mod:`arena.runner.claims`). Nothing was claimed; the task sends
    the match again after a countdown. ``str(exc)`` says which endpoint and why;
    ``deferred_on_endpoint``: the matches refused on that endpoint in the last minute."""

    def __init__(self, message: str, deferred_on_endpoint: int = 1):
        super().__init__(message)
        self.deferred_on_endpoint = deferred_on_endpoint


@lru_cache(maxsize=4)
def _claims(broker_url: str, hard: int, limit: int, lease_s: float) -> EndpointClaims:
    return EndpointClaims(worker_redis(broker_url), hard=hard, limit=limit, lease_s=lease_s)


def endpoint_claims(settings: Settings) -> EndpointClaims | None:
    """The process's :class:`EndpointClaims` for ``settings``; None in eager mode or without
    a Redis broker (no cap there)."""
    if not live_enabled(settings):
        return None
    return _claims(settings.broker_url, settings.bot_max_matches, settings.bot_max_concurrency, float(settings.lease_s))


def play_and_store(match_id: int, settings: Settings | None = None, dispatcher: Dispatcher | None = None) -> str:
    """Play match ``match_id`` and store its result (module docstring). Returns a status line:
    ``"stored match N ..."``, ``"duplicate match N ..."``, ``"spooled match N ..."`` (left to
    the reaper), ``"failed ..."`` (also when this worker's ``ARENA_ENCRYPTION_KEYS`` cannot
    decrypt the bots' secrets: :func:`arena.lifecycle.claim_match`) or ``"skipped: ..."``.

    Before the claim, the delivery takes a claim on each of its bots' endpoints
    (:mod:`arena.runner.claims`): a bot already holding as many matches as it may is
    not given one more thread. What follows the store (a round it adds, the ladder's next
    sets, the pars; a replay) is sent with ``dispatcher``: the one the caller was composed
    with (the in-process one plays them here); default the broker's
    (:class:`arena.queue.CeleryDispatcher`), a worker's.

    Raises:
        MatchDeferred: a bot endpoint of the match is busy; nothing was claimed (the task
            sends the match again later).
        sqlalchemy.exc.OperationalError: the database is unreachable (the task retries).
        arena.runner.match.MatchError, engine.OptionsError: the stored match cannot be played
            (bad data; the match stays ``running``).
    Bots never make this raise: their failures are faults in the result.
    """
    settings = settings or Settings.from_env()
    dispatcher = dispatcher if dispatcher is not None else CeleryDispatcher(settings.broker_url)
    factory = shared_sessions(settings.database_url)
    spooled = _store_spooled_first(settings, factory, int(match_id), dispatcher)
    if spooled is not None:
        return spooled
    owner = lease_owner()
    claims = endpoint_claims(settings)
    claim: Claim | None = None
    if claims is not None:
        with factory() as session:
            urls = lifecycle.match_bot_urls(session, int(match_id))
        got = claims.take(int(match_id), urls)
        if isinstance(got, Refused):
            raise MatchDeferred(f"match {match_id} deferred: {got}", got.deferred)
        claim = got
    with factory() as session:
        try:
            claimed = lifecycle.claim_match(session, int(match_id), owner=owner, lease_s=settings.lease_s)
        except BaseException:
            if claims is not None and claim is not None:
                claims.release(claim)
            raise
    if isinstance(claimed, lifecycle.Skipped):
        if claims is not None and claim is not None:
            claims.release(claim)
        if claimed.reason is lifecycle.SkipReason.NO_KEY and claimed.tournament_id is not None:
            # this worker's key cannot decrypt the bots' secrets: the match failed, not played
            line = f"failed match {int(match_id)} (not played): {claimed.message}"
            log.error("%s", line)
            announce(settings, claimed.tournament_id, "failed", [int(match_id)])
            rate_if_done(factory, claimed.tournament_id, claimed.ruleset or "", settings)
            return line
        log.info("skipped: %s", claimed.message)
        if claimed.reason is lifecycle.SkipReason.CANCELLED and claimed.tournament_id is not None:
            # the last match of a cancelled tournament: rate the others
            with factory() as session:
                if lifecycle.tournament_done(session, claimed.tournament_id):
                    update_ratings(session, claimed.ruleset or "")
        return f"skipped: {claimed.message}"
    plan = claimed.plan
    announce(settings, plan.tournament_id, "claimed", [plan.match_id])
    keeper = LeaseKeeper(
        factory,
        plan.match_id,
        owner,
        settings.lease_s,
        claims=(claims, claim) if claims is not None and claim is not None else None,
    )
    keeper.start()
    try:
        return _play_claimed(plan, settings, factory, dispatcher, keeper)
    finally:
        keeper.stop()
        keeper.release_claims()


def _store_spooled_first(
    settings: Settings, factory: sessionmaker[Session], match_id: int, dispatcher: Dispatcher
) -> str | None:
    """A delivery of a match whose played result waits in the spool (its worker gave up or
    died during a database outage) stores that result instead of playing the match again:
    returns the status line, or None when there is no spooled result of this database's
    match (or Redis cannot be read: the claim decides, as before)."""
    client = spool_client(settings)
    if client is None:
        return None
    try:
        record = spool.get(client, match_id)
        if record is None:
            return None
        outcome = store_from_spool(settings, factory, client, record, dispatcher)
    except redis.RedisError as exc:
        log.warning("match %s: spool not read (%s)", match_id, type(exc).__name__)
        return None
    if outcome in (spool.Outcome.FOREIGN, spool.Outcome.UNUSABLE):
        return None
    return f"{outcome} match {match_id} (attempt {record.attempt}) from the spool"


def _play_claimed(
    plan: MatchPlan,
    settings: Settings,
    factory: sessionmaker[Session],
    dispatcher: Dispatcher,
    keeper: LeaseKeeper | None = None,
) -> str:
    try:
        bound = longest_match_seconds(plan.ruleset, plan.time_rules, plan.games, plan.options)
    except Exception as exc:  # stored options the engine refuses: an internal error
        return _fail(factory, plan, internal_reason("preparing", exc), exc, settings, dispatcher)
    vt = visibility_timeout(settings)
    if bound > vt:
        log.warning(
            "match %s may last up to %.0f s, longer than the broker visibility timeout %d s: "
            "it may be delivered twice (the result is still stored once)",
            plan.match_id,
            bound,
            vt,
        )
    live_ends: list[LivePublisher] = []
    health = WorkerHealth(settings, keeper)
    try:
        return _store_played(plan, settings, factory, dispatcher, keeper, live_ends, health)
    finally:  # after the store: the pages told the match is over find its result
        health.close()
        for live in live_ends:
            live.end()


def _store_played(
    plan: MatchPlan,
    settings: Settings,
    factory: sessionmaker[Session],
    dispatcher: Dispatcher,
    keeper: LeaseKeeper | None,
    live_ends: list[LivePublisher],
    health: WorkerHealth | None = None,
) -> str:
    try:
        match_log, slot_totals = play_plan(plan, settings, live_ends, health)
        if keeper is not None:
            keeper.release_claims()
        fields = result_fields(plan, match_log, slot_totals)
        fields["par_status"] = par_status(settings)
    except ArenaFailure as exc:  # the arena's own failure, never the bots': played again
        return _played_again(factory, plan, settings, exc, dispatcher)
    except Exception as exc:  # an internal error (bots' failures are faults, never exceptions)
        return _fail(factory, plan, internal_reason("playing", exc), exc, settings, dispatcher)
    kept = ResultSpool(settings, plan, match_log, fields)
    try:
        stored = store_with_retry(
            factory,
            plan.match_id,
            match_log,
            fields,
            retry_s=settings.store_retry_s,
            on_retry=kept.save,
            fence=plan.attempt,
        )
    except StoreFailed as exc:
        if exc.transient and kept.saved:  # the reaper stores it when the database is back
            line = (
                f"spooled match {plan.match_id} (attempt {plan.attempt}): {exc}; the result waits in "
                f"{spool.key(plan.match_id)} for the reaper"
            )
            log.error(line)
            return line
        kept.drop()  # nothing will store it: the match fails (the organizer may retry it)
        return _fail(factory, plan, str(exc), exc.__cause__, settings, dispatcher)
    kept.drop()
    if keeper is not None:  # the match is over: a renewal now would only find it finished
        keeper.stop()
    if stored.stale:
        line = (
            f"stale match {plan.match_id} (attempt {plan.attempt}): its lease was taken over; the result of the "
            "attempt that took over counts, this one is dropped"
        )
        log.warning(line)
        return line
    pars = fields["par_status"] == ParStatus.PENDING
    follow(
        settings,
        factory,
        dispatcher,
        Ending.stored(
            plan.match_id, plan.tournament_id, plan.ruleset, stored, pars=pars, ladder=plan.ladder_id is not None
        ),
    )
    word = "stored" if stored else "duplicate"
    line = (
        f"{word} match {plan.match_id} (attempt {plan.attempt}): scores {fields['scores']}, faults {fields['faults']}"
    )
    log.info(line)
    return line
