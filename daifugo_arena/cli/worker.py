"""``arena worker``: start real Celery workers consuming the match queues and the bot
checks; ``arena beat``: the beat process running the reaper.

Each match worker process is ``celery -A worker.celery_app worker --without-mingle
--without-gossip -Q arena.priority,arena --pool threads -c 32 -n arena-<pid>@%h`` (a node
name unique per process, so several workers may run on one host); one more process consumes
the bot checks alone (``-Q arena.checks -c 4``, ``--checks``). ``arena worker`` starts
:func:`default_processes` match processes (one per core, 2 to 4) of :data:`DEFAULT_THREADS`
threads, and one more process computes the pars of stored matches (``-Q arena.par -c 1``,
``--pars``) at a lower scheduling priority (``nice`` 10: the matches' processes come first);
with ``--processes`` above 1 it is a launcher (:class:`Launcher`) that passes
SIGTERM/SIGINT on (warm shutdown) and restarts a process that dies. ``arena beat`` is
``celery -A worker.celery_app beat -S worker.beat:ReaperScheduler -s <data
dir>/celerybeat-schedule``. Settings come from the ``ARENA_*`` environment (``arena config``).
Sizing and figures: docs/operations.md, "Sizing workers" and "Isolation".
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import click

from arena.config import Settings
from worker.celery_app import CHECK_QUEUES, PAR_QUEUES, WORKER_QUEUES, app, visibility_timeout

#: Matches one worker process plays at once with the default thread pool.
DEFAULT_THREADS = 32
#: Bot checks run at once by the check process of ``arena worker`` (``--checks``).
DEFAULT_CHECK_THREADS = 4
#: Par tasks run at once by the par process of ``arena worker`` (``--pars``): CPU work, so
#: one (a thread more would share the same interpreter lock).
DEFAULT_PAR_THREADS = 1
#: The par process's niceness increment (a lower scheduling priority than the matches').
PAR_NICE = 10
#: Bounds of the default number of worker processes (one per core within them).
MIN_PROCESSES, MAX_PROCESSES = 2, 4
#: A process that died is started again after this many seconds, doubled (up to
#: :data:`RESTART_MAX_S`) each time it dies within :data:`RESTART_RESET_S` of its start.
RESTART_S, RESTART_MAX_S, RESTART_RESET_S = 1.0, 30.0, 60.0


def default_processes() -> int:
    """Worker processes ``arena worker`` starts by default: one per core
    (``os.cpu_count()``), at least :data:`MIN_PROCESSES` (two GILs help even on one core:
    the operating system's scheduler is fairer to an answer waiting for its turn) and at most
    :data:`MAX_PROCESSES` (each keeps up to 10 database connections open: see
    docs/operations.md for PostgreSQL's ``max_connections``)."""
    return max(MIN_PROCESSES, min(MAX_PROCESSES, os.cpu_count() or 1))


def default_node_name() -> str:
    """``arena-<pid>@%h``: Celery's own default, ``celery@HOST``, is the same for every worker
    of a host, and two nodes of one name clash in ``celery inspect``/``control``, Flower and
    the worker logs. Celery expands ``%h`` to the host name."""
    return f"arena-{os.getpid()}@%h"


@click.command("worker")
@click.option(
    "--concurrency",
    "-c",
    type=click.IntRange(min=1),
    default=None,
    help=f"matches played at once per process: threads (default {DEFAULT_THREADS}) or, with "
    "--pool prefork, pool processes (default: the number of CPUs)",
)
@click.option(
    "--processes",
    "-p",
    type=click.IntRange(min=1),
    default=None,
    help=f"worker processes of the thread pool (default: one per core, {MIN_PROCESSES} to "
    f"{MAX_PROCESSES}); each is a Celery node playing --concurrency matches at once",
)
@click.option(
    "--queues",
    "-Q",
    default=",".join(WORKER_QUEUES),
    show_default=True,
    help="comma-separated queues to consume, first queue first",
)
@click.option(
    "--pool",
    type=click.Choice(["threads", "prefork", "solo"]),
    default="threads",
    show_default=True,
    help="execution pool (threads: many matches per process, for bots that think)",
)
@click.option(
    "--checks",
    type=click.IntRange(min=0),
    default=DEFAULT_CHECK_THREADS,
    show_default=True,
    help="bot checks run at once, in one more process of their own (queue arena.checks); "
    "0: no check process (run one elsewhere)",
)
@click.option(
    "--pars",
    type=click.IntRange(min=0),
    default=DEFAULT_PAR_THREADS,
    show_default=True,
    help="par tasks run at once (luck-adjusted scores, queue arena.par), in one more process of "
    f"their own at niceness +{PAR_NICE}; 0: no par process (run one elsewhere)",
)
@click.option("--nice", type=click.IntRange(0, 19), default=0, hidden=True)
@click.option("--loglevel", "-l", default="INFO", show_default=True)
@click.option(
    "--hostname",
    "-n",
    default=None,
    help="node name (default: arena-<pid>@%h, unique per process on a host; %h is the host name); "
    "with several processes NAME@HOST becomes NAME-1@HOST, NAME-2@HOST...",
)
def worker(
    concurrency: int | None,
    processes: int | None,
    queues: str,
    pool: str,
    checks: int,
    pars: int,
    nice: int,
    loglevel: str,
    hostname: str | None,
) -> None:
    """Run matches and bot checks: Celery workers for the ``arena.run_match`` and
    ``arena.check_bot`` tasks (blocks until stopped): ``--processes`` of them (thread pool),
    each playing ``--concurrency`` matches at once, one process running ``--checks``
    bot checks at once (none with ``--checks 0``) and one computing ``--pars`` pars at once
    (``arena.compute_par``, at a lower priority; none with ``--pars 0``).

    SIGTERM is a warm shutdown (running matches finish; unfinished deliveries go back to the
    queue); a killed worker's match is played again once its lease expires (``arena beat``
    runs the reaper; see ``worker.celery_app``).
    """

    queue_list = [q.strip() for q in queues.split(",") if q.strip()]
    if not queue_list:
        raise click.BadParameter("name at least one queue", param_hint="--queues")
    if processes is not None and processes > 1 and pool != "threads":
        raise click.BadParameter(
            f"several processes are for the thread pool, not --pool {pool} (prefork "
            "sizes its own processes with --concurrency)",
            param_hint="--processes",
        )
    if processes is None:
        processes = default_processes() if pool == "threads" else 1
    if processes > 1 or checks > 0 or pars > 0:
        child = [
            sys.executable,
            "-m",
            "daifugo_arena.cli",
            "worker",
            "--processes",
            "1",
            "--checks",
            "0",
            "--pars",
            "0",
        ]
        child += ["--loglevel", loglevel]
        matches = child + ["--pool", pool, "--queues", ",".join(queue_list)]
        if concurrency:
            matches += ["--concurrency", str(concurrency)]
        commands = [matches] * processes
        names: list[str | None] = (
            [_numbered(hostname, i) for i in range(1, processes + 1)] if hostname else [None] * processes
        )
        if checks > 0:
            commands.append(
                child + ["--pool", "threads", "--queues", ",".join(CHECK_QUEUES), "--concurrency", str(checks)]
            )
            names.append(_numbered(hostname, "checks") if hostname else f"arena-checks-{os.getpid()}@%h")
        if pars > 0:
            commands.append(
                child
                + ["--pool", "threads", "--queues", ",".join(PAR_QUEUES), "--concurrency", str(pars)]
                + ["--nice", str(PAR_NICE)]
            )
            names.append(_numbered(hostname, "pars") if hostname else f"arena-pars-{os.getpid()}@%h")
        click.echo(
            f"arena worker: {processes} processes of {concurrency or DEFAULT_THREADS} threads"
            + (f", 1 process of {checks} bot checks" if checks else "")
            + (f", 1 process of {pars} par tasks" if pars else ""),
            err=True,
        )
        raise SystemExit(Launcher(commands, names).run())
    argv = [
        "worker",
        "--without-mingle",
        "--without-gossip",
        "--pool",
        pool,
        "--queues",
        ",".join(queue_list),
        "--loglevel",
        loglevel,
    ]
    if pool == "threads" and not concurrency:
        concurrency = DEFAULT_THREADS
    if concurrency:
        argv += ["--concurrency", str(concurrency)]
    argv += ["--hostname", hostname or default_node_name()]
    if nice:
        os.nice(nice)
    click.echo(
        f"arena worker: queues {','.join(queue_list)}, visibility timeout {visibility_timeout(Settings.from_env())} s",
        err=True,
    )
    app.worker_main(argv)


def _numbered(hostname: str, i: int | str) -> str:
    """``name@host`` -> ``name-i@host`` (each process of one launcher a node name of its own)."""
    name, at, host = hostname.partition("@")
    return f"{name}-{i}{at}{host}"


def _die_with_parent() -> None:  # pragma: no cover - runs in the child before exec
    """Linux: the child gets SIGTERM (a warm shutdown) if the launcher is killed, instead of
    playing on as an orphan nobody stops."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


class Launcher:
    """Starts one worker process per entry of ``names`` (the command of the same index in
    ``commands``, or ``commands`` itself when it is one command, plus ``--hostname name``
    when a name is given) and watches them:

    * SIGTERM, SIGINT and SIGQUIT are passed on to every process (Celery's warm shutdown; a
      second SIGINT is its cold shutdown), also to one being started at that very moment, and
      no process is started after them; :meth:`run` returns once every process has exited:
      0 when each shut down cleanly, else the first other status (:meth:`_stop_status`);
    * SIGHUP restarts every process (each gets SIGTERM, finishes its running matches, and a new
      one starts at once), as Celery's own SIGHUP restarts a worker;
    * a process that exits otherwise (killed, crashed, or shut down remotely) is started again
      after :data:`RESTART_S` seconds, doubled up to :data:`RESTART_MAX_S` while it keeps
      dying within :data:`RESTART_RESET_S` of its start.

    Celery restarts nothing itself for a thread pool; this is the least an operator expects
    of one command (a process supervisor such as systemd restarts the launcher)."""

    def __init__(self, commands: list[list[str]] | list[str], names: list[str | None]):
        if commands and isinstance(commands[0], str):
            self.commands = [[str(c) for c in commands]] * len(names)
        else:
            self.commands = [list(c) for c in commands]
        self.names = names
        self.procs: list[subprocess.Popen | None] = [None] * len(names)
        self.started = [0.0] * len(names)
        self.delay = [RESTART_S] * len(names)
        self.due = [0.0] * len(names)
        self.hup = [False] * len(names)
        self.stopping: int | None = None  # the stop signal received, if any
        self._signalled: set[int] = set()  # processes a stop signal was passed to

    def _start(self, i: int) -> None:
        name = self.names[i]
        cmd = self.commands[i] + (["--hostname", name] if name else [])
        # a session of its own: a terminal's Ctrl-C reaches the launcher only, which passes it
        # on once (a second SIGINT is Celery's cold shutdown)
        proc = subprocess.Popen(
            cmd, start_new_session=True, preexec_fn=_die_with_parent if sys.platform == "linux" else None
        )
        self.procs[i] = proc
        self.started[i] = time.monotonic()
        if self.stopping is not None and proc.pid not in self._signalled:
            self._send(proc, self.stopping)  # the stop came while it was being started

    def _send(self, proc: subprocess.Popen, signum: int) -> None:
        if proc.poll() is None:
            try:
                proc.send_signal(signum)
            except ProcessLookupError:
                pass
        if signum != signal.SIGHUP:
            self._signalled.add(proc.pid)

    def _signal(self, signum: int, _frame=None) -> None:
        self.stopping = signum
        for p in self.procs:
            if p is not None:
                self._send(p, signum)

    def _restart_all(self, _signum: int, _frame=None) -> None:
        if self.stopping is not None:
            return
        for i, p in enumerate(self.procs):
            if p is not None and p.poll() is None:
                self.hup[i] = True
                self._send(p, signal.SIGTERM)

    def run(self) -> int:
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT):
            signal.signal(sig, self._signal)
        signal.signal(signal.SIGHUP, self._restart_all)
        for i in range(len(self.names)):
            if self.stopping is None:
                self._start(i)
        while True:
            alive = False
            for i, p in enumerate(self.procs):
                if p is not None and p.poll() is None:
                    alive = True
                    continue
                if self.stopping is not None:
                    continue
                now = time.monotonic()
                if p is not None:  # it just exited: when to start a new one
                    up = now - self.started[i]
                    if self.hup[i]:
                        wait, self.hup[i] = 0.0, False
                    else:
                        if up >= RESTART_RESET_S:
                            self.delay[i] = RESTART_S
                        wait = self.delay[i]
                        self.delay[i] = min(RESTART_MAX_S, wait * 2)
                    self.due[i] = now + wait
                    click.echo(
                        f"arena worker: process {p.pid} exited with status {p.returncode} after "
                        f"{up:.0f} s; a new one starts in {wait:.0f} s",
                        err=True,
                    )
                    self.procs[i] = None
                if now >= self.due[i]:
                    self._start(i)
                alive = True
            if not alive:
                return self._stop_status()
            time.sleep(0.2)

    def _stop_status(self) -> int:
        """The launcher's exit status once every process has exited after a stop signal: 0
        when each shut down cleanly (or was ended by that signal itself while it started,
        before Celery handles it), else the first other status (128 + N for a process killed
        by signal N, as a shell reports it), so a supervisor sees a stop that went wrong."""
        for p in self.procs:
            code = p.returncode if p is not None else 0
            if code and code != -(self.stopping or 0):
                return 128 - code if code < 0 else code
        return 0


@click.command("beat")
@click.option(
    "--schedule",
    "-s",
    "schedule_path",
    default=None,
    help="beat's schedule file (default: <data dir>/celerybeat-schedule)",
)
@click.option("--loglevel", "-l", default="INFO", show_default=True)
def beat(schedule_path: str | None, loglevel: str) -> None:
    """Run the reaper every ARENA_REAPER_INTERVAL_S seconds: Celery beat (blocks until stopped).

    Matches whose worker died (lease expired, ARENA_LEASE_S) and queued matches the broker
    lost are sent again ahead of the queue (arena.reaper). Run exactly one per
    deployment (two are harmless: their runs skip each other's rows).
    """
    settings = Settings.from_env()
    path = schedule_path or str(settings.data_dir / "celerybeat-schedule")
    if schedule_path is None:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
    click.echo(
        f"arena beat: reaper every {settings.reaper_interval_s} s, lease {settings.lease_s} s, "
        f"lost after {settings.lost_after_s} s",
        err=True,
    )
    app.start(["beat", "--scheduler", "worker.beat:ReaperScheduler", "--schedule", path, "--loglevel", loglevel])
