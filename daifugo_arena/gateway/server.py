"""The gateway process (``arena gateway``): bot connections in, requests and answers through Redis.

One asyncio process on ``websockets``. For each connection (path :data:`bots_sdk.wire.PATH`): the
challenge, the bot's proof (:func:`bots_sdk.wire.auth_valid`, checked against the secrets
:data:`daifugo_arena.gateway.credentials.CredentialsFn` returns;
:mod:`daifugo_arena.gateway.admission`), the caps
(:meth:`daifugo_arena.gateway.presence.Presence.register`: per bot and per account, leases in
Redis), then two tasks (:mod:`daifugo_arena.gateway.connection`): a reader (answers queued for
Redis) and a writer (frames from its outbox to the socket). One task waits on the gateway's doorbell
list (the ids of bots whose request list got requests, rung by whoever pushed them,
:mod:`arena.relay`), pops up to :data:`daifugo_arena.gateway.requests.POP_BATCH` requests of each
bot rung that it holds, marking them held by this gateway in the same step (one round trip for all),
and hands each request to the bot's connection with the fewest requests in flight
(:mod:`daifugo_arena.gateway.requests`); another pushes the queued answers, all those waiting in one
pipeline (:mod:`daifugo_arena.gateway.answers`). Keys, envelopes and answers: :mod:`arena.relay`.

The parts, one concern each (:class:`Gateway` composes them around a
:class:`daifugo_arena.gateway.hub.Hub`): :mod:`daifugo_arena.gateway.config` (the settings),
:mod:`daifugo_arena.gateway.frames` (the frame policy of a socket),
:mod:`daifugo_arena.gateway.admission` (before the welcome),
:mod:`daifugo_arena.gateway.credentials` (the bots' secrets, cached),
:mod:`daifugo_arena.gateway.connection` (one connection: answer matching, its outbox),
:mod:`daifugo_arena.gateway.presence` (the leases and their renewal),
:mod:`daifugo_arena.gateway.requests` and :mod:`daifugo_arena.gateway.answers` (the relay loops),
:mod:`daifugo_arena.gateway.liveness` (the alive beat, the stall, the probes),
:mod:`daifugo_arena.gateway.stories` (what the check says of a bot not connected).
Operations and sizing: docs/operations.md, "Gateways"; figures: docs/performance.md
(``bench/gateway_bench.py``).

What a connection does wrong, and what follows (the connection's requests in flight then get
the fault named, the bot's other connections are not touched):

========================================== ========================= ====================
a frame over ``MAX_FRAME_BYTES``           close 1009                ``body_too_large``
a binary frame, or one not a JSON object   close 1007                ``invalid_json``
(an answer to a request in flight that is
not strict JSON: ``NaN``, a duplicate key,
a long integer, deep nesting, a lone
surrogate, is that request's
``invalid_json``, as over HTTP, no close:
the worker parses it)
an answer to an id never sent to it, a     close 1008                ``invalid_json``
second answer (a late one or one to a
notice too), a frame without an id as its
first or last key (``wire.answer_id``)
more than ``FLOOD_BURST`` pings, pongs or  close 1008                ``connection_error``
fragments at once (``FLOOD_RATE`` a second)
frames not read for ``send_timeout_s``     connection dropped        ``timeout``
no proof within ``AUTH_TIMEOUT_S``         close 4408                (none: no requests)
more than ``MAX_PREAUTH_BYTES`` before the close 1009
welcome, or an auth frame over
``MAX_AUTH_FRAME_CHARS``
a wrong proof, an unknown bot              close 4401
more than ``FAILED_AUTH_BURST``            held unread ``TARPIT_S``
connections ended without a proof from     then dropped (429 behind
one client (``FAILED_AUTH_PER_S`` a        proxies)
second), or ``NETWORK_FAILED_AUTH_BURST``
from one /24
the proved secret rotated away (renewal)   close 4401                (none: given back)
over a connection cap, per bot or account  close 4429
over ``max_unauthenticated`` waiting, or   close 1013 (try again)
``max_unauthenticated_per_address`` from
one client (:func:`arena.clients.client_key`), or
``max_unauthenticated_per_network`` from
one /24 (IPv6: /48)
========================================== ========================= ====================

Before its welcome a connection costs the event loop a bounded amount whatever it sends
(docs/operations.md, "Gateways: what a stranger costs"): at most ``MAX_PREAUTH_BYTES`` read, an
auth frame of at most ``MAX_AUTH_FRAME_CHARS`` whose shape is checked before any JSON is parsed
(:func:`bots_sdk.wire.parse_auth`), at most one credentials read from the database (cached); a
client (or network) whose connections keep ending without a proof has them dropped as they are
accepted, for a while. After it, an answer is never parsed here: its id is read by
:func:`bots_sdk.wire.answer_id` (linear, small constant) and the frame forwarded as sent
(``R<frame>``) for the worker to parse (:mod:`arena.runner.connected`). The event loop's own
lateness (its stall) is measured every :data:`daifugo_arena.gateway.liveness.LAG_TICK_S` and
published with the alive key, so that the workers never charge a bot for time this gateway kept it
waiting.

A connection that closes or drops otherwise gives its requests back to the bot's list (front),
for its other connections or its reconnection (:mod:`arena.runner.connected`). So does one that
holds requests, has been silent ``SILENT_S`` while its bot opened another connection since,
and does not answer a ping within ``PROBE_S`` (a network that changed under the bot: no
close or reset ever comes; :meth:`Gateway._probe_silent`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from typing import Any

import redis
from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from arena import relay
from bots_sdk import wire
from daifugo_arena.gateway.admission import Admission
from daifugo_arena.gateway.answers import Answers
from daifugo_arena.gateway.config import GatewayConfig
from daifugo_arena.gateway.connection import Connection, read_answers, write_frames
from daifugo_arena.gateway.credentials import CredentialsFn, CredentialsReader, StillConnectFn
from daifugo_arena.gateway.hub import Hub
from daifugo_arena.gateway.liveness import Liveness
from daifugo_arena.gateway.presence import Presence
from daifugo_arena.gateway.requests import Requests
from daifugo_arena.gateway.stories import Stories

log = logging.getLogger("arena.gateway")


class Gateway:
    """A gateway (module docstring).

    Args:
        broker_url: the Redis the workers use (``ARENA_BROKER_URL``).
        credentials: how to read a bot's credentials (:data:`daifugo_arena.gateway.credentials.CredentialsFn`).
        config: where to listen, the caps and the timings (:class:`daifugo_arena.gateway.config.GatewayConfig`).
        still_connect: :data:`daifugo_arena.gateway.credentials.StillConnectFn` (default: each bot's
            ``credentials`` at each renewal, one call a bot).
    """

    def __init__(
        self,
        broker_url: str,
        credentials: CredentialsFn,
        config: GatewayConfig | None = None,
        *,
        still_connect: StillConnectFn | None = None,
    ):
        self.config = config or GatewayConfig()
        self.hub = Hub(broker_url, self.config)
        self.port = self.config.port
        self.credentials = CredentialsReader(credentials, still_connect, self.config)
        self.admission = Admission(self.hub, self.credentials)
        self.stories = Stories(self.hub, self.credentials)
        self.answers = Answers(self.hub)
        self.presence = Presence(self.hub, self.credentials, self.answers)
        self.requests = Requests(self.hub)
        self.liveness = Liveness(self.hub, self.presence, self.requests, self.stories)

    @property
    def id(self) -> str:
        return self.hub.id

    @property
    def bots(self) -> dict[int, list[Connection]]:
        """Bot id -> its connections held here."""
        return self.hub.bots

    @property
    def connections(self) -> int:
        return self.hub.connections

    # -- the process --------------------------------------------------------------------------
    async def run(self, stop: asyncio.Event, ready: Callable[[int], None] | None = None) -> None:
        """Serve until ``stop`` is set, then close every connection (1001: connect again) and
        give their requests back. ``ready(port)`` is called once listening."""
        self.hub.open()
        self.requests.open()
        self.liveness.open()
        async with serve(
            self._handler,
            self.config.host,
            self.port,
            process_request=self._http,
            create_connection=self.admission.socket_class(),
            max_size=wire.MAX_FRAME_BYTES,
            max_queue=4,
            compression=None,  # a zlib context per connection costs memory and CPU for little
            ping_interval=20,
            ping_timeout=20,
            open_timeout=10,
            close_timeout=2,
        ) as server:
            self.port = server.sockets[0].getsockname()[1] if server.sockets else self.port
            await self.liveness.alive()
            loops = [
                asyncio.create_task(self.liveness.lag_loop(), name="gateway-lag"),
                asyncio.create_task(self.requests.loop(), name="gateway-pop"),
                asyncio.create_task(self.liveness.tick_loop(), name="gateway-tick"),
                asyncio.create_task(self.answers.loop(), name="gateway-answers"),
                asyncio.create_task(self.presence.renew_loop(), name="gateway-renew"),
            ]
            log.info("gateway %s listening on %s:%s", self.id, self.config.host, self.port)
            if ready is not None:
                ready(self.port)
            await stop.wait()
            await self._shutdown(server, loops)

    async def _shutdown(self, server: Server, loops: list[asyncio.Task[Any]]) -> None:
        hub = self.hub
        hub.stopping = True
        try:
            await hub.r.rpush(relay.wake_key(self.id), "stop")  # the pop returns: nothing popped is lost
            pipe = hub.r.pipeline(transaction=False)  # the arena drops these bots, not they it
            relay.mark_dropped(pipe, list(hub.bots), time.time())
            await pipe.execute()
        except redis.RedisError:
            pass
        server.close(close_connections=True)  # 1001 to every bot; their requests go back
        await server.wait_closed()
        self.answers.close()  # the answer loop pushes what is left, then ends
        for t in loops:
            try:
                await asyncio.wait_for(t, 2.0)
            except (TimeoutError, asyncio.CancelledError, Exception):
                t.cancel()
        try:
            await hub.r.delete(relay.alive_key(self.id), relay.wake_key(self.id))
        except redis.RedisError:
            pass
        await hub.close()
        self.credentials.shutdown()

    def _http(self, conn: ServerConnection, request: Request) -> Response | None:
        path = request.path.split("?", 1)[0]
        if path == "/health":
            body = {
                "gateway": self.id,
                "bots": len(self.hub.bots),
                "connections": self.hub.connections,
                "unauthenticated": self.admission.unauthenticated,
                "stall_ms": self.liveness.stall,
            }
            return conn.respond(200, json.dumps(body) + "\n")
        if path != wire.PATH:
            return conn.respond(404, f"bots connect to {wire.PATH}\n")
        return self.admission.refusal(conn)

    # -- one connection -----------------------------------------------------------------------
    async def _handler(self, ws: ServerConnection) -> None:
        proved = await self.admission.admit(ws)
        if proved is None:
            self.stories.refused(ws)
            return
        creds, secret = proved
        conn = Connection(ws, creds, self.id, secret)
        why = await self.presence.register(conn)
        if why:
            await ws.close(wire.CLOSE_TOO_MANY, why)
            self.stories.write(creds.bot_id, "refused", code=wire.CLOSE_TOO_MANY, by="gateway")
            return
        writer = asyncio.create_task(write_frames(conn, self.config.send_timeout_s))
        try:
            await ws.send(
                json.dumps(
                    {
                        "type": "welcome",
                        "bot_id": creds.bot_id,
                        "name": creds.name,
                        "connection": conn.id,
                        "max_frame_bytes": wire.MAX_FRAME_BYTES,
                    }
                )
            )
            self.stories.write(creds.bot_id, "welcomed")
            await read_answers(conn, self.answers.queue)
        except ConnectionClosed:
            pass
        finally:
            writer.cancel()
            self.stories.closed(conn)
            await self.presence.unregister(conn)
