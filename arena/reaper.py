"""The reaper: matches come back by themselves when a worker dies or the broker forgets.

:func:`reap` runs every ``ARENA_REAPER_INTERVAL_S`` seconds inside the Celery beat process
(``arena beat``). One run: (0) stores every spooled result (:mod:`arena.spool`,
:func:`arena.storing.store_from_spool`) and leaves those matches out of step 1; (1) sends
again every ``running`` match whose lease (``ARENA_LEASE_S``) expired
(:func:`arena.lifecycle.reap_expired`, to :data:`arena.queue.PRIORITY_QUEUE`); (2) sends again
every ``queued`` match missing from the broker (:func:`broker_match_ids`) for
``ARENA_LOST_AFTER_S`` (:func:`arena.lifecycle.lost_queued`); (3) sends
``arena.enqueue_tournament`` again for stalled starts
(:func:`arena.lifecycle.stalled_tournaments`); (4) sweeps the keys of bots that dial out
(:func:`arena.relay.sweep`: presence of dead gateways and ended leases, stale requests, wake-up
lists of dead gateways) and reports the live gateways; (5) sends ``arena.compute_par`` again
for results whose pars are still ``pending`` after ``ARENA_LOST_AFTER_S`` and whose task is not
in the broker (:func:`arena.lifecycle.pending_pars`); (6) sends the poll of every start waiting
for offline entrants whose last roll call is older than :data:`WAIT_QUIET_S` or whose time is
up (:func:`arena.lifecycle.waiting_tournaments`: a lost poll; the time limit holds whatever
happened to it), and announces to the owners' webhooks every tournament over and not yet
announced (:func:`arena.notices.announce_ends`: a cancel, a worker killed before it did); (7)
rates the ladder sets done more than ``ARENA_LOST_AFTER_S`` ago and still unrated (their
worker died between the store and the rating, or their pars came late:
:func:`arena.lifecycle.ladder_sets.unrated_sets`, rated once by :func:`arena.followups.rate_after`).
Re-sent matches get a ``queued`` event (:func:`arena.live.announce`). Steps 0-2, 4 and 5 are
skipped for a run when Redis cannot be read. A match is never played twice at once (the
delivery skips a live lease) and a result is stored once. Design: docs/operations.md, "Leases and the reaper".
"""

from __future__ import annotations

import base64
import json
import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import redis
from sqlalchemy import select
from sqlalchemy.exc import InterfaceError, OperationalError
from sqlalchemy.orm import Session, sessionmaker

from arena import lifecycle, notices, relay, spool
from arena.config import Settings
from arena.db.models import Match, Tournament
from arena.db.session import shared_sessions
from arena.dispatch import Dispatcher, QueueError
from arena.followups import rate_after
from arena.lifecycle import ladder_sets
from arena.live import announce
from arena.queue import (
    COMPUTE_PAR_TASK,
    ENQUEUE_TOURNAMENT_TASK,
    LADDER_QUEUE,
    PAR_QUEUE,
    PRIORITY_QUEUE,
    QUEUE,
    RUN_MATCH_TASK,
    CeleryDispatcher,
)
from arena.storing import store_from_spool

log = logging.getLogger("arena.reaper")

#: kombu's Redis transport: the hash of delivered, unacknowledged messages, and the separator
#: and steps of its per-priority lists (``queue``, ``queue\x06\x163``, ...).
UNACKED_KEY = "unacked"
#: kombu's sorted set of delivery tags scored by delivery time (Unix seconds).
UNACKED_INDEX_KEY = "unacked_index"
PRIORITY_SEP = "\x06\x16"
PRIORITY_STEPS = (0, 3, 6, 9)
#: Seconds between the reaper's two reads of the broker (see :func:`reap`).
SECOND_READ_AFTER_S = 0.2
#: The tasks whose messages the reaper looks for in the broker.
WATCHED_TASKS = (RUN_MATCH_TASK, ENQUEUE_TOURNAMENT_TASK, COMPUTE_PAR_TASK)
#: Seconds without a roll call after which a waiting start's poll is sent again (step 6).
WAIT_QUIET_S = 12.0
#: The queues the reaper reads.
WATCHED_QUEUES = (PRIORITY_QUEUE, QUEUE, LADDER_QUEUE, PAR_QUEUE)


@dataclass
class ReapReport:
    """What one run did: match ids re-enqueued for an expired lease / a lost message, the
    tournaments whose sending was started again (stalled), the match ids whose spooled
    result was stored (``spooled``), those whose spooled result still waits (``waiting``) and
    those whose par task was sent again (``pars``)."""

    expired: list[int] = field(default_factory=list)
    lost: list[int] = field(default_factory=list)
    stalled: list[int] = field(default_factory=list)
    spooled: list[int] = field(default_factory=list)
    waiting: list[int] = field(default_factory=list)
    pars: list[int] = field(default_factory=list)
    rated: list[int] = field(default_factory=list)
    #: step 6: waiting starts whose poll was sent again, tournaments whose end was announced
    polls: list[int] = field(default_factory=list)
    ends: list[int] = field(default_factory=list)
    broker_checked: bool = False
    #: step 4: the live gateways and what was dropped (None: Redis not read)
    gateways: relay.Sweep | None = None

    def __str__(self) -> str:
        return (
            f"reaper: {len(self.expired)} expired lease(s) {self.expired}, "
            f"{len(self.lost)} lost message(s) {self.lost}, "
            f"{len(self.stalled)} stalled start(s) {self.stalled}, "
            f"{len(self.spooled)} spooled result(s) stored {self.spooled}"
            + (f", {len(self.waiting)} still spooled {self.waiting}" if self.waiting else "")
            + (f", {len(self.pars)} par task(s) sent again {self.pars}" if self.pars else "")
            + (f", {len(self.rated)} ladder set(s) rated {self.rated}" if self.rated else "")
            + (f", {len(self.polls)} waiting start(s) polled again {self.polls}" if self.polls else "")
            + (f", {len(self.ends)} end(s) announced {self.ends}" if self.ends else "")
            + ("" if self.broker_checked else " (broker not readable: lost messages not checked)")
        )


def _task_id(message: Any) -> tuple[str, int] | None:
    """``(task name, first argument)`` of a kombu message of one of :data:`WATCHED_TASKS` (a
    dict with ``headers`` and a base64 ``body``): a match id, or a tournament id."""
    if not isinstance(message, dict):
        return None
    task = (message.get("headers") or {}).get("task")
    if task not in WATCHED_TASKS:
        return None
    try:
        body = message["body"]
        if message.get("properties", {}).get("body_encoding") == "base64":
            body = base64.b64decode(body)
        args = json.loads(body)[0]
        return task, int(args[0])
    except (KeyError, IndexError, TypeError, ValueError):
        return None


def _queue_keys(queues: Iterable[str]) -> list[str]:
    return [q if step == 0 else f"{q}{PRIORITY_SEP}{step}" for q in queues for step in PRIORITY_STEPS]


def broker_match_ids(
    client: redis.Redis, queues: Iterable[str] = (PRIORITY_QUEUE, QUEUE), *, unacked_max_age_s: float | None = None
) -> set[int]:
    """Match ids of every ``arena.run_match`` message in Redis (:func:`broker_task_ids`).

    Raises:
        redis.RedisError: Redis cannot be read.
    """
    return broker_task_ids(client, queues, unacked_max_age_s=unacked_max_age_s)[RUN_MATCH_TASK]


def broker_task_ids(
    client: redis.Redis, queues: Iterable[str] = (PRIORITY_QUEUE, QUEUE), *, unacked_max_age_s: float | None = None
) -> dict[str, set[int]]:
    """Per task of :data:`WATCHED_TASKS`, the first arguments of its messages in Redis (the
    match ids of ``arena.run_match``, the tournament ids of ``arena.enqueue_tournament``):
    waiting in the queues' lists, then delivered and unacknowledged (read in that order, so
    a message moving from a list to the unacked hash meanwhile is still seen). With
    ``unacked_max_age_s``, a delivered message older than that many seconds is left out: a
    match still ``queued`` (no worker claimed it) whose worker died, or a sender that has
    run that long (if it still runs, a second sender is harmless: they share the matches,
    row locks keep each match to one of them).

    Raises:
        redis.RedisError: Redis cannot be read.
    """
    found: dict[str, set[int]] = {task: set() for task in WATCHED_TASKS}
    for key in _queue_keys(queues):
        for raw in client.lrange(key, 0, -1):
            got = _task_id(_loads(raw))
            if got is not None:
                found[got[0]].add(got[1])
    delivered_at: dict[Any, float] = {}
    if unacked_max_age_s is not None:
        pairs: list[Any] = list(client.zrange(UNACKED_INDEX_KEY, 0, -1, withscores=True))
        for tag, score in pairs:
            delivered_at[tag] = float(score)
    now = time.time()
    for tag, raw in client.hgetall(UNACKED_KEY).items():
        if unacked_max_age_s is not None and now - float(delivered_at.get(tag, now)) > unacked_max_age_s:
            continue
        entry = _loads(raw)
        got = _task_id(entry[0] if isinstance(entry, list) and entry else None)
        if got is not None:
            found[got[0]].add(got[1])
    return found


def _loads(raw: bytes | str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return None


def reap(
    settings: Settings,
    sessions: sessionmaker[Session] | None = None,
    client: redis.Redis | None = None,
    dispatcher: Dispatcher | None = None,
) -> ReapReport:
    """One reaper run (module docstring). Returns what it did. ``dispatcher`` sends the
    matches and launches again (default: a :class:`arena.queue.CeleryDispatcher` of the broker).

    Raises:
        sqlalchemy.exc.OperationalError: the database is unreachable (the next run retries).
    """
    factory = sessions or shared_sessions(settings.database_url)
    sender = dispatcher if dispatcher is not None else CeleryDispatcher(settings.broker_url)
    report = ReapReport()
    rc = client or _redis(settings.broker_url)
    try:
        _store_spooled(settings, factory, rc, report, sender)
    except redis.RedisError as exc:
        log.warning("reaper: cannot read the spool (%s): expired leases not reaped this run", type(exc).__name__)
    else:
        with factory() as session:
            report.expired = lifecycle.reap_expired(session, keep=report.waiting)
    in_broker: dict[str, set[int]] | None = None  # per watched task; None: Redis not read
    try:
        # two reads a moment apart: a message being handed to a worker (popped from its list,
        # not yet in the unacked hash) is in neither for an instant, never in both reads
        age = float(settings.lost_after_s)
        first = broker_task_ids(rc, WATCHED_QUEUES, unacked_max_age_s=age)
        time.sleep(SECOND_READ_AFTER_S)
        second = broker_task_ids(rc, WATCHED_QUEUES, unacked_max_age_s=age)
        in_broker = {task: first[task] | second[task] for task in WATCHED_TASKS}
        report.broker_checked = True
    except redis.RedisError as exc:
        log.warning("reaper: cannot read the broker (%s)", type(exc).__name__)
    if in_broker is not None:
        with factory() as session:
            report.lost = lifecycle.lost_queued(session, in_broker[RUN_MATCH_TASK], older_than_s=settings.lost_after_s)
            stalled = lifecycle.stalled_tournaments(session, older_than_s=settings.lost_after_s)
            pars = lifecycle.pending_pars(session, older_than_s=settings.lost_after_s)
        for tid in stalled:
            if tid in in_broker[ENQUEUE_TOURNAMENT_TASK]:
                continue
            try:  # its sender is idempotent: it sends the matches still pending, once each
                sender.launch_tournament(tid, priority=True)
            except QueueError as exc:
                log.warning("reaper: %s", exc)
                break
            report.stalled.append(tid)
        _resend_pars(settings, [mid for mid in pars if mid not in in_broker[COMPUTE_PAR_TASK]], report)
    todo = report.expired + report.lost
    if todo:
        try:
            sender.send_matches(todo, priority=True)
        except QueueError as exc:  # they are queued in the database: the next runs re-send them
            log.warning("reaper: %s", exc)
        else:
            _announce_queued(settings, factory, todo)
    _sweep_gateways(rc, report)
    _waits_and_ends(factory, sender, report)
    _rate_ladder_sets(settings, factory, report)
    if (
        todo
        or report.stalled
        or report.spooled
        or report.waiting
        or report.pars
        or report.polls
        or report.ends
        or report.rated
    ):
        log.warning(str(report))
    return report


def _rate_ladder_sets(settings: Settings, factory: sessionmaker[Session], report: ReapReport) -> None:
    """Step 7 (module docstring): fills ``report.rated``."""
    with factory() as session:
        due = ladder_sets.unrated_sets(session, older_than_s=settings.lost_after_s)
        rows = dict(
            session.execute(
                select(Match.id, Tournament.ruleset)
                .join(Tournament, Tournament.id == Match.tournament_id)
                .where(Match.id.in_(due))
            ).all()
        )
        tournaments = dict(session.execute(select(Match.id, Match.tournament_id).where(Match.id.in_(due))).all())
    for match_id in due:
        if rate_after(factory, match_id, tournaments[match_id], rows[match_id], settings):
            report.rated.append(match_id)
    with factory() as session:
        compared = ladder_sets.pending_comparisons(session)
    for match_id in compared:
        with factory() as session:
            if ladder_sets.add_comparison(session, match_id):
                report.rated.append(match_id)


def _waits_and_ends(factory: sessionmaker[Session], sender: Dispatcher, report: ReapReport) -> None:
    """Step 6 (module docstring): fills ``report.polls`` and ``report.ends``."""
    with factory() as session:
        polls = lifecycle.waiting_tournaments(session, quiet_for_s=WAIT_QUIET_S)
    for tid in polls:
        try:
            sender.await_entrants(tid, 0)
        except QueueError as exc:
            log.warning("reaper: %s", exc)
            break
        report.polls.append(tid)
    with factory() as session:
        report.ends = notices.announce_ends(session, sender.send_webhook)


def _resend_pars(settings: Settings, match_ids: list[int], report: ReapReport) -> None:
    """Step 5 (module docstring): fills ``report.pars``."""
    if not match_ids:
        return
    try:
        CeleryDispatcher(settings.broker_url).send_pars(match_ids)
    except QueueError as exc:
        log.warning("reaper: %s", exc)
        return
    report.pars.extend(match_ids)


#: The live gateways of the last run (their change is logged).
_last_gateways: set[str] | None = None


def _sweep_gateways(client: redis.Redis, report: ReapReport) -> None:
    """Step 4 (module docstring): fills ``report.gateways``; logs the live gateways when they
    changed since the last run, or when something was dropped."""
    global _last_gateways
    try:
        report.gateways = relay.sweep(client)
    except redis.RedisError as exc:
        log.warning("reaper: cannot sweep the gateways' keys (%s)", type(exc).__name__)
        return
    live = set(report.gateways.gateways)
    if live != _last_gateways or report.gateways.presence or report.gateways.stale or report.gateways.wake:
        log.info("reaper: %s", report.gateways)
    _last_gateways = live


def _store_spooled(
    settings: Settings,
    factory: sessionmaker[Session],
    client: redis.Redis,
    report: ReapReport,
    sender: Dispatcher,
) -> None:
    """Step 0 (module docstring): fills ``report.spooled`` and ``report.waiting``.

    Raises:
        redis.RedisError: the spool cannot be read.
    """
    ids = spool.spooled_ids(client)
    for n, match_id in enumerate(ids):
        record = spool.get(client, match_id)
        if record is None:  # stored and deleted by its worker meanwhile, or unreadable
            continue
        try:
            outcome = store_from_spool(settings, factory, client, record, sender)
        except (OperationalError, InterfaceError) as exc:  # the database still fails: they all wait
            log.warning("reaper: %d spooled result(s) not stored yet (%s)", len(ids) - n, type(exc).__name__)
            report.waiting.extend(ids[n:])
            return
        if outcome is spool.Outcome.STORED:
            report.spooled.append(match_id)


def _announce_queued(settings: Settings, factory: sessionmaker[Session], match_ids: list[int]) -> None:
    """A ``queued`` tournament event per tournament of the re-sent matches (module docstring);
    a database error here only costs the pages an update."""
    try:
        with factory() as session:
            rows = session.execute(select(Match.tournament_id, Match.id).where(Match.id.in_(match_ids))).all()
    except Exception as exc:  # never fail a reaper run for a page update
        log.warning("reaper: no live event (%s)", type(exc).__name__)
        return
    by_tournament: dict[int, list[int]] = {}
    for tid, mid in rows:
        by_tournament.setdefault(tid, []).append(mid)
    for tid, mids in by_tournament.items():
        announce(settings, tid, "queued", sorted(mids))


_CLIENTS: dict[str, redis.Redis] = {}


def _redis(url: str) -> redis.Redis:
    if url not in _CLIENTS:
        _CLIENTS[url] = redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=5)
    return _CLIENTS[url]
