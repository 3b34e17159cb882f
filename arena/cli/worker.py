"""``arena worker``: start a real Celery worker consuming the match queues; ``arena beat``:
the beat process running the reaper.

Equivalent to ``celery -A worker.celery_app worker --without-mingle --without-gossip
-Q arena.priority,arena.checks,arena --pool threads -c 64 -n arena-<pid>@%h`` (a node name unique per process, so several
workers may run on one host); settings come from the ``ARENA_*`` environment (``arena config``).

The default pool fits bots that think: a match spends nearly all its time waiting for its
bots' answers, so one process runs :data:`DEFAULT_THREADS` matches at once on threads
(docs/operations.md "Sizing workers", measured by ``bench/tournament_bench.py``). For bots
that answer in about a millisecond the arena's own work is the limit: use ``--pool prefork``
with one process per core.

``arena beat`` is ``celery -A worker.celery_app beat -S worker.beat:ReaperScheduler -s
<data dir>/celerybeat-schedule`` (the reaper: docs/operations.md "Leases and the reaper").
"""

from __future__ import annotations

import os

import click

from arena.core.config import Settings
from worker.celery_app import WORKER_QUEUES, app, visibility_timeout

#: Matches one worker process plays at once with the default thread pool.
DEFAULT_THREADS = 64


def default_node_name() -> str:
    """``arena-<pid>@%h``: Celery's own default, ``celery@HOST``, is the same for every worker
    of a host, and two nodes of one name clash in ``celery inspect``/``control``, Flower and
    the worker logs. Celery expands ``%h`` to the host name."""
    return f"arena-{os.getpid()}@%h"


@click.command("worker")
@click.option("--concurrency", "-c", type=click.IntRange(min=1), default=None,
              help=f"matches played at once: threads (default {DEFAULT_THREADS}) or, with --pool prefork, "
                   "processes (default: the number of CPUs)")
@click.option("--queues", "-Q", default=",".join(WORKER_QUEUES), show_default=True,
              help="comma-separated queues to consume, first queue first")
@click.option("--pool", type=click.Choice(["threads", "prefork", "solo"]), default="threads", show_default=True,
              help="execution pool (threads: many matches per process, for bots that think)")
@click.option("--loglevel", "-l", default="INFO", show_default=True)
@click.option("--hostname", "-n", default=None,
              help="node name (default: arena-<pid>@%h, unique per process on a host; %h is the host name)")
def worker(concurrency: int | None, queues: str, pool: str, loglevel: str, hostname: str | None) -> None:
    """Run matches and bot checks: a Celery worker for the ``arena.run_match`` and
    ``arena.check_bot`` tasks (blocks until stopped).

    SIGTERM is a warm shutdown (running matches finish; unfinished deliveries go back to the
    queue); a killed worker's match is played again once its lease expires (``arena beat``
    runs the reaper; see ``worker.celery_app``).
    """

    queue_list = [q.strip() for q in queues.split(",") if q.strip()]
    if not queue_list:
        raise click.BadParameter("name at least one queue", param_hint="--queues")
    argv = ["worker", "--without-mingle", "--without-gossip", "--pool", pool,
            "--queues", ",".join(queue_list), "--loglevel", loglevel]
    if pool == "threads" and not concurrency:
        concurrency = DEFAULT_THREADS
    if concurrency:
        argv += ["--concurrency", str(concurrency)]
    argv += ["--hostname", hostname or default_node_name()]
    click.echo(f"arena worker: queues {','.join(queue_list)}, visibility timeout "
               f"{visibility_timeout(Settings.from_env())} s", err=True)
    app.worker_main(argv)


@click.command("beat")
@click.option("--schedule", "-s", "schedule_path", default=None,
              help="beat's schedule file (default: <data dir>/celerybeat-schedule)")
@click.option("--loglevel", "-l", default="INFO", show_default=True)
def beat(schedule_path: str | None, loglevel: str) -> None:
    """Run the reaper every ARENA_REAPER_INTERVAL_S seconds: Celery beat (blocks until stopped).

    Matches whose worker died (lease expired, ARENA_LEASE_S) and queued matches the broker
    lost are sent again ahead of the queue (arena.core.reaper). Run exactly one per
    deployment (two are harmless: their runs skip each other's rows).
    """
    settings = Settings.from_env()
    path = schedule_path or str(settings.data_dir / "celerybeat-schedule")
    if schedule_path is None:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
    click.echo(f"arena beat: reaper every {settings.reaper_interval_s} s, lease {settings.lease_s} s, "
               f"lost after {settings.lost_after_s} s", err=True)
    app.start(["beat", "--scheduler", "worker.beat:ReaperScheduler", "--schedule", path,
               "--loglevel", loglevel])
