"""Celery application for Daifugo Arena.

Start a worker with::

    celery -A worker.celery_app worker -Q arena --without-mingle --without-gossip

Configuration comes from the environment (see ``arena.config``):

- ``ARENA_BROKER_URL``: broker and result backend URL (default ``redis://127.0.0.1:6379/0``).
- ``ARENA_CELERY_EAGER``: run tasks in-process (quick local runs only; default false).

Tasks are acknowledged after they finish (``task_acks_late``) and each worker process
reserves one task at a time (``worker_prefetch_multiplier=1``), so a worker killed in the
middle of a match leaves the task on the queue for another worker.
"""

from __future__ import annotations

from celery import Celery

from arena.config import Settings

QUEUE = "arena"


def make_app(settings: Settings | None = None) -> Celery:
    """Build the Celery app named ``arena`` from ``settings`` (default: ``Settings.from_env()``)."""
    settings = settings or Settings.from_env()
    app = Celery("arena", broker=settings.broker_url, backend=settings.broker_url)
    app.conf.update(
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_default_queue=QUEUE,
        task_always_eager=settings.celery_eager,
        task_eager_propagates=True,
        broker_connection_retry_on_startup=True,
        result_expires=24 * 3600,
        timezone="UTC",
        enable_utc=True,
    )
    return app


app = make_app()


@app.task(name="arena.ping")
def ping() -> str:
    """Health check: returns ``"pong"``. Used by tests to know a worker is consuming."""
    return "pong"
