"""Checking a bot before it may enter a tournament (``POST /api/v1/bots/{id}/check``).

The check runs on a worker (Celery task ``arena.check_bot``, :func:`run_check`, in
:mod:`~arena.conformance.task`; in-process in eager mode); the API answers 202 at once and the
bot is ``checking`` until it is done. One pipeline of stages (:mod:`~arena.conformance.pipeline`)
runs over the bot's transport: :func:`check_bot` for an HTTP bot (URL validation,
:func:`arena.url_policy.check_bot_url`; the health check, :func:`health_check`: ``GET <url>``
must answer 200 with a JSON object holding a string ``name`` and a ``protocol`` int or
``protocols`` list; one badly signed request, :func:`signature_probe`: must be answered 401,
else a warning), :func:`check_connected_bot` for a bot that dials out
(:mod:`~arena.conformance.dialout`); then, for each rule set, the conformance games
(:mod:`~arena.conformance.games`, :func:`conformance_game`): a random short match and the fixed
positions of the rule set's descriptor (``arena.rulesets``), which ask every decision kind
whatever the bot plays. Step by step: docs/operations.md, "Conformance game (bot check)".

The outcome is a JSON-ready dict ``{"ok": bool, "url": {...}, "health": {...},
"signature": {...}, "conformance": [...], "warnings": [str], "warning_codes": [{"code",
"params"}]}`` (``warning_codes[i]`` is ``warnings[i]`` as a message id and its parameters,
which the pages translate); :func:`run_check` stores it
(``bot_checks.result`` and ``bots.last_check``) and the bot becomes ``ready`` or ``failed``
(:func:`arena.lifecycle.finish_check`).
"""

from __future__ import annotations

from arena.conformance.dialout import (
    AUTH_PROBE_TIMEOUT_S,
    CONNECT_WAIT_S,
    DIAL_MESSAGES,
    ConnectedTarget,
    auth_probe,
    check_connected_bot,
    connected_health,
    dial_step,
    ping_warning,
)
from arena.conformance.games import (
    CHOICE_KINDS,
    CONFORMANCE_OPPONENT,
    CONFORMANCE_TIME_RULES_S,
    DECISION_KINDS,
    MAX_LISTED_FAULTS,
    PROBES,
    REQUIRED_KINDS,
    CheckTimeUp,
    FaceDownLiar,
    conformance_game,
    kind_not_asked,
    match_like_id,
)
from arena.conformance.pipeline import (
    SIGNATURE_PROBE_TIMEOUT_S,
    CheckTarget,
    HttpTarget,
    check_bot,
    run_pipeline,
    signature_probe,
)
from arena.conformance.task import PROGRESS_EVERY_S, run_check
from arena.health import health_check

__all__ = [
    "AUTH_PROBE_TIMEOUT_S",
    "CHOICE_KINDS",
    "CONFORMANCE_OPPONENT",
    "CONFORMANCE_TIME_RULES_S",
    "CONNECT_WAIT_S",
    "DECISION_KINDS",
    "DIAL_MESSAGES",
    "MAX_LISTED_FAULTS",
    "PROBES",
    "PROGRESS_EVERY_S",
    "REQUIRED_KINDS",
    "SIGNATURE_PROBE_TIMEOUT_S",
    "CheckTarget",
    "CheckTimeUp",
    "ConnectedTarget",
    "FaceDownLiar",
    "HttpTarget",
    "auth_probe",
    "check_bot",
    "check_connected_bot",
    "conformance_game",
    "connected_health",
    "dial_step",
    "health_check",
    "kind_not_asked",
    "match_like_id",
    "ping_warning",
    "run_check",
    "run_pipeline",
    "signature_probe",
]
