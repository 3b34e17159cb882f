"""A gateway of its own for the local runner (``arena play``): bots that dial out, seated in a
match on this machine, with no Redis, database or service.

:class:`LocalGateway` listens on ``ws://HOST:PORT/v1/bots`` (:data:`bots_sdk.wire.PATH`) and
speaks the arena gateway's side of docs/protocol.md, "Bots that dial out": the challenge, the
bot's proof (:func:`bots_sdk.wire.auth_valid` against the secret given for its id: a wrong
one, an unknown id or an auth frame that is not one closes with 4401; none within
:data:`bots_sdk.wire.AUTH_TIMEOUT_S`: 4408), the welcome, then ``request``, ``health`` and
``notice`` frames and the bot's answers, several in flight at once on a connection, answered in
any order. A bot may hold several connections (each request goes to the one with the fewest in
flight) and reconnect: a request sent while it has none waits up to ``reconnect_s`` seconds
(the arena's ``ARENA_GATEWAY_RECONNECT_S``, never past the bank), one in flight on a connection
that drops is sent again on the next. What a connection does wrong costs what it costs at the
arena's gateway (:mod:`daifugo_arena.gateway.server`): a frame over :data:`bots_sdk.wire.MAX_FRAME_BYTES`
closes it (1009, ``body_too_large``), a binary frame or one that is not a JSON object (1007,
``invalid_json``), an answer to an id it was never sent (1008, ``invalid_json``); an answer
that is JSON only to a lenient reader is that request's ``invalid_json``.

:class:`DialedPlayer` is a seat's :class:`~arena.runner.players.Player` over it (``kind``
``"connect"``, as the service's :class:`~arena.runner.connected.ConnectedPlayer`). The gateway
runs its event loop on a thread of its own; the players call it from the runner's thread.
:meth:`LocalGateway.status` tells what each bot did: its welcomes, the connections refused,
the keep-alive pings it sent (the protocol asks for one every 5 s).
"""

from __future__ import annotations

import asyncio
import json
import secrets
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.frames import PING, Frame
from websockets.http11 import Request, Response

from arena.faults import Fault, FaultCode, fault
from arena.runner.answers import safe_text
from arena.runner.players import NO_SLOT, NOTICE_TIMEOUT_S, RECEIVED_LOG_CHARS, Outcome, SlotUse
from arena.safejson import lenient_id, parse_answer
from bots_sdk import wire

#: Seconds a request waits for a connection of its bot (the arena's default wait).
RECONNECT_S = 15.0
#: Seconds :meth:`LocalGateway.start` and :meth:`LocalGateway.close` may take.
START_S = 10.0


class _BotSocket(ServerConnection):
    """A connection that counts the pings the bot sends (the protocol's keep-alive)."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.pings = 0
        self.last_ping: float | None = None  # monotonic seconds

    def process_event(self, event: Any) -> None:
        super().process_event(event)
        if isinstance(event, Frame) and event.opcode is PING:
            self.pings += 1
            self.last_ping = time.monotonic()


@dataclass
class _Conn:
    ws: _BotSocket
    #: request id -> the future its answer resolves: ("answer", body) | ("fault", kind, reason,
    #: received) | ("dropped",) when the connection ended without a fault of its own
    pending: dict[str, asyncio.Future[tuple[Any, ...]]] = field(default_factory=dict)
    #: ids whose answer is no longer awaited (notices, expired requests): an answer is ignored
    late: set[str] = field(default_factory=set)
    #: the fault its requests in flight get when it closes: (kind, reason, received)
    violation: tuple[str, Fault, str] | None = None

    def offend(self, kind: str, why: Fault, received: str = "") -> None:
        if self.violation is None:
            self.violation = (kind, why, safe_text(received, RECEIVED_LOG_CHARS))


@dataclass
class _Bot:
    bot_id: int
    secret: str
    conns: list[_Conn] = field(default_factory=list)
    welcomes: int = 0
    #: close codes of the connections refused (4401, 4408...), in order
    refused: list[int] = field(default_factory=list)
    first_welcome: float | None = None  # monotonic seconds
    pings: int = 0  # pings of its closed connections (open ones count on their socket)
    last_ping: float | None = None
    connected: asyncio.Event | None = None


class LocalGateway:
    """A gateway for bots that dial out, in this process (module docstring).

    Args:
        bots: ``{bot id: signing secret}`` of the bots that may connect.
        host, port: where to listen (port 0: any free port; :attr:`url` once started).
        reconnect_s: longest wait of a request for a connection, seconds (:data:`RECONNECT_S`).
    """

    def __init__(
        self, bots: Mapping[int, str], *, host: str = "127.0.0.1", port: int = 0, reconnect_s: float = RECONNECT_S
    ):
        self.host, self.port = host, int(port)
        self.reconnect_s = float(reconnect_s)
        self._bots = {int(b): _Bot(int(b), s) for b, s in bots.items()}
        self._changed = threading.Condition()
        self._loop = asyncio.new_event_loop()
        self._thread: threading.Thread | None = None
        self._server: Server | None = None
        self._stop: asyncio.Event | None = None
        self._error: BaseException | None = None

    # -- the process (any thread) ------------------------------------------------------------------
    @property
    def url(self) -> str:
        """``ws://HOST:PORT/v1/bots``, what a bot sets as ``ARENA_GATEWAY_URL``."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"ws://{host}:{self.port}{wire.PATH}"

    def start(self) -> LocalGateway:
        """Listen (on a daemon thread); returns once listening.

        Raises:
            OSError: the address cannot be bound (the port is taken).
        """
        ready = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(ready,), name="local-gateway", daemon=True)
        self._thread.start()
        if not ready.wait(START_S):
            raise OSError(f"the local gateway did not start within {START_S:g} s")
        if self._error is not None:
            raise self._error
        return self

    def _run(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self._loop)

        async def main() -> None:
            self._stop = asyncio.Event()
            for bot in self._bots.values():
                bot.connected = asyncio.Event()
            try:
                server = await serve(
                    self._handler,
                    self.host,
                    self.port,
                    process_request=self._http,
                    create_connection=_BotSocket,
                    max_size=wire.MAX_FRAME_BYTES,
                    compression=None,
                    close_timeout=2,
                )
            except OSError as exc:
                self._error = exc
                ready.set()
                return
            self._server = server
            self.port = server.sockets[0].getsockname()[1] if server.sockets else self.port
            ready.set()
            await self._stop.wait()
            server.close(close_connections=True)  # 1001: the bots reconnect elsewhere, or stop
            await server.wait_closed()

        try:
            self._loop.run_until_complete(main())
        finally:
            self._loop.close()

    def close(self) -> None:
        """Close every connection (1001) and stop listening."""
        if self._thread is None or not self._thread.is_alive():
            return
        stop = self._stop
        if stop is not None:
            self._loop.call_soon_threadsafe(stop.set)
        self._thread.join(START_S)

    def wait_connected(self, bot_id: int, timeout_s: float) -> bool:
        """Wait at most ``timeout_s`` seconds for bot ``bot_id`` to hold a welcomed connection."""
        bot = self._bots[int(bot_id)]
        with self._changed:
            return self._changed.wait_for(lambda: bool(bot.conns), max(0.0, timeout_s))

    def status(self, bot_id: int) -> dict[str, Any]:
        """What bot ``bot_id`` did so far: ``{"connections": open now, "welcomes": int,
        "refused": [close codes], "pings": int, "connected_s": seconds since its first welcome
        or None, "silent_s": seconds since its last ping (or since its first welcome when it never
        pinged) or None}``."""
        bot = self._bots[int(bot_id)]
        now = time.monotonic()
        with self._changed:
            socks = [c.ws for c in bot.conns]
            pings = bot.pings + sum(s.pings for s in socks)
            last = max([t for t in [bot.last_ping, *(s.last_ping for s in socks)] if t is not None], default=None)
            since = bot.first_welcome
            return {
                "connections": len(socks),
                "welcomes": bot.welcomes,
                "refused": list(bot.refused),
                "pings": pings,
                "connected_s": None if since is None else now - since,
                "silent_s": None if since is None else now - (last if last is not None else since),
            }

    def exchange(self, bot_id: int, kind: str, body: bytes, timeout_s: float) -> tuple[Any, ...]:
        """Send ``body`` to bot ``bot_id`` as a ``kind`` frame (``request`` or ``health``) and wait
        at most ``timeout_s`` seconds for its answer: ``("answer", body)`` or ``("fault", kind,
        detail, received)`` (``connection_error``: no connection within the wait; ``timeout``)."""
        future = asyncio.run_coroutine_threadsafe(
            self._exchange(self._bots[int(bot_id)], kind, body, timeout_s), self._loop
        )
        return future.result(timeout_s + START_S)

    def notify(self, bot_id: int, body: bytes) -> None:
        """Send a notice to one of the bot's connections, if it has one (never answered)."""
        future = asyncio.run_coroutine_threadsafe(self._notify(self._bots[int(bot_id)], body), self._loop)
        try:
            future.result(NOTICE_TIMEOUT_S + START_S)
        except Exception:  # a notice's failure is never a fault
            pass

    # -- the event loop ------------------------------------------------------------------------------
    def _http(self, conn: ServerConnection, request: Request) -> Response | None:
        if request.path.split("?", 1)[0] != wire.PATH:
            return conn.respond(404, f"bots connect to {wire.PATH}\n")
        return None

    def _note(self, bot: _Bot | None, refused: int | None = None) -> None:
        with self._changed:
            if bot is not None and refused is not None:
                bot.refused.append(refused)
            self._changed.notify_all()

    async def _handler(self, ws: ServerConnection) -> None:
        assert isinstance(ws, _BotSocket)
        nonce = secrets.token_hex(16)
        try:
            await ws.send(wire.challenge_frame(nonce))
            raw = await asyncio.wait_for(ws.recv(), wire.AUTH_TIMEOUT_S)
        except TimeoutError:
            await ws.close(wire.CLOSE_AUTH_TIMEOUT, "no authentication within the time allowed")
            return
        except ConnectionClosed:
            return
        frame, _ = parse_answer(raw.encode("utf-8") if isinstance(raw, str) else b"\xff")
        bot_id = frame.get("bot_id") if frame else None
        bot = self._bots.get(bot_id) if type(bot_id) is int else None
        if (
            frame is None
            or frame.get("type") != "auth"
            or bot is None
            or not wire.auth_valid(frame, [bot.secret], nonce)
        ):
            self._note(bot, wire.CLOSE_AUTH_FAILED)
            await ws.close(wire.CLOSE_AUTH_FAILED, "authentication failed (unknown bot or wrong signature)")
            return
        conn = _Conn(ws)
        welcome = {
            "type": "welcome",
            "bot_id": bot.bot_id,
            "name": f"bot#{bot.bot_id}",
            "connection": secrets.token_hex(6),
            "max_frame_bytes": wire.MAX_FRAME_BYTES,
        }
        try:
            await ws.send(json.dumps(welcome))
            with self._changed:
                bot.conns.append(conn)
                bot.welcomes += 1
                if bot.first_welcome is None:
                    bot.first_welcome = time.monotonic()
                self._changed.notify_all()
            assert bot.connected is not None
            bot.connected.set()
            await self._reader(conn)
        except ConnectionClosed:
            pass
        finally:
            self._drop(bot, conn)

    def _drop(self, bot: _Bot, conn: _Conn) -> None:
        """``conn`` ended: its requests in flight get its fault, or are sent again elsewhere."""
        with self._changed:
            if conn in bot.conns:
                bot.conns.remove(conn)
                bot.pings += conn.ws.pings
                if conn.ws.last_ping is not None:
                    bot.last_ping = max(bot.last_ping or 0.0, conn.ws.last_ping)
            self._changed.notify_all()
        if not bot.conns and bot.connected is not None:
            bot.connected.clear()
        outcome: tuple[Any, ...] = ("fault", *conn.violation) if conn.violation is not None else ("dropped",)
        for fut in conn.pending.values():
            if not fut.done():
                fut.set_result(outcome)
        conn.pending.clear()

    async def _reader(self, conn: _Conn) -> None:
        ws = conn.ws
        try:
            async for msg in ws:
                if isinstance(msg, bytes):
                    conn.offend("invalid_json", fault(FaultCode.BINARY_FRAME))
                    await ws.close(wire.CLOSE_NOT_JSON, "binary frames are not part of the protocol")
                    return
                obj, why = parse_answer(msg.encode("utf-8", "surrogatepass"))
                if obj is None:
                    rid = lenient_id(msg)
                    if rid is not None and (fut := conn.pending.pop(rid, None)) is not None:
                        # JSON to a lenient reader, answering a request in flight: that request's fault only
                        fut.set_result(("fault", "invalid_json", why, safe_text(msg, RECEIVED_LOG_CHARS)))
                        continue
                    if rid is not None and rid in conn.late:
                        conn.late.discard(rid)
                        continue
                    conn.offend("invalid_json", fault(FaultCode.FRAME_NOT_OBJECT), msg)
                    await ws.close(wire.CLOSE_NOT_JSON, "a frame is not a JSON object")
                    return
                rid = obj.get("id")
                fut = conn.pending.pop(rid, None) if isinstance(rid, str) else None
                if fut is None:
                    if isinstance(rid, str) and rid in conn.late:
                        conn.late.discard(rid)  # a late answer (or one to a notice): ignored, once
                        continue
                    conn.offend("invalid_json", fault(FaultCode.UNKNOWN_REQUEST_ID), msg)
                    await ws.close(wire.CLOSE_PROTOCOL, "answer to an unknown request id")
                    return
                body = obj.get("body")
                if isinstance(body, dict):
                    fut.set_result(("answer", body))
                else:
                    received = safe_text(msg, RECEIVED_LOG_CHARS)
                    fut.set_result(("fault", "invalid_json", fault(FaultCode.FRAME_BODY_NOT_OBJECT), received))
        except ConnectionClosed as exc:
            if exc.sent is not None and exc.sent.code == wire.CLOSE_TOO_BIG:
                conn.offend("body_too_large", fault(FaultCode.FRAME_OVER, n=wire.MAX_FRAME_BYTES))
            raise

    async def _exchange(self, bot: _Bot, kind: str, body: bytes, timeout_s: float) -> tuple[Any, ...]:
        loop = asyncio.get_running_loop()
        start = loop.time()
        deadline = start + max(0.0, timeout_s)
        waiting_since = start  # since when the bot has had no connection for this request
        text = body.decode("utf-8")
        assert bot.connected is not None
        while True:
            now = loop.time()
            if not bot.conns:
                until = min(deadline, waiting_since + self.reconnect_s)
                if now >= until:
                    return (
                        "fault",
                        "connection_error",
                        fault(FaultCode.NOT_CONNECTED, ms=round((now - waiting_since) * 1000)),
                        "",
                    )
                try:
                    await asyncio.wait_for(bot.connected.wait(), until - now)
                except TimeoutError:
                    pass
                continue
            conn = min(bot.conns, key=lambda c: len(c.pending))
            rid = secrets.token_hex(12)
            fut: asyncio.Future[tuple[Any, ...]] = loop.create_future()
            conn.pending[rid] = fut
            try:
                await asyncio.wait_for(
                    conn.ws.send(wire.frame(kind, rid, text.encode("utf-8"))), max(0.001, deadline - now)
                )
                result = await asyncio.wait_for(asyncio.shield(fut), max(0.001, deadline - loop.time()))
            except TimeoutError:
                if conn.pending.pop(rid, None) is not None:
                    conn.late.add(rid)
                if fut.done():
                    result = fut.result()
                else:
                    return ("fault", "timeout", fault(FaultCode.NO_ANSWER), "")
            except ConnectionClosed:
                conn.pending.pop(rid, None)
                result = fut.result() if fut.done() else ("dropped",)
            if result[0] == "dropped":  # sent again on its next connection, within the same deadline
                waiting_since = loop.time()
                continue
            return result

    async def _notify(self, bot: _Bot, body: bytes) -> None:
        if not bot.conns:
            return
        conn = min(bot.conns, key=lambda c: len(c.pending))
        rid = secrets.token_hex(12)
        conn.late.add(rid)
        try:
            await asyncio.wait_for(conn.ws.send(wire.frame("notice", rid, body)), NOTICE_TIMEOUT_S)
        except (TimeoutError, ConnectionClosed):
            pass


def _ms(seconds: float) -> int:
    return int(round(seconds * 1000))


class DialedPlayer:
    """A seat played by a bot that dials out to a :class:`LocalGateway` (module docstring).

    Args:
        gateway: the running gateway.
        bot_id: the bot's id there.
        name: display name in the log.
    """

    kind = "connect"

    def __init__(self, gateway: LocalGateway, bot_id: int, name: str | None = None):
        self.gateway = gateway
        self.bot_id = int(bot_id)
        self.name: str = name or f"bot#{bot_id}"
        self.url: str | None = None

    def exchange(self, kind: str, body: bytes, timeout_s: float) -> Outcome:
        """Send ``body`` as a ``kind`` frame and wait at most ``timeout_s`` seconds; never raises."""
        start = time.monotonic()
        result = self.gateway.exchange(self.bot_id, kind, body, timeout_s)
        elapsed = time.monotonic() - start
        if result[0] == "fault":
            _, kind, why, received = result
            return Outcome(None, kind, why, received, _ms(elapsed), None)
        if elapsed > timeout_s:
            return Outcome(None, "timeout", fault(FaultCode.OVER_BANK, ms=_ms(elapsed)), "", _ms(elapsed), None)
        return Outcome(result[1], None, None, "", _ms(elapsed), None)

    def decide(self, body: bytes, timeout_s: float) -> Outcome:
        return self.exchange("request", body, timeout_s)

    def health(self, timeout_s: float) -> Outcome:
        """The bot's health object (``Outcome.action``), asked over its connection."""
        return self.exchange("health", b"{}", timeout_s)

    def notify(self, body: bytes) -> SlotUse:
        self.gateway.notify(self.bot_id, body)
        return NO_SLOT

    def close(self) -> None:
        return None
