"""Enqueueing match tasks by name, without importing ``worker/``.

The API sends ``arena.run_match(match_id)`` to the ``arena`` queue through a light Celery
client built from ``ARENA_BROKER_URL``; the task itself lives in the worker (issue 6).

With ``ARENA_CELERY_EAGER`` (the quick local run, no broker) a sent task would never run, so
the matches are played in-process, one after the other, by ``worker.tasks.play_and_store``
(imported by module name at call time, so ``arena`` never imports ``worker`` at import time)
with the caller's settings (its database). The call returns when every match is stored.
"""

from __future__ import annotations

import importlib
from functools import lru_cache
from typing import Iterable

from celery import Celery

from arena.config import Settings

RUN_MATCH_TASK = "arena.run_match"
QUEUE = "arena"


class QueueError(RuntimeError):
    """The broker cannot be reached, or (eager mode) the task is not registered."""


@lru_cache(maxsize=8)
def _client(broker_url: str) -> Celery:
    app = Celery("arena-client", broker=broker_url)
    app.conf.update(task_serializer="json", accept_content=["json"],
                    broker_connection_retry_on_startup=False, broker_connection_max_retries=1,
                    broker_transport_options={"max_retries": 1})
    return app


def _eager_runner():
    try:
        mod = importlib.import_module("worker.tasks")
    except ImportError as exc:
        raise QueueError(f"the match runner is not available in-process (ARENA_CELERY_EAGER): {exc}") from exc
    return mod.play_and_store


def enqueue_matches(settings: Settings, match_ids: Iterable[int]) -> int:
    """Send one ``arena.run_match`` task per match id; returns how many were sent.

    Raises:
        QueueError: the broker refused or could not be reached (message says which).
    """
    ids = list(match_ids)
    if settings.celery_eager:
        play_and_store = _eager_runner()
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
