"""The health check of a bot the arena calls: ``GET <url>`` once, judged (docs/protocol.md,
"Health"). Used by the bot check (:mod:`arena.conformance`) and by the roll call of a
tournament's entrants before it starts (:mod:`arena.roll_call`), in the workers and the API
process alike; it imports no runner. Every connection goes through
:class:`arena.bot_transport.PinnedTransport` (the URL policy on the resolved addresses) and
the whole exchange ends by its deadline (:data:`arena.bot_transport.WATCHDOG`).
"""

from __future__ import annotations

import time
from typing import Any

import httpx

from arena.bot_transport import PinnedTransport, bounded_exchange
from arena.safejson import JsonLimitError, loads_limited

#: Seconds allowed for the health check request (connect + read).
HEALTH_TIMEOUT_S = 5.0
#: Largest health response read, bytes.
MAX_HEALTH_BYTES = 64 * 1024


def truncate_text(text: str, limit: int = 200) -> str:
    """``text`` cut to ``limit`` characters, NUL shown as ``\\x00`` (the outcome is stored as
    JSON in PostgreSQL, which refuses NUL in text)."""
    text = text.replace("\x00", "\\x00")
    return text if len(text) <= limit else text[:limit] + "..."


def not_healthy_yet() -> dict[str, Any]:
    """A health check's outcome before anything is known (:func:`health_check`'s shape)."""
    return {"ok": False, "status": None, "elapsed_ms": None, "name": None, "protocols": [], "error": None}


def health_check(
    url: str, *, timeout_s: float = HEALTH_TIMEOUT_S, client: httpx.Client | None = None, allow_private: bool = False
) -> dict[str, Any]:
    """``GET url`` once (no redirects) and judge the answer.

    The connection goes through :class:`arena.bot_transport.PinnedTransport` (the host
    resolved once, every address checked with ``allow_private``, the socket connected to a
    checked address); a refused host is reported in ``error``.

    Returns ``{"ok": bool, "status": int | None, "elapsed_ms": float, "name": str | None,
    "protocols": list[int], "error": str | None}`` (elapsed in milliseconds). Never raises for
    network or protocol problems: they are reported in ``error``.
    """
    own = client is None
    client = client or httpx.Client(
        follow_redirects=False,
        timeout=timeout_s,
        trust_env=False,
        transport=PinnedTransport(allow_private=allow_private),
    )
    out = not_healthy_yet()
    start = time.monotonic()
    try:
        resp, body = _get_health(client, url, timeout_s, start, out)
    except (httpx.HTTPError, ValueError, OSError) as exc:
        out["elapsed_ms"] = round((time.monotonic() - start) * 1000, 3)
        late = time.monotonic() - start >= timeout_s
        out["error"] = (
            f"no complete answer within {timeout_s:g} s" if late else truncate_text(f"{type(exc).__name__}: {exc}")
        )
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
    judge_health_body(out, body)
    return out


def _get_health(
    client: httpx.Client, url: str, timeout_s: float, start: float, out: dict[str, Any]
) -> tuple[httpx.Response, bytearray]:
    """The health answer and its raw body (``out["status"]`` set as soon as known).

    Raises:
        httpx.HTTPError, OSError: the request failed; ValueError: the body is too large or
            not complete within ``timeout_s`` seconds from ``start``.
    """
    return bounded_exchange(
        client,
        "GET",
        url,
        deadline=start + timeout_s,
        max_bytes=MAX_HEALTH_BYTES,
        headers={"Accept": "application/json"},
        on_status=lambda status: out.__setitem__("status", status),
    )


def judge_health_body(out: dict[str, Any], body: bytearray) -> None:
    """Judge a 200 health answer's body: ``name`` and ``protocols`` into ``out``, ``ok`` or ``error``."""
    try:
        data = loads_limited(bytes(body))
    except JsonLimitError as exc:
        out["error"] = truncate_text(f"response is not JSON within the limits: {exc}")
        return
    if not isinstance(data, dict):
        out["error"] = "response JSON is not an object"
        return
    name = data.get("name")
    if not isinstance(name, str) or not name:
        out["error"] = "response has no string 'name'"
        return
    out["name"] = truncate_text(name, 64)
    protocols = data.get("protocols", [data["protocol"]] if "protocol" in data else None)
    if (
        not isinstance(protocols, list)
        or not protocols
        or not all(isinstance(p, int) and not isinstance(p, bool) for p in protocols)
    ):
        out["error"] = "response has no integer 'protocol' or list 'protocols'"
        return
    out["protocols"] = protocols
    out["ok"] = True
