"""The Redis side of bots that dial out: keys, envelopes and presence shared by the workers
(:mod:`arena.runner.connected`), the gateways (``gateway/``) and the pages.

Keys (``<bot>``: the bot id; ``<gw>``: a gateway's id; ``<rid>``: a request id):

================================ =================================================================
``arena:gw:req:<bot>``           list of request envelopes waiting for a connection of the bot
``arena:gw:ans:<rid>``           list receiving the one answer (or fault) of a request; expires
``arena:gw:held:<rid>``          the gateway that took the request (expires at its deadline)
``arena:gw:alive:<gw>``          present while the gateway lives (:data:`ALIVE_TTL_S`)
``arena:gw:wake:<gw>``           pushed to when the gateway's set of bots changes
``arena:gw:conns:<bot>``         sorted set: the bot's connections (member ``<gw>|<conn>|<since>``,
                                 score: the end of its lease, Redis time, :mod:`arena.leases`)
``arena:gw:acct:<account>``      the same, per account (the per-account cap)
================================ =================================================================

Envelope (a list item): ``<rid>|<deadline ms, Unix>|<kind>|<frame>`` where ``frame`` is the
WebSocket text frame itself (:func:`bots_sdk.wire.frame`); the gateway sends it unchanged.

Answer (a list item): ``A<body JSON>`` or ``F<fault JSON {"kind","detail","received"}>``.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any, NamedTuple

import redis

PREFIX = "arena:gw:"
#: Seconds a gateway's alive key lasts without a refresh (refreshed every second).
ALIVE_TTL_S = 3.0
#: Seconds a connection's presence lease lasts without a refresh (refreshed every LEASE_S / 3).
LEASE_S = 30.0
#: Seconds an answer waits, unread, before it expires (a worker that gave up never reads it).
ANSWER_TTL_S = 60


def request_key(bot_id: int | str) -> str:
    return f"{PREFIX}req:{bot_id}"


def answer_key(rid: str) -> str:
    return f"{PREFIX}ans:{rid}"


def held_key(rid: str) -> str:
    return f"{PREFIX}held:{rid}"


def alive_key(gateway_id: str) -> str:
    return f"{PREFIX}alive:{gateway_id}"


def wake_key(gateway_id: str) -> str:
    return f"{PREFIX}wake:{gateway_id}"


def conns_key(bot_id: int | str) -> str:
    return f"{PREFIX}conns:{bot_id}"


def account_key(account_id: int | str) -> str:
    return f"{PREFIX}acct:{account_id}"


def envelope(rid: str, deadline_ms: int, kind: str, frame: str) -> str:
    """A request list item (module docstring)."""
    return f"{rid}|{deadline_ms}|{kind}|{frame}"


class Envelope(NamedTuple):
    rid: str
    deadline_ms: int
    kind: str
    frame: str


def parse_envelope(raw: bytes | str) -> Envelope | None:
    """The parts of a request list item, or None when it is not one."""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    parts = text.split("|", 3)
    if len(parts) != 4 or not parts[1].isdigit():
        return None
    return Envelope(parts[0], int(parts[1]), parts[2], parts[3])


def member(gateway_id: str, connection_id: str, since: float) -> str:
    """A presence member: gateway, connection and its start (Unix seconds)."""
    return f"{gateway_id}|{connection_id}|{since:.3f}"


class Presence(NamedTuple):
    """A bot's live connections: how many, and the Unix seconds the oldest one opened (None: none)."""

    connections: int
    since: float | None

    @property
    def connected(self) -> bool:
        return self.connections > 0

    def as_dict(self) -> dict[str, Any]:
        """``{"connected": bool, "connections": int, "since": ISO 8601 UTC | None}``."""
        since = datetime.fromtimestamp(self.since, UTC).isoformat() if self.since is not None else None
        return {"connected": self.connected, "connections": self.connections, "since": since}


OFFLINE = Presence(0, None)


def presence(client: redis.Redis, bot_ids: list[int]) -> dict[int, Presence]:
    """The presence of each bot of ``bot_ids`` (one round trip).

    Raises:
        redis.RedisError: Redis is unreachable.
    """
    if not bot_ids:
        return {}
    now = time.time()
    pipe = client.pipeline(transaction=False)
    pipe.time()
    for b in bot_ids:
        pipe.zrange(conns_key(b), 0, -1, withscores=True)
    res = pipe.execute()
    rt = res[0]
    now = rt[0] + rt[1] / 1e6
    out: dict[int, Presence] = {}
    for b, rows in zip(bot_ids, res[1:]):
        live = [m.decode() if isinstance(m, bytes) else m for m, score in rows if score > now]
        sinces = []
        for m in live:
            try:
                sinces.append(float(m.rsplit("|", 1)[1]))
            except (IndexError, ValueError):
                pass
        out[b] = Presence(len(live), min(sinces) if sinces else None)
    return out
