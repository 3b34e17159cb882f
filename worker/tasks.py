"""The Celery tasks of the ``arena`` queue: thin wrappers around the shared core.

``arena.run_match(match_id)`` runs :func:`arena.delivery.play_and_store`;
``arena.check_bot(check_id)`` (queue ``arena.checks``) runs :func:`arena.conformance.run_check`;
``arena.enqueue_tournament(tournament_id)`` runs
:func:`arena.usecases.tournaments.send_tournament` (store a started tournament's schedule,
send its matches through :class:`arena.queue.CeleryDispatcher`).
``arena.compute_par(match_id)`` (queue ``arena.par``) runs :func:`arena.usecases.pars.fill_pars`.
``arena.await_entrants(tournament_id)`` (queue ``arena.checks``) runs
:func:`arena.usecases.entrants.await_entrants` (one poll of a start waiting for offline entrants).
``arena.send_webhook(account_id, message, attempt=1)`` (queue ``arena.webhooks``) runs
:func:`arena.notices.deliver`, and sends itself again after :func:`arena.webhooks.backoff_s`
while the receiver fails in a way worth another attempt, :data:`arena.webhooks.ATTEMPTS` in all.
``arena.refill_ladder(match_id)`` (queue ``arena.priority``) runs
:func:`arena.matchmaking.refill` (a done ladder set's entries: their next sets, to the queue
``arena.ladder``).
``arena.reap()`` runs :func:`arena.reaper.reap` (normally inside ``arena beat``, see
:mod:`worker.beat`; a worker runs it only when it is sent to a queue explicitly).
"""

from __future__ import annotations

import logging

from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError

from arena import notices, roll_call, webhooks
from arena.config import Settings
from arena.conformance import run_check
from arena.db.session import shared_sessions
from arena.delivery import MatchDeferred, play_and_store
from arena.dispatch import QueueError
from arena.playing import worker_redis
from arena.probes import run_probes
from arena.queue import (
    AWAIT_ENTRANTS_TASK,
    CHECK_BOT_TASK,
    COMPUTE_PAR_TASK,
    ENQUEUE_TOURNAMENT_TASK,
    LADDER_PROBE_TASK,
    LADDER_QUEUE,
    REAP_TASK,
    REFILL_LADDER_TASK,
    RUN_MATCH_TASK,
    SEND_WEBHOOK_TASK,
    CeleryDispatcher,
)
from arena.reaper import reap
from arena.runner.claims import defer_countdown_s
from arena.usecases import ladders
from arena.usecases.entrants import await_entrants
from arena.usecases.pars import fill_pars
from arena.usecases.tournaments import send_tournament
from worker.celery_app import app

log = logging.getLogger("arena.tasks")

#: What the database raises while it cannot be reached: the tasks retry on it.
DATABASE_DOWN = (OperationalError, InterfaceError)
#: The options of every task that changes stored state: acknowledged once done (a worker
#: lost mid-task gets it delivered again), retried with backoff while the database is down.
DURABLE: dict = {
    "bind": True,
    "acks_late": True,
    "reject_on_worker_lost": True,
    "autoretry_for": DATABASE_DOWN,
    "retry_backoff": 2,
    "retry_backoff_max": 60,
    "max_retries": 10,
}


@app.task(name=RUN_MATCH_TASK, **DURABLE)
def run_match_task(self, match_id: int, deferred: int = 0) -> str:
    """Celery task: :func:`play_and_store` (``args=[match_id]``), retried while the database
    is unreachable. A delivery refused because a bot of the match is busy
    (:class:`MatchDeferred`) is sent again to the same queue after
    :func:`defer_countdown_s` (``kwargs={"deferred": n}``, the refusals so far; longer when
    many matches wait for the same bot): the thread
    goes on to the next message instead of waiting for that bot."""
    try:
        return play_and_store(int(match_id))
    except MatchDeferred as exc:
        queue = (self.request.delivery_info or {}).get("routing_key") or None
        countdown = defer_countdown_s(deferred, exc.deferred_on_endpoint)
        self.apply_async(args=[int(match_id)], kwargs={"deferred": int(deferred) + 1}, countdown=countdown, queue=queue)
        return f"{exc} (again in {countdown:.1f} s)"


@app.task(name=CHECK_BOT_TASK, **DURABLE)
def check_bot_task(self, check_id: int) -> str:
    """Celery task: :func:`run_check` (``args=[check_id]``), retried while the database is
    unreachable; a re-delivered check runs again (its outcome is stored once)."""
    return run_check(int(check_id))


@app.task(name=ENQUEUE_TOURNAMENT_TASK, **{**DURABLE, "autoretry_for": (*DATABASE_DOWN, QueueError)})
def enqueue_tournament_task(self, tournament_id: int) -> str:
    """Celery task: :func:`send_tournament` (``args=[tournament_id]``), retried while the
    database or the broker is unreachable (it resumes with the matches still pending)."""
    settings = Settings.from_env()
    sent = send_tournament(
        shared_sessions(settings.database_url), int(tournament_id), CeleryDispatcher(settings.broker_url)
    )
    return f"tournament {int(tournament_id)}: {sent} matches sent"


@app.task(name=COMPUTE_PAR_TASK, **DURABLE)
def compute_par_task(self, match_id: int) -> str:
    """Celery task: :func:`fill_pars` (``args=[match_id]``), retried while the database is
    unreachable; a re-delivered task computes again and stores nothing twice."""
    return fill_pars(int(match_id))


@app.task(name=LADDER_PROBE_TASK, **DURABLE)
def ladder_probe_task(self, entry_ids: list[int]) -> str:
    """Celery task (queue ``arena.checks``): :func:`run_probes` of the ladder entries
    (``args=[[entry ids]]``), retried while the database is unreachable."""
    return run_probes([int(e) for e in entry_ids])


@app.task(name=AWAIT_ENTRANTS_TASK, **{**DURABLE, "autoretry_for": (*DATABASE_DOWN, QueueError)})
def await_entrants_task(self, tournament_id: int) -> str:
    """Celery task: :func:`await_entrants` (``args=[tournament_id]``), retried while the
    database or the broker is unreachable (the reaper also sends a poll that was lost)."""
    settings = Settings.from_env()
    roll = roll_call.caller(roll_call.redis_of(settings.broker_url), allow_private=settings.allow_private_bot_urls)
    return await_entrants(
        shared_sessions(settings.database_url),
        int(tournament_id),
        CeleryDispatcher(settings.broker_url),
        roll,
        settings,
    )


@app.task(name=SEND_WEBHOOK_TASK, **DURABLE)
def send_webhook_task(self, account_id: int, message: dict, attempt: int = 1) -> str:
    """Celery task: one delivery of ``message`` to the account's webhook (:func:`notices.deliver`);
    a failure worth another attempt sends the task again (``attempt`` + 1) after
    :func:`webhooks.backoff_s`, until :data:`webhooks.ATTEMPTS`. Its thread is the check
    process's: never a match's."""
    settings = Settings.from_env()
    sessions = shared_sessions(settings.database_url)
    got = notices.deliver(
        sessions, int(account_id), message, allow_private=settings.allow_private_bot_urls, attempt=int(attempt)
    )
    what = f"webhook {message.get('event')} {message.get('id')} to account {int(account_id)} (attempt {attempt})"
    if got is None:
        return f"{what}: no webhook any more"
    if got.ok or not got.retry:
        return f"{what}: {'delivered' if got.ok else 'failed: ' + got.error}"
    if int(attempt) >= webhooks.ATTEMPTS:
        return f"{what}: failed, no attempt left: {got.error}"
    wait = webhooks.backoff_s(int(attempt))
    CeleryDispatcher(settings.broker_url).send_webhook(
        int(account_id), message, attempt=int(attempt) + 1, countdown_s=wait
    )
    return f"{what}: failed ({got.error}); again in {wait:g} s"


@app.task(name=REFILL_LADDER_TASK)
def refill_ladder_task(match_id: int) -> str:
    """Celery task: a done ladder set's entries get their next sets at once
    (:func:`arena.matchmaking.refill`, once per set), sent to :data:`arena.queue.LADDER_QUEUE`;
    nothing for another match. A database error only leaves them to the next tick."""
    settings = Settings.from_env()
    try:
        report = ladders.refill(
            shared_sessions(settings.database_url),
            int(match_id),
            CeleryDispatcher(settings.broker_url, queue=LADDER_QUEUE).send_matches,
            probe_s=settings.ladder_probe_s,
            online=ladders.redis_online(worker_redis(settings.broker_url)),
        )
    except DBAPIError as exc:
        log.warning("match %s: its ladder's next sets left to the tick (%s)", match_id, type(exc).__name__)
        return f"match {int(match_id)}: its ladder's next sets left to the tick"
    formed = len(report.formed) if report is not None else 0
    return f"match {int(match_id)}: {formed} sets formed"


@app.task(name=REAP_TASK)
def reap_task() -> str:
    """Celery task: one reaper run (:func:`arena.reaper.reap`); returns its report line."""
    return str(reap(Settings.from_env()))
