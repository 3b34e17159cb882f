"""The beat process of ``arena beat``: Celery beat whose reaper entry runs in the beat itself.

:class:`ReaperScheduler` is Celery's :class:`~celery.beat.PersistentScheduler` except for the
``arena.reap`` entry: instead of sending that task to a queue (where it would wait for a free
worker process, perhaps for a whole match), the beat process calls
:func:`arena.reaper.reap` directly, every ``ARENA_REAPER_INTERVAL_S`` seconds. A reaper
run that raises (database unreachable) is logged and tried again at the next tick.

Start it with ``arena beat`` or::

    celery -A worker.celery_app beat -S worker.beat:ReaperScheduler -s /tmp/arena-beat-schedule
"""

from __future__ import annotations

import logging
from typing import Any

from celery.beat import PersistentScheduler

from arena.config import Settings
from arena.reaper import reap
from worker.celery_app import REAP_TASK

log = logging.getLogger("arena.beat")


class ReaperScheduler(PersistentScheduler):
    """Celery beat scheduler running the reaper in-process (module docstring)."""

    def apply_async(self, entry: Any, producer: Any = None, advance: bool = True, **kwargs: Any) -> Any:
        if entry.task != REAP_TASK:
            return super().apply_async(entry, producer, advance, **kwargs)
        entry = self.reserve(entry) if advance else entry
        try:
            report = reap(Settings.from_env())
            log.info("%s", report)
        except Exception as exc:  # noqa: BLE001 - the next tick tries again
            log.warning("reaper run failed: %s", type(exc).__name__)
        return None
