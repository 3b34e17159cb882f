"""Playing a claimed match (steps 2-3 of :func:`arena.delivery.play_and_store`): a player
per seat, the match run by the pure runner with its live view and its withdrawals, and the
result's fields from its log (:func:`result_fields`: the shapes stored). Also the worker
process's warm-up (:func:`prewarm`) and its pooled Redis client (:func:`worker_redis`).

Result shapes stored (lists indexed by seat): ``scores`` = match score per seat (sum over the
games); ``places`` = 1 + number of seats with a strictly higher match score (Million Doubt), or
the engine's final ranks (Trump Millionaire, JDF); ``games`` = per engine game
``{"scores", "places"}``; ``timings`` = ``{"wall_s", "decisions", "answered", "elapsed_ms",
"max_elapsed_ms", "semaphore_wait_ms", "semaphore_max_wait_ms", "semaphore_bypassed", "attempt",
"longest_possible_s"}`` (milliseconds per seat, seconds as named; ``answered``: decisions
answered without a fault; the semaphore figures from
:attr:`arena.runner.match.Match.slot_totals`, notices included).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

import redis
from sqlalchemy.exc import DBAPIError

from arena import fairness
from arena.config import Settings
from arena.db.session import POOL, is_postgres, shared_sessions
from arena.lifecycle import MatchPlan
from arena.lifecycle.bots import is_deleted
from arena.limits import longest_match_seconds
from arena.live import LivePublisher, live_enabled
from arena.matchlog import MatchLog
from arena.runner.capped import CappedHttpPlayer, SlotCap
from arena.runner.connected import CappedConnectedPlayer, connect_semaphore
from arena.runner.match import ArenaHealth, Match, MatchConfig, Observers, SlotTotals, default_game_specs
from arena.runner.person import PersonPlayer, PersonViews
from arena.runner.players import LocalPlayer, Player, WithdrawnPlayer, tls_context
from arena.runner.semaphore import BotSemaphore, MatchSlots
from arena.sources import SET
from arena.withdrawals import WithdrawalCheck
from bots_sdk.samples import SAMPLE_BOTS

log = logging.getLogger("arena.tasks")


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
        pool = worker_redis(settings.broker_url).connection_pool
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
def worker_redis(url: str) -> redis.Redis:
    """The process's pooled client of the broker's Redis (one per URL)."""
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
    if not settings.shared_redis:
        return None
    try:
        return redis.Redis(
            connection_pool=worker_redis(settings.broker_url).connection_pool, single_connection_client=True
        )
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
    if client is None and settings.shared_redis:
        client = worker_redis(settings.broker_url)
    players: list[Player] = []
    for s in plan.seats:
        if s.withdrawn:  # a deleted bot: forfeits without a request
            players.append(WithdrawnPlayer(s.name))
        elif s.account_id is not None:  # a person at a table: through Redis to the page (eager mode too)
            players.append(PersonPlayer(client or worker_redis(settings.broker_url), plan.match_id, s.seat, s.name))
        elif s.bot_id is not None and s.transport == "connect":
            relay_client = client or worker_redis(settings.broker_url)  # eager mode too: the gateway's Redis
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


def _deleted(settings: Settings, bot_id: int) -> bool:
    """Whether the database says bot ``bot_id`` is deleted (a withdrawal flag's confirmation)."""
    with shared_sessions(settings.database_url)() as session:
        return is_deleted(session, bot_id)


def play_plan(
    plan: MatchPlan,
    settings: Settings,
    live_ends: list[LivePublisher] | None = None,
    health: ArenaHealth | None = None,
) -> tuple[MatchLog, list[SlotTotals]]:
    """Steps 2-3 for a claimed match: returns ``(match log, slot totals per seat)``; every
    slot of the per-endpoint cap is given back when it returns. Bots never make this raise;
    the arena's own failure does (:class:`~arena.runner.players.ArenaFailure`), judged by
    ``health`` (the worker's, :class:`arena.heartbeat.WorkerHealth`) and the players.

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
    if withdrawn is not None:  # read with each request's slot: no round trip of its own
        for i, p in enumerate(players):
            if isinstance(p, SlotCap) and p.semaphore is not None:
                p.gate = withdrawn.gate(i)
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
