"""The Celery tasks of the ``arena`` queue: thin wrappers around the shared core.

``arena.run_match(match_id)`` runs :func:`arena.delivery.play_and_store`;
``arena.check_bot(check_id)`` (queue ``arena.checks``) runs :func:`arena.conformance.run_check`;
``arena.enqueue_tournament(tournament_id)`` runs
:func:`arena.usecases.tournaments.send_tournament` (store a started tournament's schedule,
send its matches through :class:`arena.queue.CeleryDispatcher`).
``arena.compute_par(match_id)`` (queue ``arena.par``) runs :func:`arena.usecases.pars.fill_pars`.
``arena.reap()`` runs :func:`arena.reaper.reap` (normally inside ``arena beat``, see
:mod:`worker.beat`; a worker runs it only when it is sent to a queue explicitly).
"""

from __future__ import annotations

from sqlalchemy.exc import InterfaceError, OperationalError

from arena.config import Settings
from arena.conformance import run_check
from arena.db.session import shared_sessions
from arena.delivery import MatchDeferred, play_and_store
from arena.dispatch import QueueError
from arena.probes import run_probes
from arena.queue import LADDER_PROBE_TASK, CeleryDispatcher
from arena.reaper import reap
from arena.runner.claims import defer_countdown_s
from arena.usecases.pars import fill_pars
from arena.usecases.tournaments import send_tournament
from worker.celery_app import REAP_TASK, app

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


@app.task(name="arena.run_match", **DURABLE)
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


@app.task(name="arena.check_bot", **DURABLE)
def check_bot_task(self, check_id: int) -> str:
    """Celery task: :func:`run_check` (``args=[check_id]``), retried while the database is
    unreachable; a re-delivered check runs again (its outcome is stored once)."""
    return run_check(int(check_id))


@app.task(name="arena.enqueue_tournament", **{**DURABLE, "autoretry_for": (*DATABASE_DOWN, QueueError)})
def enqueue_tournament_task(self, tournament_id: int) -> str:
    """Celery task: :func:`send_tournament` (``args=[tournament_id]``), retried while the
    database or the broker is unreachable (it resumes with the matches still pending)."""
    settings = Settings.from_env()
    sent = send_tournament(
        shared_sessions(settings.database_url), int(tournament_id), CeleryDispatcher(settings.broker_url)
    )
    return f"tournament {int(tournament_id)}: {sent} matches sent"


@app.task(name="arena.compute_par", **DURABLE)
def compute_par_task(self, match_id: int) -> str:
    """Celery task: :func:`fill_pars` (``args=[match_id]``), retried while the database is
    unreachable; a re-delivered task computes again and stores nothing twice."""
    return fill_pars(int(match_id))


@app.task(name=LADDER_PROBE_TASK, **DURABLE)
def ladder_probe_task(self, entry_ids: list[int]) -> str:
    """Celery task (queue ``arena.checks``): :func:`run_probes` of the ladder entries
    (``args=[[entry ids]]``), retried while the database is unreachable."""
    return run_probes([int(e) for e in entry_ids])


@app.task(name=REAP_TASK)
def reap_task() -> str:
    """Celery task: one reaper run (:func:`arena.reaper.reap`); returns its report line."""
    return str(reap(Settings.from_env()))
