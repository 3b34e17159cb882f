"""``arena worker``: start a real Celery worker consuming the match queue.

Equivalent to ``celery -A worker.celery_app worker --without-mingle --without-gossip
-Q arena,arena.checks --pool threads -c 32 -n arena-<pid>@%h`` (a node name unique per process, so several
workers may run on one host); settings come from the ``ARENA_*`` environment (``arena config``).

The default pool fits bots that think: a match spends nearly all its time waiting for its
bots' answers, so one process runs :data:`DEFAULT_THREADS` matches at once on threads
(docs/operations.md "Sizing workers", measured by ``bench/tournament_bench.py``). For bots
that answer in about a millisecond the arena's own work is the limit: use ``--pool prefork``
with one process per core.
"""

from __future__ import annotations

import os

import click

from arena.core.config import Settings
from worker.celery_app import app, visibility_timeout

#: Matches one worker process plays at once with the default thread pool.
DEFAULT_THREADS = 32


def default_node_name() -> str:
    """``arena-<pid>@%h``: Celery's own default, ``celery@HOST``, is the same for every worker
    of a host, and two nodes of one name clash in ``celery inspect``/``control``, Flower and
    the worker logs. Celery expands ``%h`` to the host name."""
    return f"arena-{os.getpid()}@%h"


@click.command("worker")
@click.option("--concurrency", "-c", type=click.IntRange(min=1), default=None,
              help=f"matches played at once: threads (default {DEFAULT_THREADS}) or, with --pool prefork, "
                   "processes (default: the number of CPUs)")
@click.option("--queues", "-Q", default="arena,arena.checks", show_default=True,
              help="comma-separated queues to consume")
@click.option("--pool", type=click.Choice(["threads", "prefork", "solo"]), default="threads", show_default=True,
              help="execution pool (threads: many matches per process, for bots that think)")
@click.option("--loglevel", "-l", default="INFO", show_default=True)
@click.option("--hostname", "-n", default=None,
              help="node name (default: arena-<pid>@%h, unique per process on a host; %h is the host name)")
def worker(concurrency: int | None, queues: str, pool: str, loglevel: str, hostname: str | None) -> None:
    """Run matches and bot checks: a Celery worker for the ``arena.run_match`` and
    ``arena.check_bot`` tasks (blocks until stopped).

    SIGTERM is a warm shutdown (running matches finish; unfinished deliveries go back to the
    queue); a killed worker's match is delivered again after the broker visibility timeout
    (see ``worker.celery_app``).
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
