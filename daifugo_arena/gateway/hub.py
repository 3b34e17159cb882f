"""What a gateway's parts share (:class:`Hub`): its settings and id, the connections it holds,
its Redis clients and its background tasks."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any

import redis
import redis.asyncio as aioredis

from arena import relay
from daifugo_arena.gateway.config import GatewayConfig
from daifugo_arena.gateway.connection import Connection


class Hub:
    """The state the gateway's parts share (one per gateway, one event loop).

    ``r`` (commands), ``rpop`` (the blocking pops, no socket timeout) and ``sync`` (the leases,
    called in threads) exist once :meth:`open` ran, on the event loop."""

    r: aioredis.Redis
    rpop: aioredis.Redis
    sync: redis.Redis

    def __init__(self, broker_url: str, config: GatewayConfig):
        self.broker_url = broker_url
        self.config = config
        self.id = config.gateway_id
        #: bot id -> its connections held here
        self.bots: dict[int, list[Connection]] = {}
        #: set once the gateway stops: the loops end, no connection is taken
        self.stopping = False
        self._tasks: set[asyncio.Task[Any]] = set()

    def open(self) -> None:
        self.r = aioredis.Redis.from_url(self.broker_url, socket_timeout=5, socket_connect_timeout=5)
        self.rpop = aioredis.Redis.from_url(self.broker_url, socket_timeout=None, socket_connect_timeout=5)
        self.sync = redis.Redis.from_url(self.broker_url, socket_timeout=5, socket_connect_timeout=5)

    async def close(self) -> None:
        for c in (self.r, self.rpop):
            await c.aclose()
        self.sync.close()

    @property
    def connections(self) -> int:
        return sum(len(c) for c in self.bots.values())

    def background(self, aw: Awaitable[Any]) -> None:
        """Run ``aw`` on a task of its own, kept until it ends."""
        task = asyncio.ensure_future(aw)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def ring_self(self, bot_id: int) -> None:
        """Ring this gateway's own doorbell for ``bot_id`` (its request list is looked at soon)."""
        try:
            await self.r.rpush(relay.wake_key(self.id), bot_id)
        except redis.RedisError:
            pass  # the sweep looks at its list soon
