"""Celery application for Daifugo Arena.

Start a worker with ``arena worker`` or::

    celery -A worker.celery_app worker -Q arena --without-mingle --without-gossip

Configuration comes from the environment (see ``arena.config``):

- ``ARENA_BROKER_URL``: broker and result backend URL (default ``redis://127.0.0.1:6379/0``).
- ``ARENA_CELERY_EAGER``: run tasks in-process (quick local runs only; default false).
- ``ARENA_VISIBILITY_TIMEOUT_S``: broker visibility timeout (default: computed, below).
- ``ARENA_BOT_MAX_CONCURRENCY``: per-bot request cap (``worker.semaphore``), default 4.

Reliability. Tasks are acknowledged after they finish (``task_acks_late``), a task whose
worker process died is rejected back to the queue (``task_reject_on_worker_lost``) and each
worker process reserves one task at a time (``worker_prefetch_multiplier=1``). With the Redis
transport a delivered, unacknowledged message is kept aside; if its worker dies without
giving it back (SIGKILL, power loss), the message is delivered again once it is older than the
**visibility timeout**. The match task is idempotent (``worker.tasks.play_and_store``): a
re-delivered match is played again from its seed and its result is stored once.

The visibility timeout must be longer than the longest possible match, or a match still being
played would be delivered a second time (harmless for the results, wasteful). Formula
(:func:`longest_match_seconds`), in seconds, for a match of ``U`` units (Million Doubt:
``games`` games; Trump Millionaire: deals; JDF: ``sets x games_per_set`` games), ``S`` seats,
at most ``D`` decisions per unit, time rules ``initial`` / ``increment`` / ``cap`` (TIME-1)::

    per_unit = min(S * initial + D * increment,   # a seat spends at most its initial bank plus
                                                  # one increment per action in a unit
                   D * cap)                       # and no request outlasts a full bank
    longest  = U * (per_unit + D * REQUEST_OVERHEAD_S) + S * NOTICES_S_PER_SEAT
    visibility_timeout = ceil(SAFETY * longest + SLACK_S)

``D`` (:data:`DECISIONS_PER_UNIT`) and the Trump Millionaire deal count (:data:`TM_DEALS_PER_100`
deals per 100 points of ``target_score``) are about twice the largest values seen in random
self-play (300 games per rule set: 37 decisions per MD game, 95 per TM deal, 113 per JDF game,
132 deals per TM game); a TM game has no hard bound on its deals, so this is an estimate, not
a proof. ``REQUEST_OVERHEAD_S`` covers the time outside the banks (engine, signing, transport);
waits for a bot's concurrency slot are not bounded by it.

Without ``ARENA_VISIBILITY_TIMEOUT_S`` the worker uses :func:`default_visibility_timeout`, the
formula for the default tournament of each rule set (60 s / +10 s / 60 s, Million Doubt 2
games, default options), largest over the rule sets: 841,525 s, about 234 hours, set by
Trump Millionaire (MD alone: 2,319 s; JDF: 41,200 s). A crashed worker's match
is then replayed only after that long; deployments with short time rules set
``ARENA_VISIBILITY_TIMEOUT_S`` from the formula (``python -c "from worker.celery_app import
visibility_timeout_for; ..."``). The worker logs a warning for a match whose bound exceeds the
configured timeout (``worker.tasks``).
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from celery import Celery

import engine
from arena.config import Settings
from engine.timebank import TimeRules

QUEUE = "arena"

#: Upper estimate of decisions in one unit (MD game, TM deal, JDF game), see module docstring.
DECISIONS_PER_UNIT = {engine.MILLION_DOUBT: 80, engine.TRUMP_MILLIONAIRE: 200, engine.JDF: 250}
#: Upper estimate of Trump Millionaire deals per 100 points of ``target_score``.
TM_DEALS_PER_100 = 300
#: Seconds per decision spent outside the banks (engine, signing, transport).
REQUEST_OVERHEAD_S = 0.02
#: Seconds per seat for its match start and end notices (2 notices x 2 s, worker.players).
NOTICES_S_PER_SEAT = 4.0
SAFETY = 1.25
SLACK_S = 5.0


def match_units(ruleset: str, games: int, options: Mapping[str, Any] | None = None) -> int:
    """Units of a match: MD games, TM deals (estimate), JDF games (sets x games per set)."""
    opts = engine.make_options(ruleset, options)
    if isinstance(opts, engine.TrumpMillionaireOptions):
        return max(1, math.ceil(TM_DEALS_PER_100 * opts.target_score / 100))
    if isinstance(opts, engine.JdfOptions):
        return opts.sets * opts.games_per_set
    return max(1, games)  # Million Doubt: the games of the match (engine.RULESETS[...].games_per_match_option)


def longest_match_seconds(ruleset: str, time_rules: TimeRules, games: int = 2,
                          options: Mapping[str, Any] | None = None) -> float:
    """Upper bound of a match's wall time in seconds (module docstring formula)."""
    seats = engine.SEATS[ruleset]
    d = DECISIONS_PER_UNIT[ruleset]
    initial, inc, cap = time_rules.initial_ms / 1000, time_rules.increment_ms / 1000, time_rules.cap_ms / 1000
    per_unit = min(seats * initial + d * inc, d * cap)
    return match_units(ruleset, games, options) * (per_unit + d * REQUEST_OVERHEAD_S) + seats * NOTICES_S_PER_SEAT


def visibility_timeout_for(longest_s: float) -> int:
    """``ceil(SAFETY * longest_s + SLACK_S)`` seconds."""
    return math.ceil(SAFETY * longest_s + SLACK_S)


def default_visibility_timeout() -> int:
    """The formula for each rule set's default tournament (60/10/60 s, MD 2 games), largest."""
    return max(visibility_timeout_for(longest_match_seconds(rs, TimeRules(), 2)) for rs in engine.RULESETS)


def visibility_timeout(settings: Settings) -> int:
    """``ARENA_VISIBILITY_TIMEOUT_S`` if set, else :func:`default_visibility_timeout`, seconds."""
    return settings.visibility_timeout_s or default_visibility_timeout()


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
        },
        result_backend_transport_options={"visibility_timeout": vt},
        result_expires=24 * 3600,
        timezone="UTC",
        enable_utc=True,
    )
    return app


app = make_app()


@app.task(name="arena.ping")
def ping() -> str:
    """Health check: returns ``"pong"``. Used by tests to know a worker is consuming."""
    return "pong"
