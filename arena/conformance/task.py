"""The task of a bot check (``arena.check_bot``): :func:`run_check` claims the check, runs the
pipeline of the bot's transport (:mod:`arena.conformance.pipeline`,
:mod:`arena.conformance.dialout`) and stores the outcome."""

from __future__ import annotations

import logging
import time
from typing import Any

import redis

from arena import lifecycle, notices
from arena.config import Settings
from arena.conformance.dialout import CONNECT_WAIT_S, check_connected_bot
from arena.conformance.pipeline import check_bot
from arena.db.session import shared_sessions
from arena.runner.players import ArenaFailure

log = logging.getLogger("arena.checks")

#: Least seconds between two progress writes of a running check (its heartbeat).
PROGRESS_EVERY_S = 1.0


def run_check(check_id: int, settings: Settings | None = None) -> str:
    """What the task ``arena.check_bot`` does: claim the check
    (:func:`arena.lifecycle.claim_check`), run :func:`check_bot` on the URL and rule sets
    recorded with it, writing its progress at most every :data:`PROGRESS_EVERY_S` seconds,
    and store the outcome (:func:`arena.lifecycle.finish_check`). Returns a status line.

    An exception of the check itself (not the bot's behaviour) makes the check ``error`` and
    gives the bot back its status before the check; so does the arena's own failure
    (:class:`~arena.runner.players.ArenaFailure`: a gateway or the relay), said as such.

    Raises:
        sqlalchemy.exc.OperationalError: the database is unreachable (the task retries).
    """
    settings = settings or Settings.from_env()
    factory = shared_sessions(settings.database_url)
    with factory() as session:
        plan = lifecycle.claim_check(session, int(check_id))
    if plan is None:
        return f"skipped check {check_id}: not queued or running, or it could not run (its error says why)"
    last = [0.0]

    def beat(progress: dict[str, Any], force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - last[0] < PROGRESS_EVERY_S and progress.get("stage") != "done":
            return
        last[0] = now
        with factory() as s:
            lifecycle.record_check_progress(s, plan.check_id, progress)

    try:
        if plan.transport == "connect":
            outcome = check_connected_bot(
                plan.bot_id,
                list(plan.rulesets),
                client=redis.Redis.from_url(settings.broker_url, socket_timeout=5, socket_connect_timeout=5),
                gateway_url=settings.gateway_url or None,
                reconnect_s=min(CONNECT_WAIT_S, float(settings.gateway_reconnect_s)),
                on_progress=beat,
                limit_s=float(settings.check_time_limit_s),
                name=plan.name,
            )
        else:
            outcome = check_bot(
                plan.url or "",
                list(plan.rulesets),
                allow_private=settings.allow_private_bot_urls,
                secret=plan.secret,
                previous_secret=plan.previous_secret,
                on_progress=beat,
                limit_s=float(settings.check_time_limit_s),
                name=plan.name,
            )
    except Exception as exc:
        if isinstance(exc, ArenaFailure):  # a gateway or the relay failed: not the bot (FAULT-1)
            log.warning("check %s: the arena failed: %s", plan.check_id, exc)
            why = f"the arena failed, not the bot (check it again): {exc}"
        else:
            log.exception("check %s broke", plan.check_id)
            why = f"internal error: {type(exc).__name__}: {exc}"
        with factory() as session:
            if lifecycle.error_check(session, plan.check_id, why):
                notices.check_finished(session, notices.sender_for(settings), plan.check_id)
        return f"check {plan.check_id}: internal error"
    with factory() as session:
        status = lifecycle.finish_check(session, plan.check_id, outcome)
        if status is not None:  # the owner's webhook hears of it (arena.notices)
            notices.check_finished(session, notices.sender_for(settings), plan.check_id)
    line = f"check {plan.check_id} of bot {plan.bot_id}: {'passed' if outcome['ok'] else 'failed'} (bot {status})"
    log.info(line)
    return line
