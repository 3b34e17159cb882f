"""Checking a bot before it may enter a tournament (``POST /api/v1/bots/{id}/check``).

:func:`check_bot` runs, in order:

1. URL validation (:func:`arena.bot_urls.check_bot_url`, SSRF rules, re-resolved now).
2. The health check (:func:`health_check`): ``GET <url>`` without following redirects, with
   a short timeout; the bot must answer 200 with a JSON object holding a string ``name`` and
   a ``protocol`` (int) or ``protocols`` (list of ints).
3. The short conformance game against a built-in sample bot (:func:`conformance_game`).
   NOT IMPLEMENTED YET: it returns ``{"ok": True, "skipped": True, ...}``; the match runner
   (issue 6) is meant to fill it in.

The outcome is a JSON-ready dict ``{"ok": bool, "url": {...}, "health": {...},
"conformance": {...}}``; the API stores it in ``bots.last_check`` and sets the bot's status to
``ready`` or ``failed``.
"""

from __future__ import annotations

import time
from typing import Any

import httpx

from arena.bot_urls import BotUrlError, check_bot_url

#: Seconds allowed for the health check request (connect + read).
HEALTH_TIMEOUT_S = 5.0
#: Largest health response read, bytes.
MAX_HEALTH_BYTES = 64 * 1024


def _truncate(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def health_check(url: str, *, timeout_s: float = HEALTH_TIMEOUT_S, client: httpx.Client | None = None) -> dict[str, Any]:
    """``GET url`` once (no redirects) and judge the answer.

    Returns ``{"ok": bool, "status": int | None, "elapsed_ms": float, "name": str | None,
    "protocols": list[int], "error": str | None}`` (elapsed in milliseconds). Never raises for
    network or protocol problems: they are reported in ``error``.
    """
    own = client is None
    client = client or httpx.Client(follow_redirects=False, timeout=timeout_s, trust_env=False)
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
        import json

        data = json.loads(body)
    except ValueError:
        out["error"] = "response is not JSON: " + _truncate(body.decode("utf-8", "replace"))
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


def conformance_game(url: str, ruleset: str, *, secret: str | None = None) -> dict[str, Any]:
    """HOOK, not implemented: play a short game of ``ruleset`` against a built-in sample bot.

    To be written with the match runner (issue 6). It should return ``{"ok": bool,
    "ruleset": str, "faults": [...], "error": str | None}``. Until then it reports
    ``{"ok": True, "skipped": True}`` so a bot passing the health check becomes ``ready``.
    """
    return {"ok": True, "skipped": True, "ruleset": ruleset,
            "error": None, "note": "conformance game not implemented yet"}


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
    result["health"] = health_check(url, timeout_s=timeout_s)
    if not result["health"]["ok"]:
        return result
    result["conformance"] = [conformance_game(url, rs, secret=secret) for rs in rulesets]
    result["ok"] = all(c["ok"] for c in result["conformance"])
    return result
