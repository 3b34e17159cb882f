"""The bots' stories (:class:`arena.relay.Story`: what the check says of a bot that is not
connected): what happened to a bot's last connection, and its last keep-alive ping."""

from __future__ import annotations

import logging
import time

import redis
from websockets.asyncio.server import ServerConnection

from arena import relay
from daifugo_arena.gateway.connection import Connection
from daifugo_arena.gateway.credentials import CredentialsReader
from daifugo_arena.gateway.frames import BotSocket
from daifugo_arena.gateway.hub import Hub

log = logging.getLogger("arena.gateway")

#: Least seconds between two writes of a connection's keep-alive pings to its bot's story
#: (:class:`arena.relay.Story`: the check warns about a bot that sends none).
PING_WRITE_S = 2.0


class Stories:
    """Writes the bots' stories (each in the background: a failure is logged, never raised)."""

    def __init__(self, hub: Hub, reader: CredentialsReader):
        self.hub, self.reader = hub, reader

    def write(self, bot_id: int, event: str, *, code: int | None = None, by: str = "") -> None:
        """Write ``event`` to the story of ``bot_id`` (in the background; a failure is logged)."""

        async def write() -> None:
            pipe = self.hub.r.pipeline(transaction=False)
            relay.record_story(pipe, bot_id, event, code=code, by=by)
            try:
                await pipe.execute()
            except (redis.RedisError, OSError) as exc:
                log.warning("story of bot %s not written: %s", bot_id, exc)

        self.hub.background(write())

    def refused(self, ws: ServerConnection) -> None:
        """A connection refused before its welcome: written to the story of the bot it claimed,
        when that bot exists (its credentials were read: a stranger's random ids write nothing)."""
        bot_id = ws.claimed if isinstance(ws, BotSocket) else None
        sent = ws.protocol.close_sent
        if bot_id is None or sent is None:
            return
        hit, creds = self.reader.cached(bot_id)
        if not hit or creds is None:
            return
        self.write(bot_id, "refused", code=sent.code, by="gateway")

    def closed(self, conn: Connection) -> None:
        """A welcomed connection ended: with the close code of whoever closed first (none: it dropped)."""
        p = conn.ws.protocol
        if p.close_rcvd is not None and (p.close_sent is None or p.close_rcvd_then_sent):
            code, by = p.close_rcvd.code, "bot"
        elif p.close_sent is not None:
            code, by = p.close_sent.code, "gateway"
        else:
            code, by = None, ""
        self.write(conn.bot_id, "closed", code=code, by=by)

    async def record_pings(self) -> None:
        """Write the connections' keep-alive pings seen since the last write to their bots'
        stories, each connection at most every :data:`PING_WRITE_S` seconds (one round trip)."""
        now = time.monotonic()
        pipe = self.hub.r.pipeline(transaction=False)
        written = []
        for conns in self.hub.bots.values():
            for c in conns:
                pinged = c.ws.pinged if isinstance(c.ws, BotSocket) else None
                if pinged is None or pinged == c.ping_written[0] or now - c.ping_written[1] < PING_WRITE_S:
                    continue
                relay.record_ping(pipe, c.bot_id, pinged)
                written.append((c, (pinged, now)))
        if not written:
            return
        await pipe.execute()
        for c, stamp in written:
            c.ping_written = stamp
