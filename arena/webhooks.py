"""Owners' webhooks: what the arena POSTs to an account's ``webhook_url``, and how.

An event is one JSON object (:func:`envelope`)::

    {"event": "check.finished" | "entrant.offline" | "tournament.ended" | "ping",
     "id": "<the event's id: the same on every retry>", "at": "<ISO 8601 UTC>", "data": {...}}

signed like a request to a bot (docs/protocol.md, "Signatures"; :func:`bots_sdk.protocol.sign`)
with the account's webhook secret: ``X-Arena-Timestamp`` and ``X-Arena-Signature``
(``sha256=`` HMAC-SHA256 of ``timestamp + "." + body``), plus ``X-Arena-Event`` and
``X-Arena-Delivery`` (the event's id). :func:`post` sends it through
:class:`arena.bot_transport.PinnedTransport` (the bots' URL policy at connection time:
private addresses only with ``ARENA_ALLOW_PRIVATE_BOT_URLS``), never follows a redirect, and is
over within :data:`TIMEOUT_S` seconds; an answer 2xx delivers it; a network error, a timeout,
408, 425, 429 or 5xx is worth another attempt (:data:`ATTEMPTS` in all, after
:func:`backoff_s`); any other answer is final. Pure: no database (the task around it:
:mod:`arena.notices`). docs/webhooks.md describes the events for a receiver.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx

from arena.bot_transport import PinnedTransport, bounded_exchange
from bots_sdk import protocol

#: A bot's check is over (passed, failed or could not run).
CHECK_FINISHED = "check.finished"
#: A bot of the account is entered in a tournament that is about to start while the bot is
#: offline (the start waits for it until ``waiting_until``, or starts without it: null).
ENTRANT_OFFLINE = "entrant.offline"
#: A tournament the account organizes or has a bot in is over (finished or cancelled).
TOURNAMENT_ENDED = "tournament.ended"
#: A test delivery the owner asked for.
PING = "ping"
EVENTS = (CHECK_FINISHED, ENTRANT_OFFLINE, TOURNAMENT_ENDED, PING)

EVENT_HEADER = "X-Arena-Event"
DELIVERY_HEADER = "X-Arena-Delivery"
#: Seconds one delivery may take, connection and answer included.
TIMEOUT_S = 5.0
#: Most bytes of an answer read (the rest is not waited for: the answer's body means nothing).
MAX_ANSWER_BYTES = 4096
#: Attempts of one event at most (the first and its retries).
ATTEMPTS = 6
#: Seconds before the first retry, doubled each time up to :data:`BACKOFF_MAX_S`.
BACKOFF_FIRST_S, BACKOFF_MAX_S = 10.0, 600.0
#: Answers worth another attempt (besides network errors and timeouts).
RETRY_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})


def envelope(event: str, data: dict[str, Any], *, event_id: str, now: datetime | None = None) -> dict[str, Any]:
    """The JSON object of an event (module docstring).

    Raises:
        ValueError: ``event`` is not one of :data:`EVENTS` (a programming error).
    """
    if event not in EVENTS:
        raise ValueError(f"unknown webhook event {event!r}")
    return {"event": event, "id": event_id, "at": (now or datetime.now(UTC)).isoformat(), "data": data}


def backoff_s(attempt: int) -> float:
    """Seconds to wait after failed attempt ``attempt`` (1 = the first) before the next."""
    return float(min(BACKOFF_MAX_S, BACKOFF_FIRST_S * 2 ** max(0, attempt - 1)))


@dataclass(frozen=True)
class Delivery:
    """What one attempt got: ``status`` (None: no answer), ``ok`` (2xx), ``retry`` (another
    attempt may succeed) and ``error`` (why it failed, else empty)."""

    status: int | None
    ok: bool
    retry: bool
    error: str = ""


def post(
    url: str,
    secret: str,
    message: dict[str, Any],
    *,
    allow_private: bool,
    timeout_s: float = TIMEOUT_S,
    now: float | None = None,
) -> Delivery:
    """POST ``message`` (an :func:`envelope`) to ``url``, signed with ``secret``. Never raises
    for the receiver's failures: they are the :class:`Delivery`'s."""
    body = protocol.dumps(message)
    headers = protocol.sign(secret, body, now)
    headers[EVENT_HEADER] = str(message.get("event", ""))
    headers[DELIVERY_HEADER] = str(message.get("id", ""))
    start = time.monotonic()
    client = httpx.Client(timeout=timeout_s, trust_env=False, transport=PinnedTransport(allow_private=allow_private))
    try:
        resp, _body = bounded_exchange(
            client, "POST", url, deadline=start + timeout_s, max_bytes=MAX_ANSWER_BYTES, headers=headers, content=body
        )
    except ValueError as exc:  # the answer's body: too long, or late; the status is what counts
        if "larger than" in str(exc):
            return Delivery(None, False, False, f"answer larger than {MAX_ANSWER_BYTES} bytes")
        return Delivery(None, False, True, f"no complete answer within {timeout_s:g} s")
    except (httpx.HTTPError, OSError) as exc:
        late = time.monotonic() - start >= timeout_s
        why = f"no complete answer within {timeout_s:g} s" if late else f"{type(exc).__name__}: {exc}"[:300]
        return Delivery(None, False, True, why)
    finally:
        client.close()
    status = resp.status_code
    if 200 <= status < 300:
        return Delivery(status, True, False)
    if resp.is_redirect:
        return Delivery(status, False, False, f"redirect ({status}) refused: redirects are never followed")
    return Delivery(status, False, status in RETRY_STATUSES, f"HTTP status {status}")
