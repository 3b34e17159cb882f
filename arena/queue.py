"""The Celery dispatcher: work sent to the broker as tasks, by name, without importing ``worker/``.

:class:`CeleryDispatcher` implements :class:`arena.dispatch.Dispatcher` through a light
Celery client built from the broker URL (``ARENA_BROKER_URL``); the tasks themselves live in
the worker (:mod:`worker.tasks`). It imports no runner: this is what the API process sends
with. The task names and the queues are the constants below, each written once."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

from celery import Celery

from arena.dispatch import QueueError

__all__ = [
    "AWAIT_ENTRANTS_TASK",
    "CHECK_BOT_TASK",
    "CHECK_QUEUE",
    "COMPUTE_PAR_TASK",
    "ENQUEUE_TOURNAMENT_TASK",
    "LADDER_FIT_TASK",
    "LADDER_TICK_TASK",
    "LADDER_PROBE_TASK",
    "LADDER_QUEUE",
    "PAR_QUEUE",
    "PING_TASK",
    "PRIORITY_QUEUE",
    "QUEUE",
    "REAP_TASK",
    "REFILL_LADDER_TASK",
    "RUN_MATCH_TASK",
    "SEND_WEBHOOK_TASK",
    "WEBHOOK_QUEUE",
    "CeleryDispatcher",
    "QueueError",
]

# The Celery task names, each written here once: the tasks are registered under them
# (worker.tasks, worker.celery_app), sent by them (here, worker.beat) and tested by them.
RUN_MATCH_TASK = "arena.run_match"
ENQUEUE_TOURNAMENT_TASK = "arena.enqueue_tournament"
CHECK_BOT_TASK = "arena.check_bot"
COMPUTE_PAR_TASK = "arena.compute_par"
#: A ladder's health probes of HTTP bots (queue :data:`CHECK_QUEUE`: the check process).
LADDER_PROBE_TASK = "arena.ladder_probe"
AWAIT_ENTRANTS_TASK = "arena.await_entrants"
SEND_WEBHOOK_TASK = "arena.send_webhook"
#: The next sets of a done ladder set's entries (queue :data:`PRIORITY_QUEUE`: they start
#: within the second, as the set's thread frees).
REFILL_LADDER_TASK = "arena.refill_ladder"
#: The reaper's task (arena.reaper.reap), the ladders' tick and their batch fit: run by the
#: beat process itself (worker.beat).
REAP_TASK = "arena.reap"
LADDER_TICK_TASK = "arena.ladder_tick"
LADDER_FIT_TASK = "arena.ladder_fit"
#: The health check a worker answers ``"pong"`` to (the one task whose result is stored).
PING_TASK = "arena.ping"
QUEUE = "arena"
#: Queue of the bot checks (``arena worker`` consumes it with :data:`QUEUE`).
CHECK_QUEUE = "arena.checks"
#: Consumed before :data:`QUEUE` by every worker (``-Q arena.priority,arena`` with the
#: ``priority`` queue order): the reaper's re-enqueued matches and its own runs.
PRIORITY_QUEUE = "arena.priority"
#: Queue of the par tasks (luck-adjusted scores, arena.usecases.pars): work that can wait,
#: consumed by a process of its own, niced (``arena worker --pars``), off the matches' path.
PAR_QUEUE = "arena.par"
#: Queue of the ladders' sets: consumed after :data:`QUEUE` by every match worker (queue order
#: ``priority``): the ladders play on the capacity the tournaments leave.
LADDER_QUEUE = "arena.ladder"
#: Queue of the owners' webhooks (arena.notices): consumed by the check process of ``arena
#: worker``, first, never by a match's thread.
WEBHOOK_QUEUE = "arena.webhooks"


@lru_cache(maxsize=8)
def _client(broker_url: str) -> Celery:
    app = Celery("arena-client", broker=broker_url)
    app.conf.update(
        task_serializer="json",
        accept_content=["json"],
        task_ignore_result=True,
        broker_connection_retry_on_startup=False,
        broker_connection_max_retries=1,
        broker_transport_options={"max_retries": 1},
    )
    return app


class CeleryDispatcher:
    """:class:`arena.dispatch.Dispatcher` sending Celery tasks to ``broker_url`` (module
    docstring); ``queue``: where matches and launches go without ``priority``."""

    def __init__(self, broker_url: str, *, queue: str = QUEUE) -> None:
        self.broker_url = broker_url
        self.queue = queue

    def _queue(self, priority: bool) -> str:
        return PRIORITY_QUEUE if priority else self.queue

    def _send(
        self,
        task: str,
        queue: str,
        args_list: Iterable[list[Any]],
        *,
        countdown: float | None = None,
        kwargs: dict[str, Any] | None = None,
    ) -> None:
        """Send ``task`` once per argument list to ``queue`` over one broker connection.

        Raises:
            QueueError: the broker refused or could not be reached.
        """
        client = _client(self.broker_url)
        try:
            with client.connection_for_write() as conn:
                conn.ensure_connection(max_retries=1)
                for args in args_list:
                    client.send_task(
                        task,
                        args=args,
                        kwargs=kwargs,
                        queue=queue,
                        connection=conn,
                        ignore_result=True,
                        countdown=countdown,
                    )
        except Exception as exc:  # kombu raises OperationalError and friends
            raise QueueError(f"cannot reach the task broker: {exc}") from exc

    def send_matches(self, match_ids: Sequence[int], *, priority: bool = False) -> int:
        """One ``arena.run_match`` task per match id; returns how many were sent.

        Raises:
            QueueError: the broker refused or could not be reached (message says which).
        """
        ids = [int(mid) for mid in match_ids]
        self._send(RUN_MATCH_TASK, self._queue(priority), ([mid] for mid in ids))
        return len(ids)

    def send_check(self, check_id: int) -> None:
        """One ``arena.check_bot`` task to :data:`CHECK_QUEUE`.

        Raises:
            QueueError: the broker refused or could not be reached.
        """
        self._send(CHECK_BOT_TASK, CHECK_QUEUE, [[int(check_id)]])

    def send_pars(self, match_ids: Sequence[int]) -> int:
        """One ``arena.compute_par`` task per match id to :data:`PAR_QUEUE`; returns how many.

        Raises:
            QueueError: the broker refused or could not be reached.
        """
        ids = [int(mid) for mid in match_ids]
        self._send(COMPUTE_PAR_TASK, PAR_QUEUE, ([mid] for mid in ids))
        return len(ids)

    def refill_ladder(self, match_id: int) -> None:
        """One ``arena.refill_ladder`` task to :data:`PRIORITY_QUEUE`.

        Raises:
            QueueError: the broker refused or could not be reached.
        """
        self._send(REFILL_LADDER_TASK, PRIORITY_QUEUE, [[int(match_id)]])

    def send_probes(self, entry_ids: Sequence[int]) -> None:
        """One ``arena.ladder_probe`` task with the ladder entries to probe, to
        :data:`CHECK_QUEUE` (the check process: a slow bot's probe never holds a match's thread).
        Not part of :class:`arena.dispatch.Dispatcher`: the beat sends these.

        Raises:
            QueueError: the broker refused or could not be reached.
        """
        self._send(LADDER_PROBE_TASK, CHECK_QUEUE, [[[int(e) for e in entry_ids]]])

    def send_table(self, match_id: int) -> None:
        """One ``arena.run_match`` task to :data:`PRIORITY_QUEUE`: a person waits for it.

        Raises:
            QueueError: the broker refused or could not be reached.
        """
        self.send_matches([match_id], priority=True)

    def launch_tournament(self, tournament_id: int, *, priority: bool = False) -> None:
        """One ``arena.enqueue_tournament`` task.

        Raises:
            QueueError: the broker refused or could not be reached.
        """
        self._send(ENQUEUE_TOURNAMENT_TASK, self._queue(priority), [[int(tournament_id)]])

    def await_entrants(self, tournament_id: int, countdown_s: float) -> None:
        """One ``arena.await_entrants`` task to :data:`CHECK_QUEUE`, due in ``countdown_s`` seconds.

        Raises:
            QueueError: the broker refused or could not be reached.
        """
        self._send(AWAIT_ENTRANTS_TASK, CHECK_QUEUE, [[int(tournament_id)]], countdown=max(0.0, float(countdown_s)))

    def send_webhook(
        self, account_id: int, message: dict[str, Any], *, attempt: int = 1, countdown_s: float = 0
    ) -> None:
        """One ``arena.send_webhook`` task to :data:`WEBHOOK_QUEUE` (``attempt``: its number,
        from 1; a retry comes ``countdown_s`` seconds later).

        Raises:
            QueueError: the broker refused or could not be reached.
        """
        self._send(
            SEND_WEBHOOK_TASK,
            WEBHOOK_QUEUE,
            [[int(account_id), message]],
            countdown=countdown_s or None,
            kwargs={"attempt": int(attempt)},
        )
