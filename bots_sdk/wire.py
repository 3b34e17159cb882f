"""The frames of the WebSocket transport (bots that dial out; docs/protocol.md, "Bots that dial out").

A bot opens ``ws(s)://<gateway>/v1/bots`` (RFC 6455), text frames only, each one JSON object:

1. gateway -> bot: ``{"type": "challenge", "protocol": 1, "nonce": "<hex>", "ts": <int>}``
   (``ts``: the gateway's Unix seconds, informative);
2. bot -> gateway: ``{"type": "auth", "bot_id": <int>, "ts": "<Unix seconds>", "signature":
   "sha256=<hex>"}`` where the signature is :func:`auth_signature` (HMAC-SHA256 of
   ``ts + "." + nonce`` with the bot's signing secret; the secret never travels); ``ts`` must be
   within :data:`bots_sdk.protocol.MAX_SKEW_S` seconds of the gateway's clock (the HTTP rule);
3. gateway -> bot: ``{"type": "welcome", "bot_id", "name", "connection", "max_frame_bytes"}``,
   or a close with one of :data:`CLOSE_CODES`;
4. then gateway -> bot: ``{"type": "request" | "notice" | "health", "id": "<hex>", "body": {...}}``
   (``body``: exactly the protocol v1 decision request, notice, or ``{}`` for health), and
   bot -> gateway, for a request or a health frame: ``{"id": "<the same id>", "body": {...}}``
   (the action, or the health object). Notices need no answer (one is ignored).

Any number of requests of different matches may be outstanding on one connection; answers may
come in any order. A frame over :data:`MAX_FRAME_BYTES` closes the connection (1009).
"""

from __future__ import annotations

import hmac
import json
import time
from typing import Any

from bots_sdk.protocol import MAX_SKEW_S, PROTOCOL_VERSION, dumps

#: The gateway's path for bot connections.
PATH = "/v1/bots"
#: Largest frame either side sends: a 64 KiB answer body plus the frame's own fields, bytes.
MAX_FRAME_BYTES = 64 * 1024 + 512
#: Seconds a connection has to authenticate after the challenge.
AUTH_TIMEOUT_S = 5.0
#: Seconds between two keep-alive pings a bot sends on each connection (the protocol asks for
#: one every 5 s, and a pong before the next).
PING_INTERVAL_S = 5.0
#: Seconds after a connection is welcomed by which its first ping is expected (the interval and
#: some slack), and seconds without a ping after that: past either, the bot counts as one that
#: does not send the protocol's keep-alive pings (the check warns, ``arena play`` says so).
PING_FIRST_S = PING_INTERVAL_S + 2.0
PING_SILENCE_S = 3 * PING_INTERVAL_S

#: Close codes the gateway uses (4000-4999 are the application's, RFC 6455 7.4.2).
CLOSE_AUTH_FAILED = 4401
CLOSE_AUTH_TIMEOUT = 4408
CLOSE_TOO_MANY = 4429
CLOSE_NOT_CONNECT_BOT = 4403
CLOSE_BOT_GONE = 4410
CLOSE_PROTOCOL = 1008
CLOSE_NOT_JSON = 1007
CLOSE_TOO_BIG = 1009
CLOSE_GOING_AWAY = 1001
CLOSE_CODES = {
    CLOSE_AUTH_FAILED: "authentication failed (unknown bot or wrong signature)",
    CLOSE_AUTH_TIMEOUT: "no authentication within the time allowed",
    CLOSE_TOO_MANY: "too many connections for this bot or account",
    CLOSE_NOT_CONNECT_BOT: "this bot is registered with a URL: the arena calls it",
    CLOSE_BOT_GONE: "the bot was deleted",
    CLOSE_PROTOCOL: "a frame broke the protocol (the reason says which)",
    CLOSE_NOT_JSON: "a frame is not a JSON object",
    CLOSE_TOO_BIG: "a frame over the size limit",
    CLOSE_GOING_AWAY: "the gateway is shutting down: connect again",
}
#: Close codes after which reconnecting the same way can never succeed.
FATAL_CLOSE_CODES = frozenset({CLOSE_AUTH_FAILED, CLOSE_NOT_CONNECT_BOT, CLOSE_BOT_GONE})


def auth_signature(secret: str, ts: str, nonce: str) -> str:
    """``sha256=<hex>`` of HMAC-SHA256(``secret``, ``ts + "." + nonce``), the answer to a challenge."""
    return "sha256=" + hmac.digest(secret.encode("utf-8"), f"{ts}.{nonce}".encode("ascii"), "sha256").hex()


def challenge_frame(nonce: str, now: float | None = None) -> str:
    """The first frame the gateway sends."""
    ts = int(time.time() if now is None else now)
    return json.dumps({"type": "challenge", "protocol": PROTOCOL_VERSION, "nonce": nonce, "ts": ts})


def auth_frame(bot_id: int, secret: str, nonce: str, now: float | None = None) -> str:
    """The bot's answer to a challenge of ``nonce``."""
    ts = str(int(time.time() if now is None else now))
    return json.dumps({"type": "auth", "bot_id": int(bot_id), "ts": ts, "signature": auth_signature(secret, ts, nonce)})


def auth_valid(frame: Any, secrets: list[str], nonce: str, now: float | None = None) -> bool:
    """Whether ``frame`` (a parsed auth frame) proves one of ``secrets`` for ``nonce``, with its
    ``ts`` within :data:`~bots_sdk.protocol.MAX_SKEW_S` seconds of ``now``. Every secret is
    compared, always (no timing difference between them)."""
    if not isinstance(frame, dict):
        return False
    ts, sig = frame.get("ts"), frame.get("signature")
    if not isinstance(ts, str) or not isinstance(sig, str) or not (ts.isascii() and ts.isdigit()) or len(ts) > 12:
        return False
    clock = time.time() if now is None else now
    if abs(clock - int(ts)) > MAX_SKEW_S:
        return False
    ok = False
    for secret in secrets:
        ok |= hmac.compare_digest(auth_signature(secret, ts, nonce), sig.strip())
    return ok


def frame(kind: str, request_id: str, body: bytes) -> str:
    """A request, notice or health frame around ``body`` (protocol v1 JSON bytes, sent as they are)."""
    return '{"type":"' + kind + '","id":"' + request_id + '","body":' + body.decode("utf-8") + "}"


def answer_frame(request_id: str, body: Any) -> str:
    """The bot's answer to the request ``request_id``, serialized as the HTTP server serializes
    an answer (:func:`bots_sdk.protocol.dumps`: ``NaN`` and infinities as ``null``), so that a
    bot answers the same over either transport. Text only :mod:`json` can write (a lone
    surrogate) goes as :mod:`json` writes it (the arena then faults that answer).

    Raises:
        TypeError: ``body`` holds something JSON cannot represent.
    """
    frame = {"id": request_id, "body": body}
    try:
        return dumps(frame).decode("utf-8")
    except ValueError:  # not UTF-8 (a lone surrogate): escaped by json
        return json.dumps(frame, separators=(",", ":"))
