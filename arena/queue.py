"""Enqueueing match tasks by name, without importing ``worker/``.

The API sends ``arena.run_match(match_id)`` to the ``arena`` queue through a light Celery
client built from ``ARENA_BROKER_URL``; the task itself lives in the worker (issue 6).

With ``ARENA_CELERY_EAGER`` (the quick local run, no broker) a sent task would never run, so
the task is looked up by name in the worker's Celery app (imported by module name at call
time, :data:`EAGER_TASK_MODULES`) and run in-process.
"""

from __future__ import annotations

import importlib
from functools import lru_cache
from typing import Iterable

from celery import Celery

from arena.config import Settings

RUN_MATCH_TASK = "arena.run_match"
QUEUE = "arena"
#: Modules imported in eager mode so that the worker's tasks are registered.
EAGER_TASK_MODULES = ("worker.celery_app", "worker.tasks")


class QueueError(RuntimeError):
    """The broker cannot be reached, or (eager mode) the task is not registered."""


@lru_cache(maxsize=8)
def _client(broker_url: str) -> Celery:
    app = Celery("arena-client", broker=broker_url)
    app.conf.update(task_serializer="json", accept_content=["json"],
                    broker_connection_retry_on_startup=False, broker_connection_max_retries=1,
                    broker_transport_options={"max_retries": 1})
    return app


def _eager_task(name: str):
    app = None
    for module in EAGER_TASK_MODULES:
        try:
            mod = importlib.import_module(module)
        except ImportError:
            continue
        app = getattr(mod, "app", app)
    if app is None or name not in app.tasks:
        raise QueueError(f"task {name!r} is not available in-process (ARENA_CELERY_EAGER)")
    return app.tasks[name]


def enqueue_matches(settings: Settings, match_ids: Iterable[int]) -> int:
    """Send one ``arena.run_match`` task per match id; returns how many were sent.

    Raises:
        QueueError: the broker refused or could not be reached (message says which).
    """
    ids = list(match_ids)
    if settings.celery_eager:
        task = _eager_task(RUN_MATCH_TASK)
        for mid in ids:
            task.apply(args=[mid])
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
