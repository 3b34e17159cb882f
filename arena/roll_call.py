"""The roll call of a tournament's entrants: which of them are offline before it starts.

A bot that dials out is offline while it holds no connection to a gateway (its presence in
Redis, :func:`arena.relay.presence`); a bot the arena calls is offline when its health check
fails (:func:`arena.health.health_check`, within :data:`ROLL_CALL_TIMEOUT_S`; one check per
URL, up to :data:`PROBES_AT_ONCE` at a time). Whether a bot that dials out is connected cannot
be told while Redis is unreachable: it is then not reported (the start itself needs the
broker). House seats are the arena's own sample bots: never offline.

Used by the start (:mod:`arena.usecases.entrants`: in the API process, before the answer)
and by the wait for offline entrants (the task ``arena.await_entrants``). Pure: no database.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

import redis

from arena import relay
from arena.health import health_check
from arena.status import BotTransport

#: Seconds a health check of the roll call may take (connect, answer): a start answers within
#: about this long even when a bot's host swallows every packet.
ROLL_CALL_TIMEOUT_S = 3.0
#: Health checks run at once (a 128-bot field of distinct URLs: 8 rounds at most).
PROBES_AT_ONCE = 16

#: Why an entrant is offline: a bot that dials out holds no connection; a bot the arena calls
#: failed its health check.
NOT_CONNECTED = "not_connected"
HEALTH_FAILED = "health_failed"


@dataclass(frozen=True)
class Entrant:
    """A bot entered in a tournament, as the roll call needs it."""

    bot_id: int
    name: str
    owner_id: int
    transport: str
    url: str | None


@dataclass(frozen=True)
class Absence:
    """An offline entrant: its bot, why (:data:`NOT_CONNECTED`, :data:`HEALTH_FAILED`) and the
    health check's error (``detail``, empty for a bot that dials out)."""

    bot_id: int
    name: str
    owner_id: int
    transport: str
    reason: str
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Absence:
        return cls(
            int(d["bot_id"]),
            str(d.get("name") or ""),
            int(d.get("owner_id") or 0),
            str(d.get("transport") or BotTransport.HTTP.value),
            str(d.get("reason") or HEALTH_FAILED),
            str(d.get("detail") or ""),
        )

    def describe(self) -> str:
        """``bot 3 (my-bot): not connected`` / ``...: health check failed: <error>``."""
        why = "not connected" if self.reason == NOT_CONNECTED else f"health check failed: {self.detail}"
        return f"bot {self.bot_id} ({self.name}): {why}"


def roll_call(
    entrants: Sequence[Entrant],
    *,
    client: redis.Redis | None,
    allow_private: bool,
    timeout_s: float = ROLL_CALL_TIMEOUT_S,
) -> list[Absence]:
    """The offline entrants among ``entrants``, in their order (module docstring).
    ``client``: the broker's Redis (None: bots that dial out are not reported);
    ``allow_private``: ``ARENA_ALLOW_PRIVATE_BOT_URLS`` of this process. Never raises for a
    bot's or Redis's failure."""
    out: dict[int, Absence] = {}
    dialing = [e for e in entrants if e.transport == BotTransport.CONNECT]
    if dialing and client is not None:
        try:
            found = relay.presence(client, [e.bot_id for e in dialing])
        except (redis.RedisError, OSError):
            found = None
        if found is not None:
            for e in dialing:
                if not found.get(e.bot_id, relay.OFFLINE).connected:
                    out[e.bot_id] = Absence(e.bot_id, e.name, e.owner_id, e.transport, NOT_CONNECTED)
    called = [e for e in entrants if e.transport != BotTransport.CONNECT and e.url]
    urls = sorted({e.url for e in called if e.url})
    if urls:
        with ThreadPoolExecutor(max_workers=min(PROBES_AT_ONCE, len(urls)), thread_name_prefix="roll-call") as pool:
            checks = dict(
                zip(urls, pool.map(lambda u: health_check(u, timeout_s=timeout_s, allow_private=allow_private), urls))
            )
        for e in called:
            got = checks[e.url or ""]
            if not got["ok"]:
                detail = str(got.get("error") or "no answer")
                out[e.bot_id] = Absence(e.bot_id, e.name, e.owner_id, e.transport, HEALTH_FAILED, detail)
    return [out[e.bot_id] for e in entrants if e.bot_id in out]


def caller(client: redis.Redis | None, *, allow_private: bool) -> Callable[[Sequence[Entrant]], list[Absence]]:
    """:func:`roll_call` bound to a Redis client and a URL policy (what the use cases take)."""
    return lambda entrants: roll_call(entrants, client=client, allow_private=allow_private)


def redis_of(broker_url: str) -> redis.Redis | None:
    """A client of the broker's Redis for the presence of bots that dial out (short
    timeouts), or None when the broker is no Redis."""
    if not broker_url.startswith(("redis://", "rediss://", "unix://")):
        return None
    return redis.Redis.from_url(broker_url, socket_timeout=2, socket_connect_timeout=2)


def record(absences: Sequence[Absence], now: datetime) -> dict[str, Any]:
    """The stored form of a roll call (``tournaments.roll_call``)."""
    return {"checked_at": now.isoformat(), "offline": [a.to_dict() for a in absences]}


def absences_of(stored: dict[str, Any] | None) -> list[Absence]:
    """The absences of a stored roll call (:func:`record`); ``[]`` for none."""
    return [Absence.from_dict(d) for d in ((stored or {}).get("offline") or []) if isinstance(d, dict)]
