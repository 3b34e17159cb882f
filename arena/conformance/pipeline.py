"""The check pipeline: one sequence of stages over a :class:`CheckTarget`, whatever the bot's
transport (docs/operations.md, "Conformance game (bot check)"):

1. ``url`` (a target with a URL): :func:`arena.url_policy.check_bot_url`;
2. ``health``: the bot answers its health request (HTTP: ``GET <url>``; a bot that dials out:
   a ``health`` frame over its connection);
3. ``signature``: a badly signed request (HTTP) or a wrong proof (a bot that dials out) must be
   refused, else a warning;
4. ``conformance``: :func:`arena.conformance.games.conformance_game` for each rule set over the
   target's :class:`~arena.runner.players.Player`, until one fails; then the target's
   ``finish`` (a bot that dials out: its keep-alive pings);
5. ``done``.

A failing stage ends the check. :class:`HttpTarget` is the HTTP transport (:func:`check_bot`);
``arena.conformance.dialout.ConnectedTarget`` the one of a bot that dials out.
"""

from __future__ import annotations

import secrets as _secrets
import time
from collections.abc import Callable
from typing import Any, Protocol

import engine
from arena.conformance.games import (
    CONFORMANCE_TIME_RULES_S,
    DECISION_KINDS,
    ProgressFn,
    conformance_game,
    kinds_table,
    match_like_id,
)
from arena.health import HEALTH_TIMEOUT_S, health_check
from arena.runner.players import HttpPlayer, Player
from arena.url_policy import BotUrlError, check_bot_url
from bots_sdk import protocol
from engine.timebank import TimeRules


class CheckTarget(Protocol):
    """What the pipeline asks of one transport.

    ``first_stage``: the progress's stage before anything runs (``url`` or ``health``).
    ``url_error()``: None when the bot's URL is acceptable (or it has none), else why not.
    ``health()``: the health check's outcome (:func:`arena.health.health_check`'s shape).
    ``signature()``: the signature probe's outcome (``ok``, ``status``, ``warning`` and, when
    not ok, ``warning_code``). ``player()``: the bot's player for one rule set's games.
    ``finish(result, deadline)``: after the games, before ``done`` (more warnings).
    """

    first_stage: str

    def url_error(self) -> str | None: ...

    def health(self) -> dict[str, Any]: ...

    def signature(self) -> dict[str, Any]: ...

    def player(self) -> Player: ...

    def finish(self, result: dict[str, Any], deadline: float | None) -> None: ...


def warn(result: dict[str, Any], text: str, code: dict[str, Any]) -> None:
    """Add a warning (its English ``text`` and its ``{"code", "params"}``) to a check's outcome."""
    result["warnings"].append(text)
    result["warning_codes"].append(code)


def run_pipeline(
    target: CheckTarget, rulesets: list[str], *, on_progress: ProgressFn | None = None, limit_s: float | None = None
) -> dict[str, Any]:
    """Run the stages of the module docstring for ``target`` within ``limit_s`` seconds in all
    (None: no limit; past it the conformance games stop after the bot's current decision and
    the check fails). ``on_progress(progress)`` gets ``{"stage": "url" | "health" |
    "signature" | "conformance" | "done", "rulesets": {ruleset: {kind: {"asked", "faults"}}}}``.
    Returns the outcome (``arena.conformance``'s shape). Never raises for the bot's behaviour."""
    result, progress, report = _new_check(rulesets, target.first_stage, on_progress)
    deadline = None if limit_s is None else time.monotonic() + float(limit_s)
    if target.first_stage == "url":
        report("url")
        error = target.url_error()
        if error is not None:
            result["url"] = {"ok": False, "error": error}
            report("done")
            return result
    report("health")
    result["health"] = target.health()
    if not result["health"]["ok"]:
        report("done")
        return result
    report("signature")
    result["signature"] = target.signature()
    if result["signature"]["warning"]:
        warn(result, result["signature"]["warning"], result["signature"]["warning_code"])
    report("conformance")
    for rs in rulesets:

        def kinds_done(kinds: dict[str, Any], rs: str = rs) -> None:
            progress["rulesets"][rs] = kinds
            report("conformance")

        game = conformance_game(
            "", rs, on_progress=kinds_done, deadline=deadline, limit_s=limit_s, player=target.player()
        )
        result["conformance"].append(game)
        result["warnings"] += game["warnings"]
        result["warning_codes"] += game["warning_codes"]
        progress["rulesets"][rs] = game["kinds"]
        if not game["ok"]:
            break  # the first failing rule set decides
    result["ok"] = len(result["conformance"]) == len(rulesets) and all(c["ok"] for c in result["conformance"])
    target.finish(result, deadline)
    report("done")
    return result


def _new_check(
    rulesets: list[str], stage: str, on_progress: ProgressFn | None
) -> tuple[dict[str, Any], dict[str, Any], Callable[[str], None]]:
    """A check's empty outcome (``arena.conformance``'s shape), its progress at ``stage``, and
    the ``report(stage)`` that records a stage and calls ``on_progress``."""
    result: dict[str, Any] = {
        "ok": False,
        "url": {"ok": True, "error": None},
        "health": None,
        "signature": None,
        "conformance": [],
        "warnings": [],
        "warning_codes": [],
    }
    progress: dict[str, Any] = {
        "stage": stage,
        "rulesets": {rs: kinds_table(rs) for rs in rulesets if rs in DECISION_KINDS},
    }

    def report(stage: str) -> None:
        progress["stage"] = stage
        if on_progress is not None:
            on_progress(progress)

    return result, progress, report


#: Seconds allowed for the badly signed request (connect + answer).
SIGNATURE_PROBE_TIMEOUT_S = 5.0


def signature_probe(
    url: str, *, allow_private: bool = False, timeout_s: float = SIGNATURE_PROBE_TIMEOUT_S
) -> dict[str, Any]:
    """Send one real decision request signed with a wrong secret (step 3).

    Returns ``{"ok": bool, "status": int | None, "warning": str | None}``: ``ok`` when the
    bot answered 401 (protocol: a bad signature is refused); otherwise ``warning`` says what
    it did, and ``warning_code`` is ``{"code": "signature_not_refused", "params": {"status"}}``
    or ``{"code": "signature_no_answer", "params": {"fault"}}`` (for translation). Never raises.
    """
    g = engine.new_game("million_doubt", None, _secrets.randbits(62))
    d = g.decision()
    assert d is not None  # a new game always asks a first decision
    rules = TimeRules.from_seconds(**CONFORMANCE_TIME_RULES_S)
    body = protocol.dumps(
        protocol.build_request(
            g,
            d.seat,
            match_id=match_like_id(),
            game=0,
            time_rules=rules,
            remaining_ms=rules.initial_ms,
        )
    )
    player = HttpPlayer(url, "wrong-" + _secrets.token_hex(32), name="signature-probe", allow_private=allow_private)
    try:
        outcome = player.decide(body, timeout_s)
    finally:
        player.close()
    if outcome.status == 401:
        return {"ok": True, "status": 401, "warning": None}
    what = f"HTTP {outcome.status}" if outcome.status is not None else f"no answer ({outcome.fault})"
    code = (
        {"code": "signature_not_refused", "params": {"status": outcome.status}}
        if outcome.status is not None
        else {"code": "signature_no_answer", "params": {"fault": outcome.fault}}
    )
    return {
        "ok": False,
        "status": outcome.status,
        "warning": f"the bot answered a badly signed request with {what}, not 401: it does not check "
        "X-Arena-Signature, so anyone who knows its URL can play its moves "
        "(docs/protocol.md, signatures)",
        "warning_code": code,
    }


class HttpTarget:
    """The HTTP transport of the pipeline: the bot at ``url`` (docs/protocol.md), its requests
    signed with ``secret`` (and ``previous_secret``), named ``name`` as a tournament names it."""

    first_stage = "url"

    def __init__(
        self,
        url: str,
        *,
        allow_private: bool,
        secret: str | None = None,
        previous_secret: str | None = None,
        timeout_s: float = HEALTH_TIMEOUT_S,
        name: str = "",
    ) -> None:
        self.url, self.allow_private, self.timeout_s = url, allow_private, timeout_s
        self.secret, self.previous_secret, self.name = secret, previous_secret, name

    def url_error(self) -> str | None:
        try:
            check_bot_url(self.url, allow_private=self.allow_private)
        except BotUrlError as exc:
            return str(exc)
        return None

    def health(self) -> dict[str, Any]:
        return health_check(self.url, timeout_s=self.timeout_s, allow_private=self.allow_private)

    def signature(self) -> dict[str, Any]:
        return signature_probe(self.url, allow_private=self.allow_private)

    def player(self) -> Player:
        return HttpPlayer(
            self.url,
            self.secret,
            name=self.name or "bot",
            allow_private=self.allow_private,
            previous_secret=self.previous_secret,
        )

    def finish(self, result: dict[str, Any], deadline: float | None) -> None:
        pass


def check_bot(
    url: str,
    rulesets: list[str],
    *,
    allow_private: bool,
    secret: str | None = None,
    previous_secret: str | None = None,
    timeout_s: float = HEALTH_TIMEOUT_S,
    on_progress: ProgressFn | None = None,
    limit_s: float | None = None,
    name: str = "",
) -> dict[str, Any]:
    """Check the HTTP bot at ``url``: the URL check, the health check, the signature probe and
    the conformance games (:func:`run_pipeline` over an :class:`HttpTarget`), within
    ``limit_s`` seconds in all. Never raises for the bot's behaviour."""
    target = HttpTarget(
        url, allow_private=allow_private, secret=secret, previous_secret=previous_secret, timeout_s=timeout_s, name=name
    )
    return run_pipeline(target, rulesets, on_progress=on_progress, limit_s=limit_s)
