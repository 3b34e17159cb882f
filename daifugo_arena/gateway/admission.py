"""Before the welcome (:class:`Admission`): who may open a connection, the challenge and the
bot's proof, and the budgets of failed authentications per client and per network. Bounded
work whatever a stranger sends (docs/operations.md, "Gateways: what a stranger costs")."""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections import OrderedDict
from typing import Any

from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Response

from arena.clients import client_key, forwarded_address, network_key
from arena.usecases.bots import Credentials
from bots_sdk import wire
from daifugo_arena.gateway.credentials import CREDENTIALS_CACHED, CredentialsReader
from daifugo_arena.gateway.frames import BotSocket
from daifugo_arena.gateway.hub import Hub

log = logging.getLogger("arena.gateway")

#: Largest bot id (the ids' column is a 32-bit integer); a larger one is an unknown bot.
MAX_BOT_ID = 2**31 - 1
#: Failed authentications (an unknown bot, a wrong signature) one client may make a second, and
#: at once: past them its connections are refused (1013) before the database is asked, so a
#: stranger naming bot ids at random reads the database at this pace at most. A bot that
#: proves its secret never counts (a NAT of honest bots reconnecting at once is let in).
FAILED_AUTH_PER_S = 4.0
FAILED_AUTH_BURST = 16
#: The same for one network (:func:`arena.clients.network_key`: an IPv4 /24, an IPv6 /48): a
#: machine with many addresses gets four clients' worth.
NETWORK_FAILED_AUTH_PER_S = 16.0
NETWORK_FAILED_AUTH_BURST = 64
#: Most connections held unread at once after a refusal for a spent budget (``tarpit_s``,
#: :class:`daifugo_arena.gateway.config.GatewayConfig`); beyond, they are dropped at once.
TARPIT_MAX = 1024


def peer_address(ws: ServerConnection, proxy_hops: int = 0) -> str:
    """The address a connection comes from (:func:`arena.clients.forwarded_address`)."""
    peer = ws.remote_address[0] if ws.remote_address else ""
    forwarded = ws.request.headers.get_all("X-Forwarded-For") if ws.request is not None else []
    return forwarded_address(peer, forwarded, proxy_hops)


class Budgets:
    """A token bucket per client (``rate`` a second, ``burst`` at once), the least recently
    used forgotten past :data:`daifugo_arena.gateway.credentials.CREDENTIALS_CACHED` clients."""

    def __init__(self, rate: float, burst: float):
        self.rate, self.burst = rate, burst
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()

    def _tokens(self, client: str, now: float) -> float:
        tokens, at = self._buckets.pop(client, (self.burst, now))
        return min(self.burst, tokens + (now - at) * self.rate)

    def left(self, client: str) -> bool:
        """Whether ``client`` has a token left (none taken)."""
        now = time.monotonic()
        tokens = self._tokens(client, now)
        self._buckets[client] = (tokens, now)
        return tokens >= 1.0

    def take(self, client: str) -> None:
        """Take a token of ``client`` (down to none)."""
        now = time.monotonic()
        self._buckets[client] = (max(0.0, self._tokens(client, now) - 1.0), now)
        if len(self._buckets) > CREDENTIALS_CACHED:
            self._buckets.popitem(last=False)


class Admission:
    """The connections waiting to authenticate, and what refuses one."""

    def __init__(self, hub: Hub, reader: CredentialsReader):
        self.hub, self.reader = hub, reader
        self.unauthenticated = 0
        #: client (:func:`arena.clients.client_key`) -> its connections waiting to authenticate
        self.waiting: dict[str, int] = {}
        #: network (:func:`arena.clients.network_key`) -> its connections waiting to authenticate
        self.waiting_networks: dict[str, int] = {}
        #: per client, and per network: the budget of failed authentications
        self._failures = Budgets(FAILED_AUTH_PER_S, FAILED_AUTH_BURST)
        self._network_failures = Budgets(NETWORK_FAILED_AUTH_PER_S, NETWORK_FAILED_AUTH_BURST)
        #: connections refused at once, before any byte of theirs was parsed (a spent budget)
        self.refused_early = 0
        #: of those, held unread until they are dropped (``tarpit_s``)
        self.tarpit = 0

    # -- before the upgrade -----------------------------------------------------------------------
    def socket_class(self) -> type[BotSocket]:
        """:class:`BotSocket` bound to this gateway: with no proxy in front, a connection of a
        client (or network) whose failed authentications spent its budget is dropped as it is
        accepted, before any byte of it is parsed."""
        admission = self

        class GatewaySocket(BotSocket):
            def connection_made(self, transport: Any) -> None:
                super().connection_made(transport)
                if admission.hub.config.proxy_hops > 0:
                    return  # the client is known only from the request's X-Forwarded-For (refusal)
                peer = transport.get_extra_info("peername")
                address = str(peer[0]) if peer else ""
                if not admission._allowed(client_key(address), network_key(address)):
                    admission._refuse_early(self, transport)

        return GatewaySocket

    def _refuse_early(self, sock: BotSocket, transport: Any) -> None:
        """Refuse a connection as it is accepted: nothing of it is read; it is held
        ``tarpit_s`` seconds (while fewer than :data:`TARPIT_MAX` are), then dropped."""
        self.refused_early += 1
        sock.flood = "refused: too many failed authentications"
        transport.pause_reading()
        if self.tarpit >= TARPIT_MAX:
            transport.abort()
            return
        self.tarpit += 1

        def drop() -> None:
            self.tarpit -= 1
            transport.abort()

        asyncio.get_running_loop().call_later(self.hub.config.tarpit_s, drop)

    def _allowed(self, client: str, network: str) -> bool:
        """Whether ``client`` and its ``network`` have failed authentications left."""
        return self._failures.left(client) and self._network_failures.left(network)

    def _failed(self, client: str, network: str) -> None:
        """A connection of ``client`` (of ``network``) ended without authenticating, its fault."""
        self._failures.take(client)
        self._network_failures.take(network)

    def refusal(self, conn: ServerConnection) -> Response | None:
        """The HTTP answer refusing an upgrade on :data:`bots_sdk.wire.PATH` (the gateway is full
        or stopping: 503; a spent budget: 429), or None."""
        cfg = self.hub.config
        if self.hub.connections + self.unauthenticated >= cfg.max_connections or self.hub.stopping:
            return conn.respond(503, "this gateway is full: try another\n")
        peer = peer_address(conn, cfg.proxy_hops)
        if not self._allowed(client_key(peer), network_key(peer)):
            return conn.respond(429, "too many failed authentications from this address: try again later\n")
        return None

    # -- after the upgrade ------------------------------------------------------------------------
    async def admit(self, ws: ServerConnection) -> tuple[Credentials, str] | None:
        """The bot's credentials and the secret it proved, or None (the connection is closed):
        the caps on connections waiting, then :meth:`authenticate`; a failure that was the
        bot's counts against its client's budgets."""
        cfg = self.hub.config
        if self.unauthenticated >= cfg.max_unauthenticated:
            await ws.close(1013, "too many connections waiting to authenticate")
            return None
        peer = peer_address(ws, cfg.proxy_hops)
        address, network = client_key(peer), network_key(peer)
        if self.waiting.get(address, 0) >= cfg.max_unauthenticated_per_address:
            self._failed(address, network)
            await ws.close(1013, "too many connections waiting to authenticate from this address")
            return None
        if self.waiting_networks.get(network, 0) >= cfg.max_unauthenticated_per_network:
            self._failed(address, network)
            await ws.close(1013, "too many connections waiting to authenticate from this network")
            return None
        self.unauthenticated += 1
        self.waiting[address] = self.waiting.get(address, 0) + 1
        self.waiting_networks[network] = self.waiting_networks.get(network, 0) + 1
        arena_down: list[bool] = []
        try:
            proved = await self.authenticate(ws, address, arena_down)
            if proved is None and not arena_down:
                self._failed(address, network)
        finally:
            self.unauthenticated -= 1
            for counts, key in ((self.waiting, address), (self.waiting_networks, network)):
                left = counts.pop(key) - 1
                if left:
                    counts[key] = left
        if proved is not None and isinstance(ws, BotSocket):
            ws.authenticated = True
        return proved

    async def authenticate(
        self, ws: ServerConnection, client: str = "", arena_down: list[bool] | None = None
    ) -> tuple[Credentials, str] | None:
        """The bot's credentials and the secret it proved, or None (the connection is closed;
        ``arena_down`` gets True appended when that was the arena's failure, not the bot's).
        Bounded work, whatever the stranger sends (module docstring)."""
        nonce = secrets.token_hex(16)
        try:
            await ws.send(wire.challenge_frame(nonce))
            raw = await asyncio.wait_for(ws.recv(), self.hub.config.auth_timeout_s)
        except TimeoutError:
            await ws.close(wire.CLOSE_AUTH_TIMEOUT, "no authentication within the time allowed")
            return None
        except ConnectionClosed:
            return None
        if isinstance(raw, str) and len(raw) > wire.MAX_AUTH_FRAME_CHARS:
            await ws.close(wire.CLOSE_TOO_BIG, f"an auth frame is at most {wire.MAX_AUTH_FRAME_CHARS} characters")
            return None
        frame = wire.parse_auth(raw) if isinstance(raw, str) else None
        bot_id = frame.get("bot_id") if frame else None
        if isinstance(ws, BotSocket) and type(bot_id) is int:
            ws.claimed = bot_id
        if not frame or type(bot_id) is not int:
            await ws.close(wire.CLOSE_AUTH_FAILED, "authentication failed: expected an auth frame")
            return None
        if not self._failures.left(client):
            await ws.close(1013, "too many failed authentications from this address: try again later")
            return None
        if not 1 <= bot_id <= MAX_BOT_ID:  # no such bot: the database is not asked
            await ws.close(wire.CLOSE_AUTH_FAILED, "authentication failed (unknown bot or wrong signature)")
            return None
        try:
            creds = await self.reader.read(bot_id)
        except Exception as exc:  # the database is down: not the bot's fault
            log.warning("credentials of bot %s unreadable: %s", bot_id, exc)
            if arena_down is not None:
                arena_down.append(True)
            await ws.close(1011, "the arena cannot check credentials now: try again")
            return None
        if creds is None or not wire.auth_valid(frame, creds.secrets, nonce):
            await ws.close(wire.CLOSE_AUTH_FAILED, "authentication failed (unknown bot or wrong signature)")
            return None
        if creds.transport != "connect":
            await ws.close(wire.CLOSE_NOT_CONNECT_BOT, "this bot is registered with a URL: the arena calls it")
            return None
        return creds, next((s for s in creds.secrets if wire.auth_valid(frame, [s], nonce)), "")
