"""A gateway's liveness and its connections' (:class:`Liveness`): the alive beat with the
event loop's stall, the requests in flight past their deadline, the probe of silent
connections, and the recovery once Redis answers again."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import redis
from websockets.exceptions import ConnectionClosed

from arena import relay
from daifugo_arena.gateway.connection import LATE_S, Connection
from daifugo_arena.gateway.hub import Hub
from daifugo_arena.gateway.presence import Presence
from daifugo_arena.gateway.requests import Requests
from daifugo_arena.gateway.stories import Stories

log = logging.getLogger("arena.gateway")

#: Seconds between two looks at the event loop's lateness (its stall, published with the
#: alive key, :data:`arena.relay.ALIVE_BEAT`).
LAG_TICK_S = 0.05
#: Seconds a connection holding requests may be silent (no frame, no pong) before it is
#: probed, when its bot has a newer connection (:meth:`Liveness.probe_silent`).
SILENT_S = 5.0
#: Seconds a probe's ping has for its pong before the connection is dropped.
PROBE_S = 5.0


class Liveness:
    """The loops that keep the gateway and its connections known alive (or dropped)."""

    def __init__(self, hub: Hub, presence: Presence, requests: Requests, stories: Stories):
        self.hub, self.presence, self.requests, self.stories = hub, presence, requests, stories
        #: the event loop's stall: milliseconds it was late, this second and the last one
        self.stall_ms = [0.0, 0.0]
        self._beat: Any = None

    def open(self) -> None:
        """Once the hub's Redis clients exist."""
        self._beat = self.hub.r.register_script(relay.ALIVE_BEAT)

    @property
    def stall(self) -> int:
        """The event loop's stall of the last two seconds, milliseconds."""
        return round(max(self.stall_ms))

    async def alive(self) -> None:
        """The beat (:data:`arena.relay.ALIVE_BEAT`): the alive key, holding the event loop's
        stall of the last two seconds (ms), and this gateway's score in the gateways' set (and
        the end of an outage of every gateway, when this beat ends one)."""
        hub = self.hub
        await self._beat(
            keys=[relay.alive_key(hub.id), relay.GATEWAYS_KEY, relay.OUTAGE_KEY],
            args=[str(self.stall), int(relay.ALIVE_TTL_S * 1000), hub.id, relay.DROPPED_TTL_S],
        )

    async def lag_loop(self) -> None:
        """Every :data:`LAG_TICK_S`: how late the event loop woke (its stall), summed per
        second into :attr:`stall_ms` (this second and the last one)."""
        loop = asyncio.get_running_loop()
        second = loop.time()
        while not self.hub.stopping:
            before = loop.time()
            await asyncio.sleep(LAG_TICK_S)
            now = loop.time()
            if now - second >= 1.0:
                self.stall_ms = [self.stall_ms[1], 0.0]
                second = now
            self.stall_ms[1] += max(0.0, now - before - LAG_TICK_S) * 1000

    async def tick_loop(self) -> None:
        """Every second: the alive key, and the requests in flight past their deadline. Nothing
        here waits for the database (:meth:`daifugo_arena.gateway.presence.Presence.renew_loop` does). When
        Redis answers again after failing (restarted, maybe empty), the presence of every
        connection is written again and every held bot's list looked at, at once
        (:meth:`recover`): a bot's requests never wait for the next renewal because Redis
        forgot its connections."""
        failed = False
        while not self.hub.stopping:
            await asyncio.sleep(1.0)
            try:
                await self.alive()
            except (redis.RedisError, OSError) as exc:
                log.warning("alive key not refreshed: %s", exc)
                failed = True
            else:
                if failed:
                    failed = False
                    self.hub.background(self.recover())
            self._expire(time.time())
            try:
                await self.probe_silent()
            except Exception:  # never end the alive key's refreshes
                log.exception("probing silent connections failed")
            try:
                await self.stories.record_pings()
            except (redis.RedisError, OSError) as exc:
                log.warning("keep-alive pings not written: %s", exc)

    def _expire(self, now: float) -> None:
        """Requests in flight past their deadline become late ids; late ids are forgotten."""
        for conns in list(self.hub.bots.values()):
            for c in conns:
                for rid, (deadline, _) in list(c.pending.items()):
                    if deadline < now - 1.0:
                        del c.pending[rid]
                        c.late[rid] = now + LATE_S
                for rid, forget in list(c.late.items()):
                    if forget < now:
                        del c.late[rid]

    async def recover(self) -> None:
        """Redis is back (:meth:`tick_loop`): the connections' presence again, then every held
        bot's request list."""
        try:
            await self.presence.renew()
        except Exception:
            log.exception("presence not written again after a Redis failure")
        if self.hub.bots and not self.hub.stopping:
            await self.requests.pop(list(self.hub.bots))

    async def probe_silent(self) -> None:
        """Probe each connection that holds requests, has been silent :data:`SILENT_S` and whose
        bot opened another connection since (here, or on another gateway): the signature of a
        network that changed under the bot (its old connection silent, no close or reset ever
        comes, and it connected again). A bot that merely thinks long on its connections, even
        one whose library cannot answer pings meanwhile, is never probed."""
        now = time.time()
        for bot_id, conns in list(self.hub.bots.items()):
            silent = [c for c in conns if c.pending and not c.probed and now - c.heard() > SILENT_S]
            if not silent:
                continue
            opened = {o.member: o.since for o in conns}
            if not any(since > c.heard() for c in silent for m, since in opened.items() if m != c.member):
                if all(now - c.looked < SILENT_S for c in silent):
                    continue
                for c in silent:
                    c.looked = now
                opened.update(await self._opened(bot_id))  # its connections on the other gateways
            for c in silent:
                if any(since > c.heard() for m, since in opened.items() if m != c.member):
                    c.probed = True
                    self.hub.background(self.probe(c))

    async def _opened(self, bot_id: int) -> dict[str, float]:
        """The bot's connections on every gateway: presence member -> when it opened (Unix s)."""
        try:
            rows = await self.hub.r.zrange(relay.conns_key(bot_id), 0, -1)
        except redis.RedisError:
            return {}
        opened = {}
        for raw in rows:
            m = raw.decode() if isinstance(raw, bytes) else str(raw)
            try:
                opened[m] = float(m.rsplit("|", 1)[1])
            except (IndexError, ValueError):
                pass
        return opened

    async def probe(self, conn: Connection) -> None:
        """Ping ``conn``; no pong within :data:`PROBE_S`: drop it (its requests go back to the
        bot's list, for its newer connection)."""
        try:
            pong = await conn.ws.ping()
            await asyncio.wait_for(pong, PROBE_S)
        except TimeoutError:
            log.info("bot %s: connection %s silent, the bot connected since: dropped", conn.bot_id, conn.id)
            transport = conn.ws.transport
            if transport is not None:
                transport.abort()
            return
        except ConnectionClosed:
            return
        conn.probed = False  # it answered: a later silence may be probed again
