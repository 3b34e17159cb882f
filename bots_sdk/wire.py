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
come in any order. A frame over :data:`MAX_FRAME_BYTES` closes the connection (1009). Before
its welcome a connection may send no more than :data:`MAX_AUTH_FRAME_CHARS` characters of auth
frame, and :data:`MAX_PREAUTH_BYTES` bytes in all (the handshake included), or it is closed
with 1009: the gateway spends on a stranger only what a tiny, fixed-shape frame costs
(:func:`parse_auth`). An answer frame's ``id`` is its first or its last key, written plainly
(:func:`answer_id`: the gateway routes the frame by it without parsing it).
"""

from __future__ import annotations

import hmac
import json
import re
import string
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
#: Longest auth frame, characters (one is about 130: ``{"type", "bot_id", "ts", "signature"}``).
MAX_AUTH_FRAME_CHARS = 512
#: Most bytes a connection may send before its welcome, its opening handshake included (a
#: bot's handshake is well under 1 KiB; a reverse proxy adds a few headers).
MAX_PREAUTH_BYTES = 8 * 1024

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


#: The only characters an auth frame may hold (JSON punctuation, letters, digits, blanks).
_AUTH_CHARS = frozenset('{}":,=_ \t\r\n' + string.ascii_letters + string.digits)


def parse_auth(text: str) -> dict[str, Any] | None:
    """The auth frame ``text`` as an object, or None when it is not one. The shape is checked
    before any JSON is parsed, in time bounded by :data:`MAX_AUTH_FRAME_CHARS`: at most that
    many characters, only those of a flat object of strings and integers (one ``{``, one
    ``}``, no array, no escape), then ``"type": "auth"``."""
    if len(text) > MAX_AUTH_FRAME_CHARS or text.count("{") != 1 or text.count("}") != 1:
        return None
    if not _AUTH_CHARS.issuperset(text):
        return None
    try:
        obj = json.loads(text)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) and obj.get("type") == "auth" else None


_ID = r'"id"\s*:\s*"([0-9A-Za-z_-]{1,64})"'
_ID_FIRST = re.compile(r"\s*\{\s*" + _ID + r"\s*[,}]")
_ID_LAST = re.compile(_ID + r"\s*\}\s*\Z")


def answer_id(text: str) -> str | None:
    """The request id an answer frame answers, read without parsing the frame: its first key
    (``{"id": "<id>", ...``) or its last (``..., "id": "<id>"}``), written plainly (no escape;
    ids are 1 to 64 letters, digits, ``_`` or ``-``). None: no such id. Linear in the frame's
    size with a small constant (regular expressions anchored at its start, and at the last
    ``"id"``), whatever the frame holds. The frame itself is parsed later, strictly, by the
    worker, which checks this id again (``arena.runner.connected``)."""
    first = _ID_FIRST.match(text)
    if first is not None:
        return first.group(1)
    at = text.rfind('"id"')
    if at < 0 or not text[:at].rstrip().endswith(","):
        return None
    last = _ID_LAST.match(text, at)
    return last.group(1) if last is not None else None


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
