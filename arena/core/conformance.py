"""Checking a bot before it may enter a tournament (``POST /api/v1/bots/{id}/check``).

:func:`check_bot` runs, in order:

1. URL validation (:func:`arena.core.url_policy.check_bot_url`, SSRF rules, re-resolved now).
2. The health check (:func:`health_check`): ``GET <url>`` without following redirects, with
   a short timeout; the bot must answer 200 with a JSON object holding a string ``name`` and
   a ``protocol`` (int) or ``protocols`` (list of ints).
3. For each rule set the bot plays, a short conformance game (:func:`conformance_game`): a
   real match through :func:`arena.core.runner.match.run_match`, the bot over HTTP (signed requests, the
   same player as in tournaments) against built-in sample bots, under short time rules
   (:data:`CONFORMANCE_TIME_RULES_S`). The bot passes if it commits no fault (FAULT-1).

The outcome is a JSON-ready dict ``{"ok": bool, "url": {...}, "health": {...},
"conformance": {...}}``; the API stores it in ``bots.last_check`` and sets the bot's status to
``ready`` or ``failed``.
"""

from __future__ import annotations

import time
from typing import Any

import httpx

from arena.core.bot_transport import PinnedTransport
from arena.core.runner.match import run_match
from arena.core.runner.players import HttpPlayer
from arena.core.safejson import JsonLimitError, loads_limited
from arena.core.url_policy import BotUrlError, check_bot_url
from bots_sdk.samples import SAMPLE_BOTS
from engine.timebank import TimeRules

#: Seconds allowed for the health check request (connect + read).
HEALTH_TIMEOUT_S = 5.0
#: Largest health response read, bytes.
MAX_HEALTH_BYTES = 64 * 1024


def _truncate(text: str, limit: int = 200) -> str:
    """``text`` cut to ``limit`` characters, NUL shown as ``\\x00`` (the outcome is stored as
    JSON in PostgreSQL, which refuses NUL in text)."""
    text = text.replace("\x00", "\\x00")
    return text if len(text) <= limit else text[:limit] + "..."


def health_check(url: str, *, timeout_s: float = HEALTH_TIMEOUT_S, client: httpx.Client | None = None,
                 allow_private: bool = False) -> dict[str, Any]:
    """``GET url`` once (no redirects) and judge the answer.

    The connection goes through :class:`arena.core.bot_transport.PinnedTransport` (the host
    resolved once, every address checked with ``allow_private``, the socket connected to a
    checked address); a refused host is reported in ``error``.

    Returns ``{"ok": bool, "status": int | None, "elapsed_ms": float, "name": str | None,
    "protocols": list[int], "error": str | None}`` (elapsed in milliseconds). Never raises for
    network or protocol problems: they are reported in ``error``.
    """
    own = client is None
    client = client or httpx.Client(follow_redirects=False, timeout=timeout_s, trust_env=False,
                                    transport=PinnedTransport(allow_private=allow_private))
    out: dict[str, Any] = {"ok": False, "status": None, "elapsed_ms": None, "name": None,
                           "protocols": [], "error": None}
    start = time.monotonic()
    try:
        with client.stream("GET", url, follow_redirects=False, headers={"Accept": "application/json"}) as resp:
            out["status"] = resp.status_code
            body = b""
            for chunk in resp.iter_bytes():
                body += chunk
                if len(body) > MAX_HEALTH_BYTES:
                    raise ValueError(f"response larger than {MAX_HEALTH_BYTES} bytes")
    except (httpx.HTTPError, ValueError) as exc:
        out["elapsed_ms"] = round((time.monotonic() - start) * 1000, 3)
        out["error"] = _truncate(f"{type(exc).__name__}: {exc}")
        return out
    finally:
        if own:
            client.close()
    out["elapsed_ms"] = round((time.monotonic() - start) * 1000, 3)
    if resp.is_redirect:
        out["error"] = f"redirect ({resp.status_code}) refused: redirects are never followed"
        return out
    if resp.status_code != 200:
        out["error"] = f"HTTP status {resp.status_code}, expected 200"
        return out
    try:
        data = loads_limited(body)
    except JsonLimitError as exc:
        out["error"] = _truncate(f"response is not JSON within the limits: {exc}")
        return out
    if not isinstance(data, dict):
        out["error"] = "response JSON is not an object"
        return out
    name = data.get("name")
    if not isinstance(name, str) or not name:
        out["error"] = "response has no string 'name'"
        return out
    out["name"] = _truncate(name, 64)
    protocols = data.get("protocols", [data["protocol"]] if "protocol" in data else None)
    if (not isinstance(protocols, list) or not protocols
            or not all(isinstance(p, int) and not isinstance(p, bool) for p in protocols)):
        out["error"] = "response has no integer 'protocol' or list 'protocols'"
        return out
    out["protocols"] = protocols
    out["ok"] = True
    return out


#: Time rules of the conformance game, seconds (TIME-1): a 10 s bank, +1 s, 10 s cap.
CONFORMANCE_TIME_RULES_S = {"initial": 10.0, "increment": 1.0, "cap": 10.0}
#: The sample bot seated against the checked bot.
CONFORMANCE_OPPONENT = "greedy"
#: Short games: 2 Million Doubt games (a duplicate pair), one Trump Millionaire deal
#: (target 1 point), one JDF game (1 set of 1 game).
CONFORMANCE_SETUP = {
    "million_doubt": ({}, 2),
    "trump_millionaire": ({"target_score": 1}, 1),
    "jdf": ({"sets": 1, "games_per_set": 1}, 1),
}
#: Faults listed in the outcome at most.
MAX_LISTED_FAULTS = 5


def conformance_game(url: str, ruleset: str, *, secret: str | None = None, seed: int | None = None,
                     allow_private: bool = False) -> dict[str, Any]:
    """Play a short real match of ``ruleset``: the bot at ``url`` (seat 0) against sample bots.

    Setup: :data:`CONFORMANCE_SETUP` (short games), :data:`CONFORMANCE_TIME_RULES_S`, the bot
    signed with ``secret``, ``max_faults`` 1 (the first fault ends the check: FAULT-3).
    Returns ``{"ok": bool, "ruleset", "faults": [{"kind", "detail", "received",
    "elapsed_ms"}...] (at most 5), "decisions": int, "elapsed_ms": int (the bot's total),
    "wall_s": float, "error": str | None}``; ``ok`` is True when the bot committed no fault.
    Never raises for the bot's behaviour.
    """
    import secrets as _secrets


    out: dict[str, Any] = {"ok": False, "ruleset": ruleset, "faults": [], "decisions": 0,
                           "elapsed_ms": 0, "wall_s": None, "error": None}
    if ruleset not in CONFORMANCE_SETUP:
        out["error"] = f"unknown rule set {ruleset!r}"
        return out
    options, games = CONFORMANCE_SETUP[ruleset]
    seed = _secrets.randbits(62) if seed is None else seed
    import engine

    player = HttpPlayer(url, secret, name="candidate", allow_private=allow_private)
    others = [SAMPLE_BOTS[CONFORMANCE_OPPONENT](seed=seed + i) for i in range(1, engine.SEATS[ruleset])]
    start = time.monotonic()
    try:
        log = run_match([player, *others], ruleset, options, seed=seed, games=games,
                        time_rules=TimeRules.from_seconds(**CONFORMANCE_TIME_RULES_S), max_faults=1,
                        match_id=f"conformance-{seed}")
    except Exception as exc:  # a runner bug must not pass or crash the check
        out["error"] = _truncate(f"{type(exc).__name__}: {exc}")
        return out
    finally:
        player.close()
    out["wall_s"] = round(time.monotonic() - start, 3)
    faults = [f for f in log["faults"] if f["player"] == 0]
    out["faults"] = [{"kind": f["kind"], "detail": f["detail"], "received": _truncate(f["received"] or ""),
                      "elapsed_ms": f["elapsed_ms"]} for f in faults[:MAX_LISTED_FAULTS]]
    mine = [ex for gm in log["games"] for ex in gm["exchanges"] if ex["player"] == 0]
    out["decisions"] = len(mine)
    out["elapsed_ms"] = sum(ex["elapsed_ms"] for ex in mine)
    out["ok"] = not faults and bool(mine)
    if faults:
        out["error"] = f"{faults[0]['kind']}: {_truncate(faults[0]['detail'] or '')}"
    elif not mine:
        out["error"] = "the bot was never asked a decision"
    return out


def check_bot(url: str, rulesets: list[str], *, allow_private: bool, secret: str | None = None,
              timeout_s: float = HEALTH_TIMEOUT_S) -> dict[str, Any]:
    """Run the URL check, the health check and the conformance game(s); see module docstring."""
    result: dict[str, Any] = {"ok": False, "url": {"ok": True, "error": None}, "health": None,
                              "conformance": []}
    try:
        check_bot_url(url, allow_private=allow_private)
    except BotUrlError as exc:
        result["url"] = {"ok": False, "error": str(exc)}
        return result
    result["health"] = health_check(url, timeout_s=timeout_s, allow_private=allow_private)
    if not result["health"]["ok"]:
        return result
    result["conformance"] = [conformance_game(url, rs, secret=secret, allow_private=allow_private)
                             for rs in rulesets]
    result["ok"] = all(c["ok"] for c in result["conformance"])
    return result
