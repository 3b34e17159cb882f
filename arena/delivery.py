"""Delivery of a scheduled match: claim it, play it, store its result (what the Celery task
``arena.run_match`` does: :func:`play_and_store`, also called in-process under
``ARENA_CELERY_EAGER``). The pure runner (:mod:`arena.runner`) plays; this module claims
(lease ``ARENA_LEASE_S``, kept by :class:`LeaseKeeper`), stores (:func:`store_with_retry`
for ``ARENA_STORE_RETRY_S``, spooling to :class:`ResultSpool` meanwhile) and announces
(:func:`arena.live.announce`). An internal error ends the match ``failed``
(:func:`internal_reason`); the task returns normally. Steps: docs/operations.md, "What a
worker does with a match".

Result shapes stored (lists indexed by seat): ``scores`` = match score per seat (sum over the
games); ``places`` = 1 + number of seats with a strictly higher match score (Million Doubt), or
the engine's final ranks (Trump Millionaire, JDF); ``games`` = per engine game
``{"scores", "places"}``; ``timings`` = ``{"wall_s", "decisions", "answered", "elapsed_ms",
"max_elapsed_ms", "semaphore_wait_ms", "semaphore_max_wait_ms", "semaphore_bypassed", "attempt",
"longest_possible_s"}`` (milliseconds per seat, seconds as named; ``answered``: decisions
answered without a fault; the semaphore figures from
:attr:`arena.runner.match.Match.slot_totals`, notices included).

Idempotent: any number of deliveries of the same match store one result; the result of a
delivery that loses the race is dropped (``"duplicate"``). A store that ends a round of a
tournament played until settled may add the next round (:class:`arena.lifecycle.Stored`):
its matches are sent by :func:`send_round`.

Pars (luck-adjusted scores, docs/ranking.md): a result is stored with ``par_status``
``pending`` (``skipped`` when ``ARENA_PAR_ROLLOUTS`` is 0) and, once stored, the task
``arena.compute_par`` is sent to the low-priority queue :data:`arena.queue.PAR_QUEUE`
(:func:`request_pars`), off the match's path; the reaper sends it again if it was lost.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

import redis
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError, IntegrityError, InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.orm import Session, sessionmaker

import engine
from arena import fairness, lifecycle, matchlog, matchmaking, notices, spool
from arena.config import Settings, people_in_bot_ratings_from_env
from arena.db.session import POOL, is_postgres, shared_sessions
from arena.dispatch import QueueError
from arena.lifecycle import MatchPlan, ladders
from arena.lifecycle.bots import is_deleted
from arena.limits import longest_match_seconds, visibility_timeout
from arena.live import LivePublisher, announce, live_enabled
from arena.matchlog import MatchLog
from arena.people import rebuild_people_ratings
from arena.queue import LADDER_QUEUE, CeleryDispatcher
from arena.runner.answers import safe_text
from arena.runner.capped import CappedHttpPlayer
from arena.runner.claims import Claim, EndpointClaims, Refused
from arena.runner.connected import CappedConnectedPlayer, connect_semaphore
from arena.runner.match import Match, MatchConfig, MatchError, Observers, SlotTotals, default_game_specs
from arena.runner.person import PersonPlayer, PersonViews
from arena.runner.players import ArenaFailure, LocalPlayer, Player, WithdrawnPlayer, tls_context
from arena.runner.semaphore import BotSemaphore, MatchSlots
from arena.sources import SET
from arena.standings import rebuild_ratings
from arena.status import ParStatus, SetRating
from arena.withdrawals import WithdrawalCheck
from bots_sdk.samples import SAMPLE_BOTS

log = logging.getLogger("arena.tasks")

#: Key of the PostgreSQL advisory lock serializing ratings rebuilds.
RATINGS_LOCK = 0x6172656E61  # "arena"

_local = threading.local()


def prewarm(settings: Settings, threads: int) -> dict[str, int]:
    """Open what a worker process's first matches need before they come.

    Sets the process's database pool to ``min(threads, POOL_SIZE)`` kept-open connections
    (plus :data:`POOL_OVERFLOW` in a burst; for the engines built from now on, so before the
    first match), opens that many, opens
    ``threads`` Redis connections of the pool the matches' semaphore calls use
    (:func:`match_redis`), and builds the TLS context. Call it once per worker process, before
    it consumes (a prefork child: in the child). Returns ``{"database": n, "redis": m}``, the
    connections opened (0 for SQLite, or for a service down now: the matches then open their
    own, later, as before). Never raises. Why: docs/design-notes.md, "Warm-up and pools".
    """
    threads = max(1, int(threads))
    POOL.size_for(threads)
    tls_context()
    opened = {"database": 0, "redis": 0}
    if is_postgres(settings.database_url):
        engine_ = shared_sessions(settings.database_url).kw["bind"]
        conns = []
        try:
            for _ in range(POOL.pool_size):
                conns.append(engine_.connect())
        except DBAPIError as exc:
            log.warning("database connections not opened ahead (%s)", type(exc).__name__)
        finally:
            opened["database"] = len(conns)
            for c in conns:
                c.close()  # back to the pool, which keeps them open
    if live_enabled(settings):
        pool = _redis(settings.broker_url).connection_pool
        rconns = []
        try:
            for _ in range(threads):
                rconns.append(pool.get_connection())
        except redis.RedisError as exc:
            log.warning("Redis connections not opened ahead (%s)", exc)
        finally:
            opened["redis"] = len(rconns)
            for rc in rconns:
                pool.release(rc)
    return opened


#: Most Redis connections of a worker process's pool (redis-py's default is 100, and a match
#: holds one for its whole length: a worker running more matches than that at once sent
#: their requests without a slot, "Too many connections").
REDIS_MAX_CONNECTIONS = 4096


@lru_cache(maxsize=4)
def _redis(url: str) -> redis.Redis:
    return redis.Redis.from_url(
        url, socket_timeout=5, socket_connect_timeout=5, health_check_interval=30, max_connections=REDIS_MAX_CONNECTIONS
    )


def match_redis(settings: Settings) -> redis.Redis | None:
    """A Redis client for one match's semaphore calls: one connection of the process's pool
    held for the whole match (``single_connection_client``: a match runs on one thread), so
    no request pays the pool's checkout and its health probe; give it back with ``close()``.
    None in eager mode (a quick local run has no broker: no per-bot cap there), or when
    Redis cannot be reached now (the players then use the pooled client, whose failures the
    semaphore records as bypasses). Never raises."""
    if settings.celery_eager:
        return None
    try:
        return redis.Redis(connection_pool=_redis(settings.broker_url).connection_pool, single_connection_client=True)
    except redis.RedisError as exc:
        log.warning("no Redis connection for the match's semaphore calls (%s)", exc)
        return None


def build_players(
    plan: MatchPlan, settings: Settings, slots: MatchSlots | None = None, client: redis.Redis | None = None
) -> list[Player]:
    """Step 2: one player per seat, in seat order (``slots``: the match's :class:`MatchSlots`;
    bot seats share their endpoint's semaphore, :meth:`BotSemaphore.for_endpoint`, through
    ``client``, default the process's pooled client; none in eager mode). A bot that dials out
    (``transport`` ``connect``) is reached through Redis and a gateway
    (:class:`~arena.runner.connected.CappedConnectedPlayer`, capped per bot). A house seat plays
    ``SAMPLE_BOTS[plan.house_bot]`` in-process, seeded from the attempt seed and the seat,
    named ``house-1 (search)`` (its seat and its bot) in the log."""
    seed = fairness.attempt_seed(plan.seed, plan.attempt)
    if client is None and not settings.celery_eager:
        client = _redis(settings.broker_url)
    players: list[Player] = []
    for s in plan.seats:
        if s.withdrawn:  # a deleted bot: forfeits without a request
            players.append(WithdrawnPlayer(s.name))
        elif s.account_id is not None:  # a person at a table: through Redis to the page (eager mode too)
            players.append(PersonPlayer(client or _redis(settings.broker_url), plan.match_id, s.seat, s.name))
        elif s.bot_id is not None and s.transport == "connect":
            relay_client = client or _redis(settings.broker_url)  # eager mode too: the gateway's Redis
            players.append(
                CappedConnectedPlayer(
                    s.bot_id,
                    relay_client,
                    s.name,
                    connect_semaphore(
                        relay_client, s.bot_id, settings.bot_max_concurrency, float(settings.bot_slot_wait_s)
                    )
                    if client
                    else None,
                    slots,
                    reconnect_s=float(settings.gateway_reconnect_s),
                )
            )
        elif s.bot_id is not None:
            sem = (
                BotSemaphore.for_endpoint(
                    client, s.url or "", settings.bot_max_concurrency, float(settings.bot_slot_wait_s)
                )
                if client
                else None
            )
            players.append(
                CappedHttpPlayer(
                    s.url or "",
                    s.secret,
                    s.name,
                    sem,
                    slots,
                    allow_private=settings.allow_private_bot_urls,
                    previous_secret=s.previous_secret,
                )
            )
        else:
            sample = plan.sample_of(s)
            bot = SAMPLE_BOTS[sample](seed=fairness.derive_seed(seed, "house", s.seat))
            players.append(LocalPlayer(bot, s.name if s.name == sample else f"{s.name} ({sample})"))
    return players


def fairness_record(plan: MatchPlan) -> dict[str, Any]:
    """The log's ``fairness`` record of a claimed match (docs/fairness.md): where its seed
    comes from. A ladder set's (``scheme`` ``set``) names its ladder and commits to the set's
    own seed, drawn when the set was formed."""
    record: dict[str, Any] = {
        "tournament_id": plan.tournament_id,
        "match_index": plan.match_index,
        "attempt": plan.attempt,
        "commitment": plan.commitment,
    }
    if plan.unit == SET:
        record.update(scheme="set", ladder_id=plan.ladder_id)
    return record


def protocol_match_id(plan: MatchPlan) -> str:
    """The ``match_id`` the bots are sent: ``arena-<id>``, and ``arena-<id>-attempt-<n>`` when the
    match is played again (attempt n > 1, fresh deals: a bot must not resume its memory)."""
    return f"arena-{plan.match_id}" + (f"-attempt-{plan.attempt}" if plan.attempt > 1 else "")


def _places_from_scores(scores: list[float]) -> list[int]:
    return [1 + sum(1 for o in scores if o > x) for x in scores]


def result_fields(plan: MatchPlan, match_log: MatchLog, slot_totals: Sequence[SlotTotals]) -> dict[str, Any]:
    """The :func:`arena.lifecycle.store_result` keyword arguments from a match log and its
    players' :class:`~arena.runner.match.SlotTotals` (module docstring shapes)."""
    n = len(plan.seats)
    res = match_log["result"]
    assert res is not None and match_log["finished_at"] is not None  # a played match
    scores = [float(x) for x in res["scores"]]
    ranks = res["ranks"]
    places = [int(r) for r in ranks] if ranks else _places_from_scores(scores)
    games = []
    for gm in match_log["games"]:
        g_scores, g_places = [0.0] * n, [0] * n
        r = gm["result"]
        for seat, player in enumerate(gm["seats"]):
            g_scores[player] = float(r["scores"].get(str(seat), r["scores"].get(seat, 0)))
            g_places[player] = int(r["ranks"].get(str(seat), r["ranks"].get(seat, 0)))
        games.append({"scores": g_scores, "places": g_places})
    decisions, elapsed, longest, answered = [0] * n, [0] * n, [0] * n, [0] * n
    for gm in match_log["games"]:
        for ex in gm["exchanges"]:
            p = ex["player"]
            decisions[p] += 1
            answered[p] += ex["fault"] is None
            elapsed[p] += ex["elapsed_ms"]
            longest[p] = max(longest[p], ex["elapsed_ms"])
    timings = {
        "wall_s": round(match_log["finished_at"] - match_log["started_at"], 3),
        "decisions": decisions,
        "answered": answered,
        "elapsed_ms": elapsed,
        "max_elapsed_ms": longest,
        "semaphore_wait_ms": [round(t.wait_s * 1000, 1) for t in slot_totals],
        "semaphore_max_wait_ms": [round(t.max_wait_s * 1000, 1) for t in slot_totals],
        "semaphore_bypassed": [t.bypassed for t in slot_totals],
        "attempt": plan.attempt,
        "longest_possible_s": round(longest_match_seconds(plan.ruleset, plan.time_rules, plan.games, plan.options), 1),
    }
    return {
        "scores": scores,
        "places": places,
        "faults": [int(f) for f in res["faults"]],
        "games": games,
        "timings": timings,
    }


def par_status(settings: Settings) -> str:
    """The ``par_status`` a result is stored with: ``pending``, or ``skipped`` when pars are
    off (``ARENA_PAR_ROLLOUTS=0``)."""
    return ParStatus.PENDING.value if settings.par_rollouts > 0 else ParStatus.SKIPPED.value


def request_pars(settings: Settings, match_ids: Sequence[int]) -> int:
    """Send ``arena.compute_par`` for each stored match (:data:`arena.queue.PAR_QUEUE`);
    nothing in eager mode (the in-process dispatcher computes them after the match) or when
    pars are off. A broker that cannot be reached is logged, never raised: the reaper sends
    the task again for results left ``pending`` (:func:`arena.lifecycle.pending_pars`).
    Returns how many were sent."""
    if settings.celery_eager or settings.par_rollouts < 1 or not match_ids:
        return 0
    try:
        return CeleryDispatcher(settings.broker_url).send_pars(match_ids)
    except QueueError as exc:
        log.warning("pars of %s not requested now (%s); the reaper will", list(match_ids), exc)
        return 0


def update_ratings(session: Session, ruleset: str, attempts: int = 3) -> int:
    """Step 5: rebuild the ratings of ``ruleset``, the bots' and the people's pool
    (:mod:`arena.people`), and commit (advisory lock on PostgreSQL)."""
    for attempt in range(attempts):
        try:
            if session.get_bind().dialect.name == "postgresql":
                session.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": RATINGS_LOCK})
            n = rebuild_ratings(session, ruleset, people=people_in_bot_ratings_from_env())
            rebuild_people_ratings(session, ruleset)
            session.commit()
            return n
        except (IntegrityError, OperationalError):
            session.rollback()
            if attempt == attempts - 1:
                raise
            time.sleep(0.1 * (attempt + 1))
    return 0


def _deleted(settings: Settings, bot_id: int) -> bool:
    """Whether the database says bot ``bot_id`` is deleted (a withdrawal flag's confirmation)."""
    with shared_sessions(settings.database_url)() as session:
        return is_deleted(session, bot_id)


def play_plan(
    plan: MatchPlan,
    settings: Settings,
    live_ends: list[LivePublisher] | None = None,
    health: WorkerHealth | None = None,
) -> tuple[MatchLog, list[SlotTotals]]:
    """Steps 2-3 for a claimed match: returns ``(match log, slot totals per seat)``; every
    slot of the per-endpoint cap is given back when it returns. Bots never make this raise;
    the arena's own failure does (:class:`~arena.runner.players.ArenaFailure`), judged by
    ``health`` (the worker's, :class:`WorkerHealth`) and the players.

    The live view's ``end`` is published when it returns, unless ``live_ends`` is given: a
    match played to its end then leaves its publisher there, for the caller to end once the
    result is stored (a page told the match is over opens its replay at once)."""
    slots = MatchSlots()
    client = match_redis(settings)
    players = build_players(plan, settings, slots, client)
    # the live view (arena.live): every decision to Redis pub/sub, never failing the match;
    # not in eager mode (a quick local run has no Redis)
    seed = fairness.attempt_seed(plan.seed, plan.attempt)
    specs = plan.game_specs(seed)
    live = (
        LivePublisher(
            settings.broker_url,
            plan.match_id,
            seats=[spec["seats"] for spec in (specs or default_game_specs(plan.ruleset, seed, plan.games))],
        )
        if live_enabled(settings)
        else None
    )
    persons = {i: p for i, p in enumerate(players) if isinstance(p, PersonPlayer)}
    config = MatchConfig(
        plan.ruleset,
        plan.options,
        seed=seed,
        games=plan.games,
        game_specs=specs,
        time_rules=plan.time_rules,
        max_faults=plan.max_faults,
        match_id=protocol_match_id(plan),
        record_urls=False,
        fairness=fairness_record(plan),
        player_time_rules={i: plan.person_time_rules for i in persons} if plan.person_time_rules else None,
    )
    on_step = live.step if live is not None else None
    if persons:  # each person's own view after every decision (arena.runner.person)
        views = PersonViews(
            persons, [spec["seats"] for spec in (specs or default_game_specs(plan.ruleset, seed, plan.games))]
        )
        on_step = views.step if on_step is None else _both(on_step, views.step)
    # a bot deleted while the match plays forfeits from its next decision (arena.withdrawals)
    bot_ids = {i: s.bot_id for i, s in enumerate(plan.seats) if s.bot_id is not None and not s.withdrawn}
    withdrawn = (
        WithdrawalCheck(client, bot_ids, confirm=lambda bot_id: _deleted(settings, bot_id))
        if client is not None and bot_ids
        else None
    )
    played = False
    try:
        match = Match(
            players,
            config,
            Observers(on_step=on_step, withdrawn=withdrawn, health=health),
        )
        match_log = match.play()
        played = True
    finally:
        slots.flush()
        for p in players:
            p.close()
        if client is not None:
            client.close()  # the connection goes back to the pool
        if live is not None:
            if played and live_ends is not None:
                live_ends.append(live)
            else:
                live.end()
    return match_log, match.slot_totals


def _both(first: Callable[..., None], second: Callable[..., None]) -> Callable[..., None]:
    def step(*args: Any) -> None:
        first(*args)
        second(*args)

    return step


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


def internal_reason(step: str, exc: BaseException) -> str:
    """A short failure reason for the organizer: the step and the exception type, plus the
    message only for our own exceptions that never hold a log or hands (bad options)."""
    reason = f"internal error while {step}: {type(exc).__name__}"
    if isinstance(exc, (MatchError, engine.OptionsError, ArenaFailure)):
        reason += f": {safe_text(str(exc), 200)}"
    return reason


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
    return None if settings.celery_eager or not settings.broker_url.startswith("redis") else _redis(settings.broker_url)


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


#: Sends match ids to the workers (a dispatcher's ``send_matches``).
SendMatches = Callable[[Sequence[int]], object]


def send_round(
    settings: Settings, tournament_id: int, match_ids: Sequence[int], send: SendMatches | None = None
) -> None:
    """Send the matches of a round a store added (:class:`arena.lifecycle.Stored`, already
    ``queued``) with ``send`` (the in-process dispatcher's), else to the broker; then a
    ``queued`` event. Never raises for the broker: a match not sent stays ``queued`` and the
    reaper sends it (:func:`arena.lifecycle.lost_queued`)."""
    ids = [int(i) for i in match_ids]
    if not ids:
        return
    try:
        if send is not None:
            send(ids)
        elif settings.celery_eager:
            log.warning(
                "tournament %s: round of %d matches left queued (eager mode, no dispatcher)", tournament_id, len(ids)
            )
        else:
            CeleryDispatcher(settings.broker_url).send_matches(ids)
    except QueueError as exc:
        log.warning("tournament %s: next round not sent (%s); the reaper sends it", tournament_id, exc)
    log.info("tournament %s: a round of %d matches added", tournament_id, len(ids))
    announce(settings, tournament_id, "queued", ids)


def store_from_spool(
    settings: Settings,
    factory: sessionmaker[Session],
    client: redis.Redis,
    record: spool.SpooledResult,
    send: SendMatches | None = None,
) -> spool.Outcome:
    """Store a spooled result (:func:`arena.spool.store_spooled`), then do what a worker
    does after a store: the ``finished`` event, the next round of a tournament played until
    settled (:func:`send_round` with ``send``), the ratings when the tournament is done.

    Raises:
        sqlalchemy.exc.OperationalError, sqlalchemy.exc.InterfaceError: the database is
            unreachable (the spooled result stays).
        redis.RedisError: the spool entry could not be deleted (the result is stored).
    """
    with factory() as session:
        outcome, added = spool.store_spooled(session, client, record)
    if outcome is spool.Outcome.STORED:
        log.warning("match %s: result of attempt %d stored from the spool", record.match_id, record.attempt)
        after_store(
            settings,
            factory,
            record.match_id,
            record.tournament_id,
            record.ruleset,
            added=added,
            send=send,
            pars=record.fields.get("par_status") == ParStatus.PENDING,
        )
    return outcome


def after_store(
    settings: Settings,
    factory: sessionmaker[Session],
    match_id: int,
    tournament_id: int,
    ruleset: str,
    *,
    added: Sequence[int] = (),
    send: SendMatches | None = None,
    pars: bool = False,
) -> None:
    """What follows a stored result, wherever it was stored (a worker, the spool): the
    ``finished`` event, the round it added (:func:`send_round`), its par task
    (:func:`request_pars`, when ``pars``), its rating (:func:`rate_after`)."""
    announce(settings, tournament_id, "finished", [match_id])
    send_round(settings, tournament_id, added, send)
    if pars:
        request_pars(settings, [match_id])
    rate_after(factory, match_id, tournament_id, ruleset, settings)
    refill_ladder(settings, factory, match_id)


def refill_ladder(settings: Settings, factory: sessionmaker[Session], match_id: int) -> None:
    """A done ladder set's entries get their next sets at once (:func:`arena.matchmaking.refill`,
    once per set), sent to :data:`arena.queue.LADDER_QUEUE`; nothing for another match, or in
    eager mode (a quick local run drives its ticks itself). A database or broker error only
    leaves them to the next tick."""
    if settings.celery_eager:
        return
    try:
        matchmaking.refill(
            factory,
            match_id,
            CeleryDispatcher(settings.broker_url, queue=LADDER_QUEUE).send_matches,
            probe_s=settings.ladder_probe_s,
            online=matchmaking.redis_online(_redis(settings.broker_url)),
        )
    except DBAPIError as exc:
        log.warning("match %s: its ladder's next sets left to the tick (%s)", match_id, type(exc).__name__)


def rate_after(
    factory: sessionmaker[Session],
    match_id: int,
    tournament_id: int,
    ruleset: str,
    settings: Settings | None = None,
) -> bool:
    """Step 5 once a match is done (stored or failed): a ladder set is rated once
    (:func:`arena.lifecycle.ladders.rate_set`; one stored while its pars are on their way
    waits for them, and the par task or the reaper rates it), a comparison set is compared
    with its twin; a tournament's ratings are rebuilt when none of its matches is left
    (:func:`rate_if_done`, with ``settings`` its end announced). A database error only delays
    them (the reaper rates a set left
    pending; the next rebuild has the tournaments'). Returns True when a ladder set's rating
    moved (rated, unrated, void, or its comparison folded)."""
    try:
        with factory() as session:
            rated = ladders.rate_set(session, match_id)
        if rated is not None:
            if rated.outcome is SetRating.COMPARISON:
                with factory() as session:
                    return ladders.add_comparison(session, match_id)
            return rated.changed
    except DBAPIError as exc:
        log.warning("match %s: not rated now (%s); the reaper rates it", match_id, type(exc).__name__)
        return False
    rate_if_done(factory, tournament_id, ruleset, settings)
    return False


def _fail(
    factory: sessionmaker[Session],
    plan: MatchPlan,
    reason: str,
    exc: BaseException | None,
    settings: Settings | None = None,
) -> str:
    """End a claimed match ``failed`` with ``reason``; log the traceback's frames (never the
    exception's text: it may hold the log and every hand). Returns the task's status line."""
    frames = "".join(traceback.format_tb(exc.__traceback__)) if exc is not None else ""
    log.error("match %s failed: %s\n%s", plan.match_id, reason, frames)
    for attempt in range(3):
        try:
            with factory() as session:
                failed = lifecycle.fail_match(session, plan.match_id, reason)
            if failed and settings is not None:
                announce(settings, plan.tournament_id, "failed", [plan.match_id])
            break
        except TRANSIENT_DB_ERRORS:
            if attempt == 2:  # the match stays running; its lease expires and the reaper takes it
                log.error("match %s: could not record the failure (database unavailable)", plan.match_id)
                return f"lost match {plan.match_id}: {reason}"
            time.sleep(1.0 * (attempt + 1))
    rate_after(factory, plan.match_id, plan.tournament_id, plan.ruleset, settings)
    if settings is not None:
        refill_ladder(settings, factory, plan.match_id)
    return f"failed match {plan.match_id} (attempt {plan.attempt}): {reason}"


#: Attempts after which a match the arena keeps failing is failed (an organizer retries it).
MAX_ARENA_ATTEMPTS = 20


def _played_again(
    factory: sessionmaker[Session],
    plan: MatchPlan,
    settings: Settings,
    exc: ArenaFailure,
    send: SendMatches | None = None,
) -> str:
    """A match the arena could not finish (its relay, its gateways or this worker failed; never
    its bots): nothing of it is stored; it goes back to ``queued`` (if this attempt still holds
    it, :func:`arena.lifecycle.requeue_match`) and is sent again, to be played from the start
    on fresh deals. When the database cannot be reached, its lease expires and the reaper
    sends it again. After :data:`MAX_ARENA_ATTEMPTS` attempts it fails instead. Returns the
    task's status line."""
    reason = safe_text(f"the arena's own failure, not the bots': {exc}", 300)
    if plan.attempt >= MAX_ARENA_ATTEMPTS:
        return _fail(factory, plan, f"{reason} (attempt {plan.attempt})", exc, settings)
    log.warning("match %s (attempt %d) stopped, to be played again: %s", plan.match_id, plan.attempt, reason)
    try:
        with factory() as session:
            queued = lifecycle.requeue_match(session, plan.match_id, plan.attempt)
    except TRANSIENT_DB_ERRORS:
        return f"stopped match {plan.match_id} (attempt {plan.attempt}): {reason}; the reaper sends it again"
    if not queued:
        return f"stopped match {plan.match_id} (attempt {plan.attempt}): {reason}; another delivery has it"
    try:
        if send is not None:
            send([plan.match_id])
        elif not settings.celery_eager:
            CeleryDispatcher(settings.broker_url).send_matches([plan.match_id], priority=True)
    except QueueError as exc2:  # queued in the database: the reaper sends it
        log.warning("match %s not sent again now (%s); the reaper sends it", plan.match_id, exc2)
    announce(settings, plan.tournament_id, "queued", [plan.match_id])
    return f"replayed match {plan.match_id} (attempt {plan.attempt} stopped): {reason}"


def rate_if_done(
    factory: sessionmaker[Session], tournament_id: int, ruleset: str, settings: Settings | None = None
) -> None:
    """Step 5 when no match of the tournament is left to play, and, given ``settings``, the
    end announced to the owners' webhooks once it is over (:func:`arena.notices.announce_ends`);
    a database error here only delays the ratings (the next rebuild has them) and the notice
    (the reaper sends it)."""
    try:
        with factory() as session:
            if lifecycle.tournament_done(session, tournament_id):
                update_ratings(session, ruleset)
                if settings is not None:
                    notices.announce_ends(session, notices.sender_for(settings), only=tournament_id)
    except DBAPIError as exc:
        log.warning("ratings of %s not rebuilt: %s", ruleset, type(exc).__name__)


def lease_owner() -> str:
    """``host:pid:token``: who holds a match's lease (a new token per delivery)."""
    return f"{socket.gethostname()[:64]}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


class LeaseKeeper:
    """A daemon thread renewing a claimed match's lease every ``lease_s / 6`` seconds while
    the match is played (:func:`arena.lifecycle.renew_lease`). A renewal that fails for
    a database error is tried again at the next tick; a lost lease (the reaper gave the
    match to another delivery after it expired) is logged and the renewals stop: the result
    is still stored once, by whichever delivery stores first."""

    def __init__(
        self,
        factory: sessionmaker[Session],
        match_id: int,
        owner: str,
        lease_s: float,
        claims: tuple[EndpointClaims, Claim] | None = None,
    ):
        self.factory, self.match_id, self.owner, self.lease_s = factory, match_id, owner, lease_s
        self.claims = claims  # the match's endpoint claims, renewed with its lease
        self._claims_lock = threading.Lock()
        self.renewals = 0
        self.lost = False
        #: seconds between two renewals (the worker's heartbeat)
        self.interval = max(0.2, lease_s / 6)
        #: when the last renewal succeeded (the claim counts), and the last one failed (None:
        #: never), monotonic seconds
        self.ok_at = time.monotonic()
        self.failed_at: float | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"lease-{match_id}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def release_claims(self) -> None:
        """Give the match's endpoint claims back now (its bots are not needed any more: the
        store, and its retries, need no bot)."""
        with self._claims_lock:
            claims, self.claims = self.claims, None
            if claims is not None:
                claims[0].release(claims[1])

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def healthy(self) -> bool:
        """Whether the heartbeat is well: the last renewal succeeded, and not too long ago."""
        fresh = time.monotonic() - self.ok_at <= 2 * self.interval + 1.0
        return fresh and (self.failed_at is None or self.ok_at > self.failed_at)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            with self._claims_lock:  # never renewed after their release (a renewal re-adds)
                if self.claims is not None:
                    try:
                        self.claims[0].renew(self.claims[1])
                    except Exception as exc:  # Redis unreachable: the lease itself still counts
                        log.warning("match %s: endpoint claims not renewed (%s)", self.match_id, type(exc).__name__)
            try:
                with self.factory() as session:
                    ok = lifecycle.renew_lease(session, self.match_id, self.owner, self.lease_s)
            except DBAPIError as exc:
                self.failed_at = time.monotonic()
                log.warning("match %s: lease not renewed (%s)", self.match_id, type(exc).__name__)
                continue
            self.ok_at = time.monotonic()
            if not ok:
                if not self._stop.is_set():
                    self.lost = True
                    log.warning("match %s: lease lost (expired and taken over, or the match ended)", self.match_id)
                return
            self.renewals += 1


#: Seconds a probe of the worker's own link to Redis may take.
PROBE_TIMEOUT_S = 2.0
#: Seconds between two looks at the worker's health while a match waits for it.
HEALTH_POLL_S = 0.5


class WorkerHealth:
    """The worker's judgement of its own health while it plays a match: the runner's
    :class:`arena.runner.match.ArenaHealth` (docs/protocol.md, "Whose fault is a wait").

    * :meth:`abort`: the match's lease was lost (another delivery plays it): stop now.
    * :meth:`fault`: a request without an answer was the worker's failure, not the bot's,
      when the heartbeat (the lease renewals, :class:`LeaseKeeper`: the database) failed
      during it or went stale, or Redis cannot be reached now (a probe): a worker cut off
      from the network never blames its bots for it.
    * :meth:`wait`: until the heartbeat and the probe are well again, at most ``wait_s``
      seconds (two leases by default: by then another worker has the match).
    """

    def __init__(self, settings: Settings, keeper: LeaseKeeper | None, wait_s: float | None = None):
        self.keeper = keeper
        self.wait_s = float(2 * settings.lease_s if wait_s is None else wait_s)
        self._probe: redis.Redis | None = None
        if not settings.celery_eager and settings.broker_url.startswith("redis"):
            self._probe = redis.Redis.from_url(
                settings.broker_url, socket_timeout=PROBE_TIMEOUT_S, socket_connect_timeout=PROBE_TIMEOUT_S
            )

    def abort(self) -> str:
        if self.keeper is not None and self.keeper.lost:
            return "this worker lost the match's lease: another delivery plays the match"
        return ""

    def probe(self) -> str:
        """Why this worker cannot reach Redis now, or ""."""
        if self._probe is None:
            return ""
        try:
            self._probe.ping()
        except (redis.RedisError, OSError) as exc:
            return f"this worker cannot reach Redis ({type(exc).__name__})"
        return ""

    def fault(self, started: float, ended: float) -> str:
        keeper = self.keeper
        if keeper is not None:
            if keeper.failed_at is not None and keeper.failed_at >= started - keeper.interval:
                return "this worker's heartbeat failed during the request (it could not reach the database)"
            if ended - keeper.ok_at > 2 * keeper.interval + 1.0:
                return "this worker's heartbeat was stale during the request"
        return self.probe()

    def wait(self) -> bool:
        deadline = time.monotonic() + self.wait_s
        while not self.abort():
            if (self.keeper is None or self.keeper.healthy()) and not self.probe():
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(HEALTH_POLL_S)
        return False

    def close(self) -> None:
        if self._probe is not None:
            self._probe.close()


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
    return EndpointClaims(_redis(broker_url), hard=hard, limit=limit, lease_s=lease_s)


def endpoint_claims(settings: Settings) -> EndpointClaims | None:
    """The process's :class:`EndpointClaims` for ``settings``; None in eager mode or without
    a Redis broker (no cap there)."""
    if not live_enabled(settings):
        return None
    return _claims(settings.broker_url, settings.bot_max_matches, settings.bot_max_concurrency, float(settings.lease_s))


def play_and_store(match_id: int, settings: Settings | None = None, send: SendMatches | None = None) -> str:
    """Play match ``match_id`` and store its result (module docstring). Returns a status line:
    ``"stored match N ..."``, ``"duplicate match N ..."``, ``"spooled match N ..."`` (left to
    the reaper), ``"failed ..."`` (also when this worker's ``ARENA_ENCRYPTION_KEYS`` cannot
    decrypt the bots' secrets: :func:`arena.lifecycle.claim_match`) or ``"skipped: ..."``.

    Before the claim, the delivery takes a claim on each of its bots' endpoints
    (:mod:`arena.runner.claims`): a bot already holding as many matches as it may is
    not given one more thread. A round the store adds (a tournament played until settled)
    is sent with ``send`` (the in-process dispatcher's ``send_matches``; default: the broker's).

    Raises:
        MatchDeferred: a bot endpoint of the match is busy; nothing was claimed (the task
            sends the match again later).
        sqlalchemy.exc.OperationalError: the database is unreachable (the task retries).
        arena.runner.match.MatchError, engine.OptionsError: the stored match cannot be played
            (bad data; the match stays ``running``).
    Bots never make this raise: their failures are faults in the result.
    """
    settings = settings or Settings.from_env()
    factory = shared_sessions(settings.database_url)
    spooled = _store_spooled_first(settings, factory, int(match_id), send)
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
        return _play_claimed(plan, settings, factory, keeper, send)
    finally:
        keeper.stop()
        keeper.release_claims()


def _store_spooled_first(
    settings: Settings, factory: sessionmaker[Session], match_id: int, send: SendMatches | None = None
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
        outcome = store_from_spool(settings, factory, client, record, send)
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
    keeper: LeaseKeeper | None = None,
    send: SendMatches | None = None,
) -> str:
    try:
        bound = longest_match_seconds(plan.ruleset, plan.time_rules, plan.games, plan.options)
    except Exception as exc:  # stored options the engine refuses: an internal error
        return _fail(factory, plan, internal_reason("preparing", exc), exc, settings)
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
        return _store_played(plan, settings, factory, keeper, send, live_ends, health)
    finally:  # after the store: the pages told the match is over find its result
        health.close()
        for live in live_ends:
            live.end()


def _store_played(
    plan: MatchPlan,
    settings: Settings,
    factory: sessionmaker[Session],
    keeper: LeaseKeeper | None,
    send: SendMatches | None,
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
        return _played_again(factory, plan, settings, exc, send)
    except Exception as exc:  # an internal error (bots' failures are faults, never exceptions)
        return _fail(factory, plan, internal_reason("playing", exc), exc, settings)
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
        return _fail(factory, plan, str(exc), exc.__cause__, settings)
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
    if stored:
        after_store(
            settings,
            factory,
            plan.match_id,
            plan.tournament_id,
            plan.ruleset,
            added=stored.added,
            send=send,
            pars=fields["par_status"] == ParStatus.PENDING,
        )
    else:
        rate_after(factory, plan.match_id, plan.tournament_id, plan.ruleset, settings)
    word = "stored" if stored else "duplicate"
    line = (
        f"{word} match {plan.match_id} (attempt {plan.attempt}): scores {fields['scores']}, faults {fields['faults']}"
    )
    log.info(line)
    return line
