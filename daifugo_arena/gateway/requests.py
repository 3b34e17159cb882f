"""The requests' relay loop (:class:`Requests`): the gateway's doorbell, the pops of the bots'
request lists (marked held by this gateway in the same step) and the hand-over of each request
to a connection of its bot. Keys and envelopes: :mod:`arena.relay`."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import redis

from arena import relay
from daifugo_arena.gateway.connection import LATE_S
from daifugo_arena.gateway.hub import Hub

log = logging.getLogger("arena.gateway")

#: Seconds of the request lists' BLMPOP (it returns at once when a request or a wake-up comes).
BLPOP_S = 5.0
#: Most requests one pop takes from a bot's list at once.
POP_BATCH = 64
#: Most doorbells (bot ids, arena.relay) one pop takes at once.
RINGS_BATCH = 512


class Requests:
    """Requests from the workers to the connections held here."""

    def __init__(self, hub: Hub):
        self.hub = hub
        #: requests handed to a connection so far
        self.delivered = 0
        self._pop_and_hold: Any = None

    def open(self) -> None:
        """Once the hub's Redis clients exist."""
        self._pop_and_hold = self.hub.rpop.register_script(relay.POP_AND_HOLD)

    async def loop(self) -> None:
        """Wait on this gateway's doorbell list (one key, whatever the number of bots held); pop
        the request lists of the bots rung that it holds, and of every bot held each
        ``sweep_s`` seconds (:class:`daifugo_arena.gateway.config.GatewayConfig`)."""
        hub, sweep_s = self.hub, self.hub.config.sweep_s
        wake = relay.wake_key(hub.id)
        last_sweep = time.monotonic()
        while not hub.stopping:
            wait_s = max(0.01, min(BLPOP_S, last_sweep + sweep_s - time.monotonic()))
            try:
                got = await hub.rpop.blmpop(wait_s, 1, wake, direction="LEFT", count=RINGS_BATCH)
            except (redis.RedisError, OSError) as exc:
                log.warning("doorbell unreachable: %s", exc)
                await asyncio.sleep(0.5)
                continue
            rung: dict[int, None] = {}  # in the order rung, once each
            for item in got[1] if got else []:
                if isinstance(item, bytes) and item.isdigit() and int(item) in hub.bots:
                    rung[int(item)] = None
            if time.monotonic() - last_sweep >= sweep_s:
                last_sweep = time.monotonic()
                rung.update(dict.fromkeys(hub.bots))
            if rung and not hub.stopping:
                await self.pop(list(rung))

    async def pop(self, bot_ids: list[int]) -> None:
        """Pop up to :data:`POP_BATCH` requests of each bot's list, marked held by this gateway
        in the same step (:data:`arena.relay.POP_AND_HOLD`, one round trip), and deliver them."""
        try:
            popped = await self._pop_and_hold(
                keys=[relay.request_key(b) for b in bot_ids],
                args=[self.hub.id, POP_BATCH, relay.held_key(""), relay.HOLD_GRACE_MS],
            )
        except (redis.RedisError, OSError) as exc:  # what was popped comes back (the workers' requeue)
            log.warning("request lists unreachable: %s", exc)
            return
        for i in range(0, len(popped), 2):
            self.deliver(bot_ids[int(popped[i]) - 1], popped[i + 1])

    def deliver(self, bot_id: int, raws: list[bytes]) -> None:
        """Hand requests popped from ``bot_id``'s list to its connections (each to the one with
        the fewest in flight); give them back to the list when it has none here any more.

        A copy of a request one of the bot's connections here still holds (queued again while
        this gateway was frozen past its alive key) is not sent again: a second answer would
        close the connection for an unknown id. The pop marked it held by this gateway again,
        which is all the worker needs to know."""
        conns = self.hub.bots.get(bot_id)
        if not conns:  # the bot left this gateway since the pop was sent: back, for its other gateways
            self.hub.background(self.hub.r.eval(relay.PUSH_AND_RING, *relay.push_args(bot_id, raws, front=True)))
            return
        for raw in raws:
            env = relay.parse_envelope(raw)
            now = time.time()
            if env is None or env.deadline_ms < now * 1000:
                continue  # stale: its worker has given up
            if env.kind != "notice" and any(env.rid in c.pending for c in conns):
                continue  # a copy of a request held here (docstring): only the hold is said again
            conn = min(conns, key=lambda c: len(c.pending))
            if env.kind == "notice":
                conn.late[env.rid] = now + LATE_S
            else:
                conn.pending[env.rid] = (env.deadline_ms / 1000, raw)
            try:
                conn.outbox.put_nowait(env.frame)
            except asyncio.QueueFull:
                conn.drop_slow()
                continue
            self.delivered += 1
