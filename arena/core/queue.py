"""Enqueueing match tasks by name, without importing ``worker/``.

The API sends ``arena.run_match(match_id)`` to the ``arena`` queue through a light Celery
client built from ``ARENA_BROKER_URL``; the task itself lives in the worker (issue 6).

With ``ARENA_CELERY_EAGER`` (the quick local run, no broker) a sent task would never run, so
the matches are played in-process, one after the other, by
:func:`arena.core.runner.service.play_and_store` (what the task runs) with the caller's
settings (its database). The call returns when every match is stored.

Bot checks: :func:`enqueue_check` sends ``arena.check_bot(check_id)`` to the ``arena.checks``
queue (consumed by ``arena worker`` next to ``arena``, so a check never waits behind a
tournament's matches); in eager mode :func:`arena.core.conformance.run_check` runs in-process.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

from celery import Celery

from arena.core.config import Settings
from arena.core.conformance import run_check
from arena.core.runner.service import play_and_store

RUN_MATCH_TASK = "arena.run_match"
QUEUE = "arena"
CHECK_BOT_TASK = "arena.check_bot"
#: Queue of the bot checks (``arena worker`` consumes it with :data:`QUEUE`).
CHECK_QUEUE = "arena.checks"


class QueueError(RuntimeError):
    """The broker cannot be reached."""


@lru_cache(maxsize=8)
def _client(broker_url: str) -> Celery:
    app = Celery("arena-client", broker=broker_url)
    app.conf.update(task_serializer="json", accept_content=["json"],
                    broker_connection_retry_on_startup=False, broker_connection_max_retries=1,
                    broker_transport_options={"max_retries": 1})
    return app


def enqueue_matches(settings: Settings, match_ids: Iterable[int]) -> int:
    """Send one ``arena.run_match`` task per match id; returns how many were sent.

    Raises:
        QueueError: the broker refused or could not be reached (message says which).
    """
    ids = list(match_ids)
    if settings.celery_eager:
        for mid in ids:
            play_and_store(mid, settings)
        return len(ids)
    client = _client(settings.broker_url)
    try:
        with client.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1)
            for mid in ids:
                client.send_task(RUN_MATCH_TASK, args=[mid], queue=QUEUE, connection=conn)
    except Exception as exc:  # kombu raises OperationalError and friends
        raise QueueError(f"cannot reach the task broker: {exc}") from exc
    return len(ids)


def enqueue_check(settings: Settings, check_id: int) -> None:
    """Send one ``arena.check_bot`` task (eager mode: run the check now, in-process).

    Raises:
        QueueError: the broker refused or could not be reached.
    """
    if settings.celery_eager:
        run_check(check_id, settings)
        return
    client = _client(settings.broker_url)
    try:
        with client.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1)
            client.send_task(CHECK_BOT_TASK, args=[check_id], queue=CHECK_QUEUE, connection=conn)
    except Exception as exc:  # kombu raises OperationalError and friends
        raise QueueError(f"cannot reach the task broker: {exc}") from exc
