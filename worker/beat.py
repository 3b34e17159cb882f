"""The beat process of ``arena beat``: Celery beat whose own entries run in the beat itself.

:class:`ReaperScheduler` is Celery's :class:`~celery.beat.PersistentScheduler` except for the
entries of :data:`IN_BEAT`: instead of sending those tasks to a queue (where they would wait
for a free worker process, perhaps for a whole match), the beat process runs them directly:
the reaper (:func:`arena.reaper.reap`, every ``ARENA_REAPER_INTERVAL_S`` seconds), the ladders'
tick (:func:`ladder_tick`, every ``ARENA_LADDER_TICK_S``: sets formed and sent to the ladder
queue, health probes due sent to the check queue) and the ladders' batch fit
(:func:`ladder_fit`, every ``ARENA_LADDER_FIT_S``). A run that raises (database unreachable)
is logged and tried again at the next tick.

Start it with ``arena beat`` or::

    celery -A worker.celery_app beat -S worker.beat:ReaperScheduler -s /tmp/arena-beat-schedule
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import lru_cache
from typing import Any

import redis
from celery.beat import PersistentScheduler

from arena.config import Settings
from arena.db.models import utcnow
from arena.db.session import shared_sessions
from arena.queue import LADDER_FIT_TASK, LADDER_QUEUE, LADDER_TICK_TASK, REAP_TASK, CeleryDispatcher
from arena.reaper import reap
from arena.usecases import ladders

log = logging.getLogger("arena.beat")


@lru_cache(maxsize=4)
def _redis(url: str) -> redis.Redis:
    return redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=5)


def ladder_tick(settings: Settings) -> str:
    """One tick of every active ladder (:func:`arena.usecases.ladders.tick`): its sets sent to
    :data:`arena.queue.LADDER_QUEUE`; then the health probes due, one task to the check
    queue. Returns a report line."""
    sessions = shared_sessions(settings.database_url)
    sender = CeleryDispatcher(settings.broker_url, queue=LADDER_QUEUE)
    reports = ladders.tick(
        sessions,
        sender.send_matches,
        tick_s=settings.ladder_tick_s,
        probe_s=settings.ladder_probe_s,
        online=ladders.redis_online(_redis(settings.broker_url)),
    )
    with sessions() as s:
        due = ladders.probes_due(s, probe_s=settings.ladder_probe_s, now=utcnow())
    if due:
        sender.send_probes(due)
    formed = sum(len(r.formed) for r in reports)
    skipped = [f"{r.ladder_id}: {r.skipped}" for r in reports if r.skipped]
    return f"ladder tick: {formed} sets formed in {len(reports)} ladders, {len(due)} probes" + (
        f" (skipped {'; '.join(skipped)})" if skipped else ""
    )


def ladder_fit(settings: Settings) -> str:
    """The batch fit of every active ladder's official table (:func:`arena.usecases.ladders.fit_all`)."""
    fitted = ladders.fit_all(shared_sessions(settings.database_url))
    return f"ladder fit: {fitted} ladders"


#: The entries the beat runs itself, by task name.
IN_BEAT: dict[str, Callable[[Settings], Any]] = {
    REAP_TASK: reap,
    LADDER_TICK_TASK: ladder_tick,
    LADDER_FIT_TASK: ladder_fit,
}


class ReaperScheduler(PersistentScheduler):
    """Celery beat scheduler running :data:`IN_BEAT`'s entries in-process (module docstring)."""

    def apply_async(self, entry: Any, producer: Any = None, advance: bool = True, **kwargs: Any) -> Any:
        run = IN_BEAT.get(entry.task)
        if run is None:
            return super().apply_async(entry, producer, advance, **kwargs)
        entry = self.reserve(entry) if advance else entry
        try:
            report = run(Settings.from_env())
            log.info("%s", report)
        except Exception as exc:  # noqa: BLE001 - the next tick tries again
            log.warning("%s run failed: %s", entry.task, type(exc).__name__)
        return None
