"""Celery application for Daifugo Arena.

Start a worker with ``arena worker`` or::

    celery -A worker.celery_app worker -Q arena --without-mingle --without-gossip

Configuration comes from the environment (see ``arena.config``):

- ``ARENA_BROKER_URL``: broker and result backend URL (default ``redis://127.0.0.1:6379/0``);
  only ``arena.ping`` stores its result (``task_ignore_result``: nothing reads the others).
- ``ARENA_CELERY_EAGER``: run tasks in-process (quick local runs only; default false).
- ``ARENA_VISIBILITY_TIMEOUT_S``: broker visibility timeout (default: computed, below).
- ``ARENA_BOT_MAX_CONCURRENCY``: per-bot request cap (``arena.runner.semaphore``), default 4.

Reliability. Tasks are acknowledged after they finish (``task_acks_late``), a task whose
worker process died is rejected back to the queue (``task_reject_on_worker_lost``) and each
worker process reserves one task at a time (``worker_prefetch_multiplier=1``). With the Redis
transport a delivered, unacknowledged message is kept aside; if its worker dies without
giving it back (SIGKILL, power loss), the message is delivered again once it is older than the
**visibility timeout**. The match task is idempotent (``worker.tasks.play_and_store``): a
re-delivered match is played again from its seed and its result is stored once.

Leases and the reaper (issue 13). The worker playing a match holds a lease on it in
PostgreSQL, renewed every few seconds; ``arena beat`` (Celery beat with
:class:`worker.beat.ReaperScheduler`) runs :func:`arena.reaper.reap` every
``ARENA_REAPER_INTERVAL_S`` seconds, which sends a match whose lease expired (a dead worker)
or whose message Redis lost (a restart without persistence) to ``arena.priority``. Workers
consume ``arena.priority`` before ``arena`` (``-Q arena.priority,arena``, queue order
``priority``), so such a match is played next; bot checks (``arena.checks``) have a worker
process of their own, with a few threads (``arena worker --checks``). The visibility timeout is only a backstop:
it must still be longer than the longest possible match (formula and defaults in
:mod:`arena.limits`), or a match being played may be delivered again (the delivery
finds its live lease and skips it).
"""

from __future__ import annotations

import logging

from celery import Celery, signals

from arena.config import Settings
from arena.delivery import prewarm
from arena.limits import visibility_timeout
from arena.queue import CHECK_QUEUE, PRIORITY_QUEUE, QUEUE

log = logging.getLogger("arena.worker")

#: The reaper's task (arena.reaper.reap), run by the beat process itself (worker.beat).
REAP_TASK = "arena.reap"
#: What a match worker process consumes, first queue first (the ``priority`` queue order):
#: reaped matches, then the match queue. Bot checks are not among them: ``arena worker``
#: runs them in a process of their own (:data:`CHECK_QUEUES`), so a flood of slow checks
#: never holds a thread, or the interpreter lock, of a match (issue 24).
WORKER_QUEUES = (PRIORITY_QUEUE, QUEUE)
#: What the check process of ``arena worker`` consumes.
CHECK_QUEUES = (CHECK_QUEUE,)


def make_app(settings: Settings | None = None) -> Celery:
    """Build the Celery app named ``arena`` from ``settings`` (default: ``Settings.from_env()``).

    The worker imports :mod:`worker.tasks` (``include``), which registers ``arena.run_match``.
    """
    settings = settings or Settings.from_env()
    vt = visibility_timeout(settings)
    app = Celery("arena", broker=settings.broker_url, backend=settings.broker_url, include=["worker.tasks"])
    app.conf.update(
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        # nothing reads a task's result but the tests' ``arena.ping`` (its own ignore_result=False)
        task_ignore_result=True,
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_default_queue=QUEUE,
        task_always_eager=settings.celery_eager,
        task_eager_propagates=True,
        broker_connection_retry_on_startup=True,
        broker_connection_retry=True,
        broker_connection_max_retries=None,  # a Redis restart: keep trying, lose nothing
        # Sweep for abandoned messages every vt/10 s (1..60 s), on every sweep call.
        broker_transport_options={
            "visibility_timeout": vt,
            "unacked_restore_interval": max(1, min(60, vt // 10)),
            "unacked_restore_throttle": 1,
            # -Q arena.priority,arena: the first queue with a message is always read first
            "queue_order_strategy": "priority",
        },
        result_backend_transport_options={"visibility_timeout": vt},
        result_expires=24 * 3600,
        timezone="UTC",
        enable_utc=True,
        beat_schedule={
            "arena-reaper": {
                "task": REAP_TASK,
                "schedule": float(settings.reaper_interval_s),
                "options": {"queue": PRIORITY_QUEUE, "expires": float(settings.reaper_interval_s)},
            },
        },
    )
    return app


app = make_app()


@app.task(name="arena.ping", ignore_result=False)
def ping() -> str:
    """Health check: returns ``"pong"``. Used by tests to know a worker is consuming."""
    return "pong"


@signals.worker_init.connect
def _prewarm_threads(sender=None, **_kw) -> None:
    """A thread (or solo) pool: open the process's connections before it consumes
    (:func:`arena.delivery.prewarm`, one per thread). A prefork pool's children
    open their own after the fork (below): nothing may be opened in the parent."""
    pool = str(getattr(sender, "pool_cls", ""))
    if "prefork" in pool or "processes" in pool:
        return
    # solo plays one match at a time (its "concurrency" is Celery's default, the CPU count)
    threads = 1 if "solo" in pool else int(getattr(sender, "concurrency", 1) or 1)
    opened = prewarm(Settings.from_env(), threads)
    log.info("opened ahead for %d threads: %s", threads, opened)


@signals.worker_process_init.connect
def _prewarm_child(**_kw) -> None:
    """A prefork child plays one match at a time: its own connections, after the fork."""
    prewarm(Settings.from_env(), 1)
