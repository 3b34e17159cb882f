"""Celery application for Daifugo Arena.

Start a worker with ``arena worker`` or::

    celery -A worker.celery_app worker -Q arena --without-mingle --without-gossip

Configuration comes from the environment (see ``arena.config``): ``ARENA_BROKER_URL`` (broker
and result backend; only ``arena.ping`` stores its result), ``ARENA_CELERY_EAGER``,
``ARENA_VISIBILITY_TIMEOUT_S`` (default: computed, :mod:`arena.limits`) and
``ARENA_BOT_MAX_CONCURRENCY``. Tasks are acknowledged late (``task_acks_late``), rejected back
to the queue when their worker process dies (``task_reject_on_worker_lost``), reserved one at
a time (``worker_prefetch_multiplier=1``); workers consume ``arena.priority`` before ``arena``
(queue order ``priority``), and bot checks (``arena.checks``) have a process of their own.
Reliability design: docs/operations.md, "Leases and the reaper" and "Visibility timeout".
"""

from __future__ import annotations

import logging

from celery import Celery, signals

from arena.config import Settings
from arena.limits import visibility_timeout
from arena.playing import prewarm
from arena.queue import (
    CHECK_QUEUE,
    LADDER_FIT_TASK,
    LADDER_QUEUE,
    LADDER_TICK_TASK,
    PAR_QUEUE,
    PING_TASK,
    PRIORITY_QUEUE,
    QUEUE,
    REAP_TASK,
    WEBHOOK_QUEUE,
)

log = logging.getLogger("arena.worker")

#: What a match worker process consumes, first queue first (the ``priority`` queue order):
#: reaped matches, then the match queue, then the ladders' sets. Bot checks are not among them: ``arena worker``
#: runs them in a process of their own (:data:`CHECK_QUEUES`), so a flood of slow checks
#: never holds a thread, or the interpreter lock, of a match (issue 24).
WORKER_QUEUES = (PRIORITY_QUEUE, QUEUE, LADDER_QUEUE)
#: What the check process of ``arena worker`` consumes: the owners' webhooks first (short
#: deliveries, bounded by arena.webhooks.TIMEOUT_S), then the bot checks, the ladders' health
#: probes and the polls of starts waiting for offline entrants.
CHECK_QUEUES = (WEBHOOK_QUEUE, CHECK_QUEUE)
#: What the par process of ``arena worker`` consumes (luck-adjusted scores: CPU work that can
#: wait, in a process of its own run at a lower priority, ``nice``, than the matches').
PAR_QUEUES = (PAR_QUEUE,)


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
            "arena-ladder-tick": {
                "task": LADDER_TICK_TASK,
                "schedule": float(settings.ladder_tick_s),
                "options": {"queue": PRIORITY_QUEUE, "expires": float(settings.ladder_tick_s)},
            },
            "arena-ladder-fit": {
                "task": LADDER_FIT_TASK,
                "schedule": float(settings.ladder_fit_s),
                "options": {"queue": PRIORITY_QUEUE, "expires": float(settings.ladder_fit_s)},
            },
        },
    )
    return app


app = make_app()


@app.task(name=PING_TASK, ignore_result=False)
def ping() -> str:
    """Health check: returns ``"pong"``. Used by tests to know a worker is consuming."""
    return "pong"


@signals.worker_init.connect
def _prewarm_threads(sender=None, **_kw) -> None:
    """A thread (or solo) pool: open the process's connections before it consumes
    (:func:`arena.playing.prewarm`, one per thread). A prefork pool's children
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
