"""Enqueueing match tasks by name, without importing ``worker/``.

The API sends ``arena.run_match(match_id)`` to the ``arena`` queue through a light Celery
client built from ``ARENA_BROKER_URL``; the task itself lives in the worker (issue 6).

With ``ARENA_CELERY_EAGER`` (the quick local run, no broker) a sent task would never run, so
the matches are played in-process, one after the other, by
:func:`arena.delivery.play_and_store` (what the task runs) with the caller's
settings (its database). The call returns when every match is stored.

Bot checks: :func:`enqueue_check` sends ``arena.check_bot(check_id)`` to the ``arena.checks``
queue (consumed by ``arena worker`` next to ``arena``, so a check never waits behind a
tournament's matches); in eager mode :func:`arena.conformance.run_check` runs in-process.

Starting a tournament (issue 15): ``POST /start`` only marks it running
(:func:`arena.lifecycle.start_tournament` without a schedule) and sends ONE task,
``arena.enqueue_tournament(tournament_id)`` (:func:`launch_tournament`), so it answers at
once whatever the field. The task runs :func:`send_tournament` on a worker: build the
schedule and store it (:func:`arena.lifecycle.store_schedule`, once), then send the
``pending`` matches by batches in schedule order, marking each batch ``queued``
(``progress.queued`` of the tournament grows as they go). The matches' rows are locked while
their batch is sent, so two such tasks (a start clicked twice, a redelivery) never send one
match twice. A worker claiming a match of a batch still being sent waits for that lock, so
the batches grow (:data:`FIRST_SEND_BATCH`, doubling up to :data:`SEND_BATCH`): the first
matches are claimed within milliseconds of the task's start instead of after a whole batch
of 200 (measured by ``bench/tournament_bench.py``: the first claim came 0.7 s after the
start, the 64th after 2.2 s). The task sits in the ``arena`` queue like the matches: a
tournament's matches would have waited behind the same messages anyway.

With ``ARENA_CELERY_EAGER`` (the quick local run, no broker) a sent task would never run, so
the matches are played in-process, one after the other, by
:func:`arena.delivery.play_and_store` (what the task runs) with the caller's
settings (its database). The call returns when every match is stored.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from celery import Celery
from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload, sessionmaker

import engine
from arena import lifecycle
from arena import schedule as sched
from arena.config import Settings
from arena.conformance import run_check
from arena.db.models import Match, Tournament
from arena.db.session import make_engine, make_sessionmaker
from arena.delivery import play_and_store

log = logging.getLogger("arena.queue")

RUN_MATCH_TASK = "arena.run_match"
ENQUEUE_TOURNAMENT_TASK = "arena.enqueue_tournament"
QUEUE = "arena"
#: Most matches sent to the broker per transaction by :func:`send_tournament`.
SEND_BATCH = 200
#: Its first batch (each next one twice the last, up to :data:`SEND_BATCH`).
FIRST_SEND_BATCH = 4
CHECK_BOT_TASK = "arena.check_bot"
#: Queue of the bot checks (``arena worker`` consumes it with :data:`QUEUE`).
CHECK_QUEUE = "arena.checks"
#: Consumed before :data:`QUEUE` by every worker (``-Q arena.priority,arena`` with the
#: ``priority`` queue order): the reaper's re-enqueued matches and its own runs.
PRIORITY_QUEUE = "arena.priority"


class QueueError(RuntimeError):
    """The broker cannot be reached."""


@lru_cache(maxsize=8)
def _client(broker_url: str) -> Celery:
    app = Celery("arena-client", broker=broker_url)
    app.conf.update(
        task_serializer="json",
        accept_content=["json"],
        broker_connection_retry_on_startup=False,
        broker_connection_max_retries=1,
        broker_transport_options={"max_retries": 1},
    )
    return app


def _send(settings: Settings, task: str, queue: str, args_list: Iterable[list[Any]]) -> None:
    """Send ``task`` once per argument list to ``queue`` over one broker connection.

    Raises:
        QueueError: the broker refused or could not be reached.
    """
    client = _client(settings.broker_url)
    try:
        with client.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1)
            for args in args_list:
                client.send_task(task, args=args, queue=queue, connection=conn)
    except Exception as exc:  # kombu raises OperationalError and friends
        raise QueueError(f"cannot reach the task broker: {exc}") from exc


def enqueue_matches(settings: Settings, match_ids: Iterable[int], queue: str = QUEUE) -> int:
    """Send one ``arena.run_match`` task per match id to ``queue``; returns how many were sent.

    Raises:
        QueueError: the broker refused or could not be reached (message says which).
    """
    ids = list(match_ids)
    if settings.celery_eager:
        for mid in ids:
            play_and_store(mid, settings)
        return len(ids)
    _send(settings, RUN_MATCH_TASK, queue, ([mid] for mid in ids))
    return len(ids)


def enqueue_check(settings: Settings, check_id: int) -> None:
    """Send one ``arena.check_bot`` task (eager mode: run the check now, in-process).

    Raises:
        QueueError: the broker refused or could not be reached.
    """
    if settings.celery_eager:
        run_check(check_id, settings)
        return
    _send(settings, CHECK_BOT_TASK, CHECK_QUEUE, [[check_id]])


@lru_cache(maxsize=4)
def _sessions(database_url: str) -> sessionmaker[Session]:
    return make_sessionmaker(make_engine(database_url))


def launch_tournament(settings: Settings, tournament_id: int, queue: str = QUEUE) -> None:
    """Send ``arena.enqueue_tournament(tournament_id)`` to ``queue`` (module docstring); in
    eager mode run :func:`send_tournament` here (it plays every match before returning).

    Raises:
        QueueError: the broker refused or could not be reached.
    """
    if settings.celery_eager:
        send_tournament(settings, tournament_id)
        return
    _send(settings, ENQUEUE_TOURNAMENT_TASK, queue, [[int(tournament_id)]])


def _build(session: Session, tournament_id: int):
    t = session.scalars(
        select(Tournament).where(Tournament.id == tournament_id).options(selectinload(Tournament.participants))
    ).one()
    seats = engine.SEATS[t.ruleset]
    ids = [p.bot_id for p in t.participants]
    return lambda: sched.build_schedule(
        seats, ids, t.games_per_pairing, t.seed, fill_with_house_bots=t.fill_with_house_bots, tournament_id=t.id
    )


def send_tournament(
    settings: Settings, tournament_id: int, batch: int = SEND_BATCH, first_batch: int = FIRST_SEND_BATCH
) -> int:
    """What ``arena.enqueue_tournament`` runs (module docstring): store the schedule of a
    running tournament if it has none yet, then send its ``pending`` matches and mark them
    ``queued``, by batches of ``first_batch``, then twice the last, up to ``batch`` matches.
    Returns how many matches were sent (eager mode: played).

    A schedule that cannot be built (:class:`arena.schedule.ScheduleError`: the API
    checks the participants when the tournament is created, so only bad stored data) cancels
    the tournament, with the reason logged. Nothing is sent for a tournament that is not
    running.

    Raises:
        QueueError: the broker is down (the task retries; what was sent stays ``queued``).
        sqlalchemy.exc.OperationalError: the database is unreachable.
    """
    factory = _sessions(settings.database_url)
    with factory() as s:
        if s.get(Tournament, tournament_id) is None:
            return 0
        try:
            stored = lifecycle.store_schedule(s, tournament_id, _build(s, tournament_id))
        except sched.ScheduleError as exc:
            s.rollback()
            log.error("tournament %s cannot be scheduled (%s): cancelled", tournament_id, exc)
            lifecycle.cancel_tournament(s, tournament_id)
            return 0
        if stored:
            log.info("tournament %s: %d matches stored", tournament_id, stored)
    if settings.celery_eager:  # play them here, one after the other
        with factory() as s:
            ids = list(
                s.scalars(
                    select(Match.id)
                    .where(Match.tournament_id == tournament_id, Match.status == lifecycle.MatchStatus.PENDING)
                    .order_by(Match.index)
                )
            )
        enqueue_matches(settings, ids)
        return len(ids)
    sent, size = 0, max(1, min(first_batch, batch))
    while True:
        with factory() as s:
            ids = lifecycle.pending_batch(s, tournament_id, size)
            if not ids:
                s.rollback()
                return sent
            enqueue_matches(settings, ids)  # an error rolls back: the batch stays pending
            lifecycle.mark_queued(s, ids)
            sent += len(ids)
        size = min(batch, size * 2)
