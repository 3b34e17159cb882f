"""The gateway process (``arena gateway``): bot connections in, requests and answers through Redis.

One asyncio process on ``websockets``. For each connection (path :data:`bots_sdk.wire.PATH`):
the challenge, the bot's proof (:func:`bots_sdk.wire.auth_valid`, checked against the
secrets :data:`CredentialsFn` returns), the caps (:meth:`Gateway._register`: per bot and per
account, leases in Redis), then two tasks: a reader (answers queued for Redis) and a writer
(frames from its outbox to the socket). One task waits on the gateway's doorbell list (the
ids of bots whose request list got requests, rung by whoever pushed them, :mod:`arena.relay`),
pops up to :data:`POP_BATCH` requests of each bot rung that it holds, marking them held by
this gateway in the same step (one round trip for all), and hands each request to the bot's
connection with the fewest requests in flight; another pushes the queued answers, all those
waiting in one pipeline. Keys and envelopes: :mod:`arena.relay`.
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
one client (:func:`client_address`), or
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
lateness (its stall) is measured every :data:`LAG_TICK_S` and published with the alive key, so
that the workers never charge a bot for time this gateway kept it waiting.

A connection that closes or drops otherwise gives its requests back to the bot's list (front),
for its other connections or its reconnection (:mod:`arena.runner.connected`). So does one that
holds requests, has been silent :data:`SILENT_S` while its bot opened another connection since,
and does not answer a ping within :data:`PROBE_S` (a network that changed under the bot: no
close or reset ever comes; :meth:`Gateway._probe_silent`).
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import os
import secrets
import socket
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import redis
import redis.asyncio as aioredis
from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.frames import BINARY, CLOSE, PING, TEXT, Frame
from websockets.http11 import Request, Response
from websockets.protocol import State

from arena import faults, relay
from arena.clients import client_key, forwarded_address, network_key
from arena.faults import Fault, FaultCode
from arena.leases import LeaseSet, renew_many
from arena.usecases.bots import Credentials
from bots_sdk import wire

log = logging.getLogger("arena.gateway")

#: How a gateway reads a bot's credentials (blocking; called in a thread): None when the bot
#: does not exist or was deleted. ``arena gateway`` reads the database
#: (:func:`arena.usecases.bots.credentials`).
CredentialsFn = Callable[[int], Credentials | None]
#: Which of these bots may still connect (they exist, are not deleted and have the transport
#: ``connect``), each with the end of its previous secret's grace, as
#: :attr:`~arena.usecases.bots.Credentials.grace_until` (Unix seconds, None: never rotated):
#: ``{bot id: grace_until}``. Blocking; called in a thread, once per presence renewal for every
#: bot held; a rotation since a connection's credentials were read shows as another
#: ``grace_until`` (:meth:`Gateway._renew` then reads that bot's credentials). ``arena gateway``
#: asks the database in one query, no secret read or decrypted
#: (:func:`arena.usecases.bots.connect_bots`).
StillConnectFn = Callable[[list[int]], Mapping[int, float | None]]

#: Seconds a bot's credentials are cached (a rotation or a deletion is seen within this).
CREDENTIALS_TTL_S = 5.0
#: Longest read of a bot's credentials, seconds: past it the database counts as down (a
#: connection authenticating is closed with 1011, try again; the renewal keeps connections).
CREDENTIALS_TIMEOUT_S = 5.0
#: Largest bot id (the ids' column is a 32-bit integer); a larger one is an unknown bot.
MAX_BOT_ID = 2**31 - 1
#: Threads reading credentials from the database.
DB_THREADS = 4
#: Most frames waiting in a connection's outbox; more is a slow reader.
OUTBOX_FRAMES = 1024
#: Seconds one frame may take to be written to a bot's socket; more is a slow reader.
SEND_TIMEOUT_S = 10.0
#: Seconds an id stays known after its request expired (a late answer is ignored, not a fault).
LATE_S = 60.0
#: Seconds of the request lists' BLMPOP (it returns at once when a request or a wake-up comes).
BLPOP_S = 5.0
#: Most requests one pop takes from a bot's list at once.
POP_BATCH = 64
#: Most doorbells (bot ids, arena.relay) one pop takes at once.
RINGS_BATCH = 512
#: Seconds between two looks at every held bot's request list, rung or not (requests pushed
#: by a worker that does not ring, e.g. during a rolling upgrade, wait at most this).
SWEEP_S = 5.0
#: Seconds between two renewals of the connections' presence leases.
RENEW_S = relay.LEASE_S / 3
#: First pause before answers Redis refused are pushed again, seconds (doubling up to
#: :data:`ANSWER_RETRY_MAX_S`); they are dropped only past their request's deadline.
ANSWER_RETRY_S = 0.05
ANSWER_RETRY_MAX_S = 1.0
#: Most characters of a bad frame kept in its fault.
RECEIVED_CHARS = 500
#: Frames a connection may send beyond whole messages (pings, pongs, fragments of a message) at
#: once, refilled at :data:`FLOOD_RATE` a second; more is a flood.
FLOOD_BURST = 64
FLOOD_RATE = 16.0
#: Seconds a connection holding requests may be silent (no frame, no pong) before it is
#: probed, when its bot has a newer connection (:meth:`Gateway._probe_silent`).
SILENT_S = 5.0
#: Seconds a probe's ping has for its pong before the connection is dropped.
PROBE_S = 5.0
#: Most connections of one client (:func:`arena.clients.client_key`: an IPv4 address, an IPv6
#: /64) waiting to authenticate at once.
MAX_UNAUTHENTICATED_PER_ADDRESS = 64
#: Least seconds between two writes of a connection's keep-alive pings to its bot's story
#: (:class:`arena.relay.Story`: the check warns about a bot that sends none).
PING_WRITE_S = 2.0
#: Most connections of one network (:func:`arena.clients.network_key`: an IPv4 /24, an IPv6 /48)
#: waiting to authenticate at once: one machine holding many addresses of a network cannot
#: take the whole of ``max_unauthenticated`` (2,000: at least 8 networks are needed).
MAX_UNAUTHENTICATED_PER_NETWORK = 256
#: Seconds between two looks at the event loop's lateness (its stall, published with the
#: alive key, :data:`arena.relay.ALIVE_BEAT`).
LAG_TICK_S = 0.05
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
#: Seconds a connection refused for a spent budget is held, unread, before it is dropped: a
#: stranger reconnecting in a loop opens a connection per this time, not thousands a second
#: (each costs the machine a TCP handshake). At most :data:`TARPIT_MAX` are held at once;
#: beyond, they are dropped at once.
TARPIT_S = 5.0
TARPIT_MAX = 1024
#: Most bots whose credentials are cached (known bots, and unknown ids apart: a stranger's
#: unknown ids never push a known bot's credentials out).
CREDENTIALS_CACHED = 10_000


def client_address(ws: ServerConnection, proxy_hops: int = 0) -> str:
    """The address a connection comes from: the peer's, or behind ``proxy_hops`` trusted proxies
    the one they put in ``X-Forwarded-For`` (``ARENA_PROXY_HOPS``, as the API); an IPv6 address
    as its /64 network (one host holds a whole /64)."""
    return client_key(peer_address(ws, proxy_hops))


def peer_address(ws: ServerConnection, proxy_hops: int = 0) -> str:
    """The address a connection comes from (:func:`arena.clients.forwarded_address`)."""
    peer = ws.remote_address[0] if ws.remote_address else ""
    forwarded = ws.request.headers.get_all("X-Forwarded-For") if ws.request is not None else []
    return forwarded_address(peer, forwarded, proxy_hops)


class _Budgets:
    """A token bucket per client (``rate`` a second, ``burst`` at once), the least recently
    used forgotten past :data:`CREDENTIALS_CACHED` clients."""

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


class _CredentialsCache:
    """Credentials read, each until a deadline (monotonic seconds): known bots and unknown
    ids in two bounded LRU maps (unknown ids never push a known bot out)."""

    def __init__(self, size: int = CREDENTIALS_CACHED):
        self.size = size
        self._known: OrderedDict[int, tuple[float, Credentials]] = OrderedDict()
        self._unknown: OrderedDict[int, float] = OrderedDict()

    def get(self, bot_id: int, now: float) -> tuple[bool, Credentials | None]:
        """``(hit, credentials)``: a hit with None is an unknown bot."""
        known = self._known.get(bot_id)
        if known is not None and known[0] > now:
            self._known.move_to_end(bot_id)
            return True, known[1]
        until = self._unknown.get(bot_id)
        if until is not None and until > now:
            return True, None
        return False, None

    def put(self, bot_id: int, creds: Credentials | None, until: float) -> None:
        self._known.pop(bot_id, None)
        self._unknown.pop(bot_id, None)
        if creds is not None:
            self._known[bot_id] = (until, creds)
            if len(self._known) > self.size:
                self._known.popitem(last=False)
        else:
            self._unknown[bot_id] = until
            if len(self._unknown) > self.size:
                self._unknown.popitem(last=False)

    def clear(self) -> None:
        self._known.clear()
        self._unknown.clear()


class BotSocket(ServerConnection):
    """A bot's socket: counts the frames that are not whole messages (pings, pongs, fragments).

    A whole message must answer a request (one per request, :meth:`Gateway._reader`), but each
    ping is answered by a pong the peer may never read: past :data:`FLOOD_BURST` such frames
    (refilled at :data:`FLOOD_RATE` a second) the connection is failed with 1008, no more of it
    is read, :attr:`flood` says why, and it is dropped ``close_timeout`` seconds later.
    """

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.tokens, self.refilled = float(FLOOD_BURST), time.monotonic()
        #: when the bot was last heard from (any frame, pongs included), monotonic seconds
        self.heard = time.monotonic()
        #: when the bot last pinged (the protocol's keep-alive), Unix seconds; None: never
        self.pinged: float | None = None
        #: the bot id its auth frame claimed (None: none yet, or not an integer)
        self.claimed: int | None = None
        #: the fault detail once flooded, else None
        self.flood: str | None = None
        #: the connection proved its bot (set by the gateway once welcomed)
        self.authenticated = False
        #: bytes read before that (:data:`bots_sdk.wire.MAX_PREAUTH_BYTES` at most)
        self.preauth_bytes = 0

    def data_received(self, data: bytes) -> None:
        if self.flood is not None:
            return  # failed: nothing more is read into the connection
        if not self.authenticated:
            self.preauth_bytes += len(data)
            if self.preauth_bytes > wire.MAX_PREAUTH_BYTES:  # a stranger: no more of it is parsed
                self._cut(
                    wire.CLOSE_TOO_BIG,
                    f"more than {wire.MAX_PREAUTH_BYTES} bytes before authentication",
                )
                return
        super().data_received(data)

    def _cut(self, code: int, reason: str) -> None:
        """Fail the connection with ``code`` (when open), read nothing more of it, drop it
        ``close_timeout`` seconds later."""
        self.flood = reason
        if self.protocol.state is State.OPEN:
            self.protocol.fail(code, reason)
            self.send_data()  # the close frame, then the end of the stream
        if self.transport is not None:
            self.transport.pause_reading()
            self.loop.call_later(self.close_timeout or 2.0, self.transport.abort)

    def process_event(self, event: Any) -> None:
        if self.flood is not None:
            return  # failed: nothing more is read into the connection
        super().process_event(event)
        self.heard = time.monotonic()
        if isinstance(event, Frame) and event.opcode is PING:
            self.pinged = time.time()
        if not isinstance(event, Frame) or event.opcode is CLOSE or (event.fin and event.opcode in (TEXT, BINARY)):
            return  # a whole message, or the close
        now = time.monotonic()
        self.tokens = min(float(FLOOD_BURST), self.tokens + (now - self.refilled) * FLOOD_RATE) - 1.0
        self.refilled = now
        if self.tokens >= 0:
            return
        self._cut(wire.CLOSE_PROTOCOL, "a flood of pings, pongs or fragments")
        self.flood = (
            f"the gateway closed the connection: a flood of frames (more than {FLOOD_BURST} pings, pongs or"
            f" fragments at once, {FLOOD_RATE:g} a second)"
        )


class Connection:
    """One authenticated bot connection held by this gateway."""

    def __init__(self, ws: ServerConnection, creds: Credentials, gateway_id: str, secret: str = ""):
        self.ws = ws
        self.creds = creds
        #: the signing secret the connection proved (it is closed once that one is no longer valid)
        self.secret = secret
        self.bot_id = creds.bot_id
        self.id = secrets.token_hex(6)
        self.since = time.time()
        self.member = relay.member(gateway_id, self.id, self.since)
        #: request id -> (deadline, Unix seconds; the envelope as popped)
        self.pending: dict[str, tuple[float, bytes]] = {}
        #: request id -> when it is forgotten (expired requests, notices)
        self.late: dict[str, float] = {}
        self.outbox: asyncio.Queue[str] = asyncio.Queue(OUTBOX_FRAMES)
        #: the fault its requests in flight get when it closes: (kind, detail, received)
        self.violation: tuple[str, Fault, str] | None = None
        #: a probe of it runs (:meth:`Gateway._probe`), or ran since it was last heard from
        self.probed = False
        #: when its bot's connections on the other gateways were last looked up, Unix seconds
        self.looked = 0.0
        #: the ping time last written to its bot's story (Unix seconds), and when it was written
        self.ping_written: tuple[float | None, float] = (None, 0.0)

    def offend(self, kind: str, why: Fault, received: str = "") -> None:
        if self.violation is None:
            self.violation = (kind, why, received[:RECEIVED_CHARS])


#: Why :meth:`Gateway._renew` closes a connection, by close code.
CLOSE_REASONS = {
    wire.CLOSE_BOT_GONE: "the bot was deleted or now has a URL",
    wire.CLOSE_AUTH_FAILED: "the secret this connection proved is no longer valid",
}


def _same(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode("utf-8"), b.encode("utf-8"))


def _proof_stands(conn: Connection, grace_until: float | None, now: float) -> bool:
    """Whether the secret ``conn`` proved is still valid, judged without reading the secrets:
    the bot's secrets were not rotated since ``conn.creds`` were read (its ``grace_until`` is
    the same), and ``conn`` proved the current secret, or the previous one whose grace runs
    still at ``now`` (Unix seconds). False: its credentials must be read to judge it."""
    creds = conn.creds
    if grace_until != creds.grace_until or not creds.secrets:
        return False
    if _same(conn.secret, creds.secrets[0]):
        return True
    return grace_until is not None and now < grace_until and any(_same(conn.secret, s) for s in creds.secrets[1:])


def _verdict(conn: Connection, creds: Credentials | None) -> int | None:
    """The close code of ``conn`` given its bot's credentials as read now: 4410 (deleted, or
    now called at a URL), 4401 (the secret it proved is no longer valid), or None: it stays
    (and is judged against these credentials from now on)."""
    if creds is None or creds.transport != "connect":
        return wire.CLOSE_BOT_GONE
    if not any(_same(conn.secret, s) for s in creds.secrets):
        return wire.CLOSE_AUTH_FAILED
    conn.creds = creds
    return None


class Gateway:
    """A gateway (module docstring).

    Args:
        broker_url: the Redis the workers use (``ARENA_BROKER_URL``).
        credentials: how to read a bot's credentials (:data:`CredentialsFn`).
        host, port: where to listen (port 0: any free port, see :attr:`port` once ready).
        max_per_bot, max_per_account: connection caps (``ARENA_GATEWAY_MAX_PER_BOT`` ...).
        max_connections: most connections of this process (more are refused with 1013).
        max_unauthenticated: most connections waiting to authenticate at once (more: 1013).
        max_unauthenticated_per_address: the same, from one client (:func:`client_address`;
            more: 1013), so that one client cannot hold every place of ``max_unauthenticated``.
        max_unauthenticated_per_network: the same, from one network (an IPv4 /24, an IPv6 /48,
            :func:`arena.clients.network_key`; more: 1013): one machine holding many addresses.
        tarpit_s: :data:`TARPIT_S`.
        proxy_hops: trusted reverse proxies in front (:func:`client_address`).
        send_timeout_s: :data:`SEND_TIMEOUT_S`.
        renew_s: seconds between two renewals of the connections (:data:`RENEW_S`).
        credentials_ttl_s: seconds credentials are cached (:data:`CREDENTIALS_TTL_S`).
        credentials_timeout_s: longest read of a bot's credentials (:data:`CREDENTIALS_TIMEOUT_S`).
        gateway_id: this gateway's id (default: host, pid and a random part).
        still_connect: :data:`StillConnectFn` (default: each bot's ``credentials`` at each
            renewal, one call a bot).
        sweep_s: :data:`SWEEP_S`.
    """

    def __init__(
        self,
        broker_url: str,
        credentials: CredentialsFn,
        *,
        host: str = "127.0.0.1",
        port: int = 8765,
        max_per_bot: int = 8,
        max_per_account: int = 32,
        max_connections: int = 20_000,
        max_unauthenticated: int = 2_000,
        max_unauthenticated_per_address: int = MAX_UNAUTHENTICATED_PER_ADDRESS,
        max_unauthenticated_per_network: int = MAX_UNAUTHENTICATED_PER_NETWORK,
        tarpit_s: float = TARPIT_S,
        proxy_hops: int = 0,
        auth_timeout_s: float = wire.AUTH_TIMEOUT_S,
        send_timeout_s: float = SEND_TIMEOUT_S,
        renew_s: float = RENEW_S,
        credentials_ttl_s: float = CREDENTIALS_TTL_S,
        credentials_timeout_s: float = CREDENTIALS_TIMEOUT_S,
        gateway_id: str | None = None,
        still_connect: StillConnectFn | None = None,
        sweep_s: float = SWEEP_S,
    ):
        self.broker_url = broker_url
        self.credentials = credentials
        self.still_connect = still_connect
        self.sweep_s = sweep_s
        self.host, self.port = host, port
        self.max_per_bot, self.max_per_account = max_per_bot, max_per_account
        self.max_connections, self.max_unauthenticated = max_connections, max_unauthenticated
        self.max_unauthenticated_per_address, self.proxy_hops = max_unauthenticated_per_address, proxy_hops
        self.max_unauthenticated_per_network = max_unauthenticated_per_network
        self.tarpit_s = tarpit_s
        self.auth_timeout_s, self.send_timeout_s = auth_timeout_s, send_timeout_s
        self.renew_s, self.credentials_ttl_s = renew_s, credentials_ttl_s
        self.credentials_timeout_s = credentials_timeout_s
        self.id = gateway_id or f"gw-{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(3)}"
        self.bots: dict[int, list[Connection]] = {}
        self.unauthenticated = 0
        #: client (:func:`client_address`) -> its connections waiting to authenticate
        self.waiting: dict[str, int] = {}
        #: network (:func:`arena.clients.network_key`) -> its connections waiting to authenticate
        self.waiting_networks: dict[str, int] = {}
        self.delivered = 0
        self._cache = _CredentialsCache()
        #: per client, and per network: the budget of failed authentications
        self._failures = _Budgets(FAILED_AUTH_PER_S, FAILED_AUTH_BURST)
        self._network_failures = _Budgets(NETWORK_FAILED_AUTH_PER_S, NETWORK_FAILED_AUTH_BURST)
        #: connections refused at once, before any byte of theirs was parsed (a spent budget)
        self.refused_early = 0
        #: of those, held unread until they are dropped (:data:`TARPIT_S`)
        self.tarpit = 0
        #: the event loop's stall: milliseconds it was late, this second and the last one
        self.stall_ms = [0.0, 0.0]
        self._tasks: set[asyncio.Task[Any]] = set()
        #: the database reads' own threads: a database that hangs holds these, never the
        #: threads of the Redis calls (asyncio.to_thread)
        self._db = ThreadPoolExecutor(DB_THREADS, thread_name_prefix="gateway-db")
        self._stopping = False
        #: answers and faults read since the last push: (request id, answer list item, the
        #: request's deadline in Unix seconds)
        self._answers: list[tuple[str, bytes, float]] = []
        self._answers_ready = asyncio.Event()
        self._closed = False

    # -- the process --------------------------------------------------------------------------
    async def run(self, stop: asyncio.Event, ready: Callable[[int], None] | None = None) -> None:
        """Serve until ``stop`` is set, then close every connection (1001: connect again) and
        give their requests back. ``ready(port)`` is called once listening."""
        self.r = aioredis.Redis.from_url(self.broker_url, socket_timeout=5, socket_connect_timeout=5)
        self.rpop = aioredis.Redis.from_url(self.broker_url, socket_timeout=None, socket_connect_timeout=5)
        self._pop_and_hold = self.rpop.register_script(relay.POP_AND_HOLD)
        self._beat = self.r.register_script(relay.ALIVE_BEAT)
        self.sync = redis.Redis.from_url(self.broker_url, socket_timeout=5, socket_connect_timeout=5)
        async with serve(
            self._handler,
            self.host,
            self.port,
            process_request=self._http,
            create_connection=self._socket_class(),
            max_size=wire.MAX_FRAME_BYTES,
            max_queue=4,
            compression=None,  # a zlib context per connection costs memory and CPU for little
            ping_interval=20,
            ping_timeout=20,
            open_timeout=10,
            close_timeout=2,
        ) as server:
            self.port = server.sockets[0].getsockname()[1] if server.sockets else self.port
            await self._alive()
            loops = [
                asyncio.create_task(self._lag_loop(), name="gateway-lag"),
                asyncio.create_task(self._pop_loop(), name="gateway-pop"),
                asyncio.create_task(self._tick_loop(), name="gateway-tick"),
                asyncio.create_task(self._answer_loop(), name="gateway-answers"),
                asyncio.create_task(self._renew_loop(), name="gateway-renew"),
            ]
            log.info("gateway %s listening on %s:%s", self.id, self.host, self.port)
            if ready is not None:
                ready(self.port)
            await stop.wait()
            await self._shutdown(server, loops)

    async def _shutdown(self, server: Server, loops: list[asyncio.Task[Any]]) -> None:
        self._stopping = True
        try:
            await self.r.rpush(relay.wake_key(self.id), "stop")  # the pop returns: nothing popped is lost
            pipe = self.r.pipeline(transaction=False)  # the arena drops these bots, not they it
            relay.mark_dropped(pipe, list(self.bots), time.time())
            await pipe.execute()
        except redis.RedisError:
            pass
        server.close(close_connections=True)  # 1001 to every bot; their requests go back
        await server.wait_closed()
        self._closed = True  # the answer loop pushes what is left, then ends
        self._answers_ready.set()
        for t in loops:
            try:
                await asyncio.wait_for(t, 2.0)
            except (TimeoutError, asyncio.CancelledError, Exception):
                t.cancel()
        try:
            await self.r.delete(relay.alive_key(self.id), relay.wake_key(self.id))
        except redis.RedisError:
            pass
        for c in (self.r, self.rpop):
            await c.aclose()
        self.sync.close()
        self._db.shutdown(wait=False, cancel_futures=True)

    def _background(self, aw: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(aw)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    @property
    def connections(self) -> int:
        return sum(len(c) for c in self.bots.values())

    # -- before the upgrade -----------------------------------------------------------------------
    def _socket_class(self) -> type[BotSocket]:
        """:class:`BotSocket` bound to this gateway: with no proxy in front, a connection of a
        client (or network) whose failed authentications spent its budget is dropped as it is
        accepted, before any byte of it is parsed."""
        gateway = self

        class GatewaySocket(BotSocket):
            def connection_made(self, transport: Any) -> None:
                super().connection_made(transport)
                if gateway.proxy_hops > 0:
                    return  # the client is known only from the request's X-Forwarded-For (_http)
                peer = transport.get_extra_info("peername")
                address = str(peer[0]) if peer else ""
                if not gateway._allowed(client_key(address), network_key(address)):
                    gateway._refuse_early(self, transport)

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

        asyncio.get_running_loop().call_later(self.tarpit_s, drop)

    def _allowed(self, client: str, network: str) -> bool:
        """Whether ``client`` and its ``network`` have failed authentications left."""
        return self._failures.left(client) and self._network_failures.left(network)

    def _failed(self, client: str, network: str) -> None:
        """A connection of ``client`` (of ``network``) ended without authenticating, its fault."""
        self._failures.take(client)
        self._network_failures.take(network)

    def _http(self, conn: ServerConnection, request: Request) -> Response | None:
        path = request.path.split("?", 1)[0]
        if path == "/health":
            body = {
                "gateway": self.id,
                "bots": len(self.bots),
                "connections": self.connections,
                "unauthenticated": self.unauthenticated,
                "stall_ms": round(max(self.stall_ms)),
            }
            return conn.respond(200, json.dumps(body) + "\n")
        if path != wire.PATH:
            return conn.respond(404, f"bots connect to {wire.PATH}\n")
        if self.connections + self.unauthenticated >= self.max_connections or self._stopping:
            return conn.respond(503, "this gateway is full: try another\n")
        peer = peer_address(conn, self.proxy_hops)
        if not self._allowed(client_key(peer), network_key(peer)):
            return conn.respond(429, "too many failed authentications from this address: try again later\n")
        return None

    # -- one connection -----------------------------------------------------------------------
    async def _handler(self, ws: ServerConnection) -> None:
        if self.unauthenticated >= self.max_unauthenticated:
            await ws.close(1013, "too many connections waiting to authenticate")
            return
        peer = peer_address(ws, self.proxy_hops)
        address, network = client_key(peer), network_key(peer)
        if self.waiting.get(address, 0) >= self.max_unauthenticated_per_address:
            self._failed(address, network)
            await ws.close(1013, "too many connections waiting to authenticate from this address")
            return
        if self.waiting_networks.get(network, 0) >= self.max_unauthenticated_per_network:
            self._failed(address, network)
            await ws.close(1013, "too many connections waiting to authenticate from this network")
            return
        self.unauthenticated += 1
        self.waiting[address] = self.waiting.get(address, 0) + 1
        self.waiting_networks[network] = self.waiting_networks.get(network, 0) + 1
        arena_down: list[bool] = []
        try:
            proved = await self._authenticate(ws, address, arena_down)
            if proved is None and not arena_down:
                self._failed(address, network)
        finally:
            self.unauthenticated -= 1
            for counts, key in ((self.waiting, address), (self.waiting_networks, network)):
                left = counts.pop(key) - 1
                if left:
                    counts[key] = left
        if proved is None:
            self._story_refused(ws)
            return
        if isinstance(ws, BotSocket):
            ws.authenticated = True
        creds, secret = proved
        conn = Connection(ws, creds, self.id, secret)
        why = await self._register(conn)
        if why:
            await ws.close(wire.CLOSE_TOO_MANY, why)
            self._story(creds.bot_id, "refused", code=wire.CLOSE_TOO_MANY, by="gateway")
            return
        writer = asyncio.create_task(self._writer(conn))
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
            self._story(creds.bot_id, "welcomed")
            await self._reader(conn)
        except ConnectionClosed:
            pass
        finally:
            writer.cancel()
            self._story_closed(conn)
            await self._unregister(conn)

    async def _authenticate(
        self, ws: ServerConnection, client: str = "", arena_down: list[bool] | None = None
    ) -> tuple[Credentials, str] | None:
        """The bot's credentials and the secret it proved, or None (the connection is closed;
        ``arena_down`` gets True appended when that was the arena's failure, not the bot's).
        Bounded work, whatever the stranger sends (module docstring)."""
        nonce = secrets.token_hex(16)
        try:
            await ws.send(wire.challenge_frame(nonce))
            raw = await asyncio.wait_for(ws.recv(), self.auth_timeout_s)
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
            creds = await self._credentials(bot_id)
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

    # -- the bots' stories (arena.relay.Story: what the check says of a bot that is not connected) --
    def _story(self, bot_id: int, event: str, *, code: int | None = None, by: str = "") -> None:
        """Write ``event`` to the story of ``bot_id`` (in the background; a failure is logged)."""

        async def write() -> None:
            pipe = self.r.pipeline(transaction=False)
            relay.record_story(pipe, bot_id, event, code=code, by=by)
            try:
                await pipe.execute()
            except (redis.RedisError, OSError) as exc:
                log.warning("story of bot %s not written: %s", bot_id, exc)

        self._background(write())

    def _story_refused(self, ws: ServerConnection) -> None:
        """A connection refused before its welcome: written to the story of the bot it claimed,
        when that bot exists (its credentials were read: a stranger's random ids write nothing)."""
        bot_id = ws.claimed if isinstance(ws, BotSocket) else None
        sent = ws.protocol.close_sent
        if bot_id is None or sent is None:
            return
        hit, creds = self._cache.get(bot_id, time.monotonic())
        if not hit or creds is None:
            return
        self._story(bot_id, "refused", code=sent.code, by="gateway")

    def _story_closed(self, conn: Connection) -> None:
        """A welcomed connection ended: with the close code of whoever closed first (none: it dropped)."""
        p = conn.ws.protocol
        if p.close_rcvd is not None and (p.close_sent is None or p.close_rcvd_then_sent):
            code, by = p.close_rcvd.code, "bot"
        elif p.close_sent is not None:
            code, by = p.close_sent.code, "gateway"
        else:
            code, by = None, ""
        self._story(conn.bot_id, "closed", code=code, by=by)

    async def _record_pings(self) -> None:
        """Write the connections' keep-alive pings seen since the last write to their bots'
        stories, each connection at most every :data:`PING_WRITE_S` seconds (one round trip)."""
        now = time.monotonic()
        pipe = self.r.pipeline(transaction=False)
        written = []
        for conns in self.bots.values():
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

    async def _credentials(self, bot_id: int, *, fresh: bool = False) -> Credentials | None:
        """The bot's credentials: cached ``credentials_ttl_s`` seconds (``fresh``: read now all
        the same), read on :attr:`_db` within ``credentials_timeout_s``.

        Raises:
            TimeoutError: the database did not answer in time; or what the read raised.
        """
        now = time.monotonic()
        hit, cached = self._cache.get(bot_id, now)
        if hit and not fresh:
            return cached
        read = asyncio.get_running_loop().run_in_executor(self._db, self.credentials, bot_id)
        creds = await asyncio.wait_for(read, self.credentials_timeout_s)
        self._cache.put(bot_id, creds, now + self.credentials_ttl_s)
        return creds

    def _leases(self, conn: Connection) -> tuple[LeaseSet, LeaseSet]:
        return (
            LeaseSet(self.sync, relay.conns_key(conn.bot_id), self.max_per_bot),
            LeaseSet(self.sync, relay.account_key(conn.creds.owner_id), self.max_per_account),
        )

    async def _register(self, conn: Connection) -> str | None:
        """Take the connection's leases (per bot, per account) and hold it; the refusal, or None."""
        bot_set, account_set = self._leases(conn)

        def take() -> str | None:
            if not bot_set.take(conn.member, relay.LEASE_S):
                return f"this bot already has {self.max_per_bot} connections"
            if not account_set.take(conn.member, relay.LEASE_S):
                bot_set.release(conn.member)
                return f"this account's bots already have {self.max_per_account} connections"
            return None

        try:
            why = await asyncio.to_thread(take)
        except redis.RedisError as exc:
            log.warning("presence not recorded: %s", exc)
            return "the arena cannot record the connection now: try again"
        if why is None:
            first = conn.bot_id not in self.bots
            self.bots.setdefault(conn.bot_id, []).append(conn)
            if first:  # requests that waited for it: after its leases, so no push is missed
                await self._ring_self(conn.bot_id)
        return why

    async def _unregister(self, conn: Connection) -> None:
        conns = self.bots.get(conn.bot_id, [])
        if conn in conns:
            conns.remove(conn)
        if not conns:
            self.bots.pop(conn.bot_id, None)
        pending, conn.pending = conn.pending, {}
        try:
            if conn.violation is not None:
                fault = relay.fault_item(*conn.violation)
                for rid, (deadline, _) in pending.items():
                    self._queue_answer(rid, fault, deadline)
            else:  # back to the front of the bot's list, for another connection or its return
                now = time.time()
                back = [env for deadline, env in pending.values() if deadline > now]
                if back:  # and ring the gateways of its other connections (this one's too)
                    await self.r.eval(relay.PUSH_AND_RING, *relay.push_args(conn.bot_id, back, front=True))
        except redis.RedisError as exc:
            log.warning("requests of a closed connection not given back: %s", exc)
        bot_set, account_set = self._leases(conn)

        def release() -> None:
            bot_set.release(conn.member)
            account_set.release(conn.member)

        try:
            await asyncio.to_thread(release)
        except redis.RedisError:
            pass  # the leases end by themselves

    async def _reader(self, conn: Connection) -> None:
        """Route each answer frame by its id (:func:`bots_sdk.wire.answer_id`), unparsed: the
        frame goes to the worker as the bot sent it (``R<frame>``), which parses it strictly.
        The work per frame is linear in its size with a small constant, never a JSON parse."""
        ws = conn.ws
        try:
            async for msg in ws:
                if isinstance(msg, bytes):
                    conn.offend("invalid_json", faults.fault(FaultCode.BINARY_FRAME))
                    await ws.close(wire.CLOSE_NOT_JSON, "binary frames are not part of the protocol")
                    return
                rid = wire.answer_id(msg)
                if rid is None and not msg.lstrip().startswith("{"):
                    conn.offend("invalid_json", faults.fault(FaultCode.FRAME_NOT_OBJECT), msg)
                    await ws.close(wire.CLOSE_NOT_JSON, "a frame is not a JSON object")
                    return
                entry = conn.pending.pop(rid, None) if rid is not None else None
                if rid is None or entry is None:
                    if rid is not None and conn.late.pop(rid, None) is not None:
                        continue  # a late answer (or one to a notice): ignored, once
                    what = "answer to an unknown request id" if rid is not None else "answer without a request id"
                    code = FaultCode.UNKNOWN_REQUEST_ID if rid is not None else FaultCode.NO_REQUEST_ID
                    conn.offend("invalid_json", faults.fault(code), msg)
                    await ws.close(wire.CLOSE_PROTOCOL, what)
                    return
                self._queue_answer(rid, b"R" + msg.encode("utf-8", "surrogatepass"), entry[0])
        except ConnectionClosed as exc:
            if exc.sent is not None and exc.sent.code == wire.CLOSE_TOO_BIG:
                conn.offend("body_too_large", faults.fault(FaultCode.FRAME_OVER, n=wire.MAX_FRAME_BYTES))
            if isinstance(ws, BotSocket) and ws.flood is not None:
                conn.offend(
                    "connection_error", faults.fault(FaultCode.FLOOD, burst=FLOOD_BURST, rate=f"{FLOOD_RATE:g}")
                )
            raise

    async def _writer(self, conn: Connection) -> None:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(None) as send_deadline:  # one timer, not a task per frame
                while True:
                    frame = await conn.outbox.get()
                    send_deadline.reschedule(loop.time() + self.send_timeout_s)
                    await conn.ws.send(frame)
                    send_deadline.reschedule(None)
        except TimeoutError:
            self._slow(conn)
        except ConnectionClosed:
            return

    def _slow(self, conn: Connection) -> None:
        conn.offend("timeout", faults.fault(FaultCode.SLOW_READER))
        transport = conn.ws.transport
        if transport is not None:
            transport.abort()

    def _queue_answer(self, rid: str, payload: bytes, deadline: float) -> None:
        """Push ``payload`` (``A<body>`` or ``F<fault>``) onto the answer list of ``rid`` soon:
        with the other answers waiting, in one round trip (:meth:`_answer_loop`); ``deadline``
        (Unix seconds) is the request's: past it, an answer Redis refused is dropped."""
        self._answers.append((rid, payload, deadline))
        self._answers_ready.set()

    async def _answer_loop(self) -> None:
        """Push the queued answers, all those waiting in one pipeline, again and again. A batch
        Redis refused (restarting, a pooled connection it cut) is kept and pushed again, with
        the answers read since, after a pause doubling from :data:`ANSWER_RETRY_S` to
        :data:`ANSWER_RETRY_MAX_S`; an answer is dropped only once its request's deadline has
        passed (its worker, finding the request nowhere, queued it again or gave up). The bot's
        connection is never closed for it. Ends once the server has closed and nothing is left
        (:meth:`_shutdown`)."""
        pause = ANSWER_RETRY_S
        while True:
            await self._answers_ready.wait()
            self._answers_ready.clear()
            batch, self._answers = self._answers, []
            if batch:
                pipe = self.r.pipeline(transaction=False)
                for rid, payload, _ in batch:
                    key = relay.answer_key(rid)
                    pipe.rpush(key, payload)
                    pipe.expire(key, relay.ANSWER_TTL_S)
                try:
                    await pipe.execute()
                    pause = ANSWER_RETRY_S
                except (redis.RedisError, OSError) as exc:
                    now = time.time()
                    kept = [a for a in batch if a[2] > now]
                    if len(kept) < len(batch):
                        log.warning("%d answers dropped, past their deadline: %s", len(batch) - len(kept), exc)
                    log.warning("%d answers not pushed yet: %s", len(kept), exc)
                    self._answers[:0] = kept
                    if self._closed:
                        return
                    await asyncio.sleep(pause)
                    pause = min(pause * 2, ANSWER_RETRY_MAX_S)
                    self._answers_ready.set()
                    continue
            if self._closed and not self._answers:
                return

    # -- requests from the workers --------------------------------------------------------------
    async def _ring_self(self, bot_id: int) -> None:
        try:
            await self.r.rpush(relay.wake_key(self.id), bot_id)
        except redis.RedisError:
            pass  # the sweep looks at its list soon

    async def _pop_loop(self) -> None:
        """Wait on this gateway's doorbell list (one key, whatever the number of bots held); pop
        the request lists of the bots rung that it holds, and of every bot held each
        :attr:`sweep_s` seconds."""
        wake = relay.wake_key(self.id)
        last_sweep = time.monotonic()
        while not self._stopping:
            wait_s = max(0.01, min(BLPOP_S, last_sweep + self.sweep_s - time.monotonic()))
            try:
                got = await self.rpop.blmpop(wait_s, 1, wake, direction="LEFT", count=RINGS_BATCH)
            except (redis.RedisError, OSError) as exc:
                log.warning("doorbell unreachable: %s", exc)
                await asyncio.sleep(0.5)
                continue
            rung: dict[int, None] = {}  # in the order rung, once each
            for item in got[1] if got else []:
                if isinstance(item, bytes) and item.isdigit() and int(item) in self.bots:
                    rung[int(item)] = None
            if time.monotonic() - last_sweep >= self.sweep_s:
                last_sweep = time.monotonic()
                rung.update(dict.fromkeys(self.bots))
            if rung and not self._stopping:
                await self._pop_requests(list(rung))

    async def _pop_requests(self, bot_ids: list[int]) -> None:
        """Pop up to :data:`POP_BATCH` requests of each bot's list, marked held by this gateway
        in the same step (:data:`arena.relay.POP_AND_HOLD`, one round trip), and deliver them."""
        try:
            popped = await self._pop_and_hold(
                keys=[relay.request_key(b) for b in bot_ids],
                args=[self.id, POP_BATCH, relay.held_key(""), relay.HOLD_GRACE_MS],
            )
        except (redis.RedisError, OSError) as exc:  # what was popped comes back (the workers' requeue)
            log.warning("request lists unreachable: %s", exc)
            return
        for i in range(0, len(popped), 2):
            self._deliver(bot_ids[int(popped[i]) - 1], popped[i + 1])

    def _deliver(self, bot_id: int, raws: list[bytes]) -> None:
        """Hand requests popped from ``bot_id``'s list to its connections (each to the one with
        the fewest in flight); give them back to the list when it has none here any more.

        A copy of a request one of the bot's connections here still holds (queued again while
        this gateway was frozen past its alive key) is not sent again: a second answer would
        close the connection for an unknown id. The pop marked it held by this gateway again,
        which is all the worker needs to know."""
        conns = self.bots.get(bot_id)
        if not conns:  # the bot left this gateway since the pop was sent: back, for its other gateways
            self._background(self.r.eval(relay.PUSH_AND_RING, *relay.push_args(bot_id, raws, front=True)))
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
                self._slow(conn)
                continue
            self.delivered += 1

    # -- housekeeping -----------------------------------------------------------------------------
    async def _alive(self) -> None:
        """The beat (:data:`arena.relay.ALIVE_BEAT`): the alive key, holding the event loop's
        stall of the last two seconds (ms), and this gateway's score in the gateways' set."""
        stall = str(round(max(self.stall_ms)))
        await self._beat(
            keys=[relay.alive_key(self.id), relay.GATEWAYS_KEY], args=[stall, int(relay.ALIVE_TTL_S * 1000), self.id]
        )

    async def _lag_loop(self) -> None:
        """Every :data:`LAG_TICK_S`: how late the event loop woke (its stall), summed per
        second into :attr:`stall_ms` (this second and the last one)."""
        loop = asyncio.get_running_loop()
        second = loop.time()
        while not self._stopping:
            before = loop.time()
            await asyncio.sleep(LAG_TICK_S)
            now = loop.time()
            if now - second >= 1.0:
                self.stall_ms = [self.stall_ms[1], 0.0]
                second = now
            self.stall_ms[1] += max(0.0, now - before - LAG_TICK_S) * 1000

    async def _tick_loop(self) -> None:
        """Every second: the alive key, and the requests in flight past their deadline. Nothing
        here waits for the database (:meth:`_renew_loop` does). When Redis answers again after
        failing (restarted, maybe empty), the presence of every connection is written again and
        every held bot's list looked at, at once (:meth:`_recover`): a bot's requests never wait
        for the next renewal because Redis forgot its connections."""
        failed = False
        while not self._stopping:
            await asyncio.sleep(1.0)
            try:
                await self._alive()
            except (redis.RedisError, OSError) as exc:
                log.warning("alive key not refreshed: %s", exc)
                failed = True
            else:
                if failed:
                    failed = False
                    self._background(self._recover())
            now = time.time()
            for conns in list(self.bots.values()):
                for c in conns:
                    for rid, (deadline, _) in list(c.pending.items()):
                        if deadline < now - 1.0:
                            del c.pending[rid]
                            c.late[rid] = now + LATE_S
                    for rid, forget in list(c.late.items()):
                        if forget < now:
                            del c.late[rid]
            try:
                await self._probe_silent()
            except Exception:  # never end the alive key's refreshes
                log.exception("probing silent connections failed")
            try:
                await self._record_pings()
            except (redis.RedisError, OSError) as exc:
                log.warning("keep-alive pings not written: %s", exc)

    async def _recover(self) -> None:
        """Redis is back (:meth:`_tick_loop`): the connections' presence again, then every held
        bot's request list."""
        try:
            await self._renew()
        except Exception:
            log.exception("presence not written again after a Redis failure")
        if self.bots and not self._stopping:
            await self._pop_requests(list(self.bots))

    def _heard(self, conn: Connection) -> float:
        """When the bot was last heard from on ``conn``, Unix seconds."""
        heard = conn.ws.heard if isinstance(conn.ws, BotSocket) else time.monotonic()
        return time.time() - (time.monotonic() - heard)

    async def _probe_silent(self) -> None:
        """Probe each connection that holds requests, has been silent :data:`SILENT_S` and whose
        bot opened another connection since (here, or on another gateway): the signature of a
        network that changed under the bot (its old connection silent, no close or reset ever
        comes, and it connected again). A bot that merely thinks long on its connections, even
        one whose library cannot answer pings meanwhile, is never probed."""
        now = time.time()
        for bot_id, conns in list(self.bots.items()):
            silent = [c for c in conns if c.pending and not c.probed and now - self._heard(c) > SILENT_S]
            if not silent:
                continue
            opened = {o.member: o.since for o in conns}
            if not any(since > self._heard(c) for c in silent for m, since in opened.items() if m != c.member):
                if all(now - c.looked < SILENT_S for c in silent):
                    continue
                for c in silent:
                    c.looked = now
                opened.update(await self._opened(bot_id))  # its connections on the other gateways
            for c in silent:
                if any(since > self._heard(c) for m, since in opened.items() if m != c.member):
                    c.probed = True
                    self._background(self._probe(c))

    async def _opened(self, bot_id: int) -> dict[str, float]:
        """The bot's connections on every gateway: presence member -> when it opened (Unix s)."""
        try:
            rows = await self.r.zrange(relay.conns_key(bot_id), 0, -1)
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

    async def _probe(self, conn: Connection) -> None:
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

    async def _renew_loop(self) -> None:
        """:meth:`_renew` every ``renew_s`` seconds, on a task of its own: a database that
        stops answering delays the renewals, never the alive key (a gateway whose alive key
        lapses is taken for dead: the workers queue its requests again)."""
        while not self._stopping:
            await asyncio.sleep(self.renew_s)
            try:
                await self._renew()
            except Exception:  # never end the renewals
                log.exception("renewal failed")

    async def _renew(self) -> None:
        """Renew every connection's presence (one round trip for all); close the connections of
        bots deleted or changed to a URL (4410), and those that proved a secret no longer valid
        (4401: rotated twice, or the grace of a rotation over; a thief holding a leaked secret
        must not keep playing as the bot on a connection it opened before).

        With :data:`StillConnectFn`, the database is asked once for every bot held; a bot's
        credentials are read (on :attr:`_db`, within ``credentials_timeout_s``) only for a
        connection whose proof that answer cannot judge: its bot's secrets were rotated since
        they were read. Without it, each bot's credentials are read. When the database does
        not answer, the connections it would judge are kept as they are (not the bots' fault),
        and their presence is renewed all the same."""
        ids = list(self.bots)
        if not ids:
            return
        leases: list[tuple[str, str]] = []
        for c in await self._judge(ids):
            if c not in self.bots.get(c.bot_id, ()):
                continue  # closed meanwhile: a lease renewed now would outlive it
            leases += [(relay.conns_key(c.bot_id), c.member), (relay.account_key(c.creds.owner_id), c.member)]

        def renew() -> None:  # one round trip for all; a lease that ended (Redis lost it) is held again
            renewed = renew_many(self.sync, leases, relay.LEASE_S)
            lost = [lease for lease, ok in zip(leases, renewed) if not ok]
            if lost:
                pipe = self.sync.pipeline(transaction=False)
                for key, m in lost:
                    pipe.zadd(key, {m: time.time() + relay.LEASE_S})
                pipe.execute()

        if not leases:
            return
        try:
            await asyncio.to_thread(renew)
        except (redis.RedisError, OSError) as exc:
            log.warning("presence not renewed: %s", exc)

    async def _judge(self, ids: list[int]) -> list[Connection]:
        """The connections of the bots ``ids`` that stay (:meth:`_renew`); the others are closed."""
        stamps: dict[int, float | None] | None = None
        if self.still_connect is not None:
            stamps = await self._still_connect(ids)
            if stamps is None:  # the database does not answer: every connection stays as it is
                return [c for b in ids for c in self.bots.get(b, [])]
        now = time.time()
        readable = True  # no more reads once one failed
        keep: list[Connection] = []
        for bot_id in ids:
            conns = list(self.bots.get(bot_id, []))
            if stamps is not None:
                if bot_id not in stamps:
                    for c in conns:
                        self._close(c, wire.CLOSE_BOT_GONE)
                    continue
                stands = [c for c in conns if _proof_stands(c, stamps[bot_id], now)]
                keep += stands
                conns = [c for c in conns if c not in stands]
            if not conns:
                continue
            creds: Credentials | None = None
            if readable:
                try:
                    creds = await self._credentials(bot_id, fresh=stamps is not None)
                except Exception as exc:
                    readable = False
                    log.warning("credentials unreadable (%s): connections kept as they are", exc)
            if not readable:
                keep += conns
                continue
            for c in conns:
                code = _verdict(c, creds)
                if code is None:
                    keep.append(c)
                else:
                    self._close(c, code)
        return keep

    def _close(self, conn: Connection, code: int) -> None:
        """Close ``conn`` for :meth:`_renew` (its requests go back to its bot's list)."""
        why = CLOSE_REASONS.get(code, "closed")
        self._background(conn.ws.close(code, why))

    async def _still_connect(self, ids: list[int]) -> dict[int, float | None] | None:
        """:data:`StillConnectFn` for ``ids``, read on :attr:`_db` within
        ``credentials_timeout_s``; None when the database does not answer."""
        assert self.still_connect is not None
        ask = asyncio.get_running_loop().run_in_executor(self._db, self.still_connect, ids)
        try:
            return dict(await asyncio.wait_for(ask, self.credentials_timeout_s))
        except Exception as exc:
            log.warning("bots' transport and secrets unreadable (%s): connections kept as they are", exc)
            return None
