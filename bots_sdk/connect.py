"""Run a :class:`~bots_sdk.bot.Bot` over WebSocket connections it opens to an arena gateway
(bots that dial out; the frames: :mod:`bots_sdk.wire`, docs/protocol.md "Bots that dial out").

The bot binds no listening socket: it needs no public address, no open port, no tunnel. It
answers the gateway's challenge with an HMAC of its signing secret (the secret never travels),
then serves the frames the gateway sends, exactly as :mod:`bots_sdk.server` serves HTTP (the
same :func:`bots_sdk.server.handle`):

* ``request``: :meth:`Bot.decide <bots_sdk.bot.Bot.decide>` runs in a thread pool (``threads``
  at once over all the connections), so one connection serves many matches at once; each
  answer ``{"id", "body": <action>}`` goes back as soon as it is ready, in any order;
* ``health``: answered with :func:`bots_sdk.protocol.health` (what ``GET`` returns over HTTP);
* ``notice``: passed to :meth:`Bot.notice <bots_sdk.bot.Bot.notice>`; never answered.

A bot that raises (or a request that is not protocol v1) is answered at once with
``{"id", "body": {"error": "<Exception>: <message>"}}``, the body the HTTP server sends with
its ``500``/``400``: the arena records a fault for that decision (an invalid action) right away
and the log shows the error, instead of the seat's bank running out waiting for an answer that
never comes. An answer over :data:`bots_sdk.wire.MAX_FRAME_BYTES` is replaced the same way by
an error body (sending it would make the gateway close the connection, and every other match
on it would lose its request).

Reconnection: a connection that was welcomed and drops (a gateway restarted or killed, a
network blip) is opened again at once; after an attempt that fails (refused, reset, closed
by the gateway before its welcome, a failed handshake) the next waits an exponential backoff
with jitter: ``backoff_initial_s`` (0.5 s) doubling up to ``backoff_max_s`` (10 s), each wait
drawn uniformly from half to all of it, back to the start once a connection is welcomed. So a
bot is connected again within a second of a gateway coming back after a short outage, and
within ``backoff_max_s`` after a long one (the arena charges a bot nothing for the time its
own outage kept the bot out, and gives it ``ARENA_GATEWAY_RECONNECT_S``, 15 s, to come back:
docs/protocol.md, "Whose fault is a wait"). A drop no close announces (a gateway
that froze, a network gone silent) is noticed by the keepalive: a ping once welcomed, then every ``keepalive_s``
(5 s) that must be answered within as long (then 2 s for the close, and the connection is
dropped). Given several gateway URLs (gateways
an operator runs side by side without one proxy in front), connection ``n`` of the pool first
dials URL ``n`` (modulo their number) and each reconnection dials the next URL in turn, so
when a gateway dies its connections come back through the others. A close with a code of
:data:`bots_sdk.wire.FATAL_CLOSE_CODES` (authentication failed, a bot registered with a URL,
a deleted bot) stops every connection: reconnecting could never succeed. :class:`ConnectError`
then names the code and its meaning.

Thread safety: as with the HTTP server, the bot instance is shared by the threads; keep
per-match state keyed by ``match_id``, or guard it with a lock.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import random
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake

from bots_sdk import protocol, wire
from bots_sdk.bot import Bot
from bots_sdk.server import handle

log = logging.getLogger("bots_sdk.connect")

#: The environment variable holding the signing secret when none is given.
SECRET_ENV = "ARENA_BOT_SECRET"
#: Threads running the bot's decisions, over all the connections of a :class:`Connection`.
DEFAULT_THREADS = 8
#: First wait before reconnecting, seconds (doubled after each failed attempt).
BACKOFF_INITIAL_S = 0.5
#: Longest wait before reconnecting, seconds (under the arena's 15 s wait for a reconnection).
BACKOFF_MAX_S = 10.0
#: Seconds a welcomed connection must have served for its drop to be followed by a reconnection
#: at once (one dropped sooner backs off: never a loop of connections dropped at their welcome).
SERVED_S = 1.0
#: Seconds :meth:`Connection.stop` lets the connections close cleanly before cancelling them.
STOP_GRACE_S = 2.0
#: Seconds the opening handshake and the challenge-response may take before the attempt is dropped.
OPEN_TIMEOUT_S = 10.0
#: Seconds between two keepalive pings of a connection, and the longest wait for a pong: a
#: gateway that froze or a network that went silent (no close, no reset ever comes) is
#: noticed within twice this plus :data:`CLOSE_TIMEOUT_S`, and the connection opened again,
#: within the arena's wait for a reconnection (15 s), so that no request is lost
#: (websockets' defaults, a ping every 20 s, 20 s for its pong, 10 s for a close, were not).
KEEPALIVE_S = wire.PING_INTERVAL_S
#: Seconds a closing connection waits for the gateway's side of the close before dropping it.
CLOSE_TIMEOUT_S = 2.0


class ConnectError(RuntimeError):
    """The gateway refused the bot for good: a close code of :data:`bots_sdk.wire.FATAL_CLOSE_CODES`.

    Attributes:
        code: the WebSocket close code (e.g. ``4401``).
        reason: the close reason the gateway sent (may be empty).
        meaning: what the code means (:data:`bots_sdk.wire.CLOSE_CODES`).
    """

    def __init__(self, code: int, reason: str = "", hint: str = ""):
        self.code = code
        self.reason = reason
        self.meaning = wire.CLOSE_CODES.get(code, "unknown close code")
        text = f"the gateway closed the connection with {code}: {self.meaning}"
        if reason:
            text += f" ({reason})"
        if hint:
            text += f"; {hint}"
        super().__init__(text)


def gateway_url(url: str) -> str:
    """``url`` with the gateway's path (:data:`bots_sdk.wire.PATH`) when it has none
    (``ws://host:8765`` -> ``ws://host:8765/v1/bots``).

    Raises:
        ValueError: not a ``ws://`` or ``wss://`` URL with a host.
    """
    parts = urlsplit(url.strip())
    if parts.scheme not in ("ws", "wss") or not parts.hostname:
        raise ValueError(f"gateway URL {url!r} is not a ws:// or wss:// URL with a host")
    path = parts.path if parts.path not in ("", "/") else wire.PATH
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def _backoff(attempt: int, initial_s: float, max_s: float) -> float:
    """Seconds to wait before reconnection attempt ``attempt`` (0 first): half to all of
    ``initial_s * 2**attempt``, at most ``max_s``."""
    ceiling = min(max_s, initial_s * (2 ** min(attempt, 30)))
    return random.uniform(ceiling / 2, ceiling)


class Connection:
    """A bot's pool of connections to a gateway, run on a background thread or in the foreground.

    Create it with :func:`connect`. Attributes:
        url: the (first) gateway URL, with its path.
        urls: every gateway URL given, with their paths (reconnections go through them in turn).
        bot_id: the bot's id at the arena.
        pool: how many connections it keeps open.
        authenticated: how many of them are welcomed right now.
        welcomes: how many welcomes it has had in all (reconnections included).
        welcome: the last welcome frame (dict: ``bot_id``, ``name``, ``connection``,
            ``max_frame_bytes``), or None before the first.
        error: the :class:`ConnectError` that stopped it, or None.
    """

    def __init__(
        self,
        bot: Bot,
        url: str | Sequence[str],
        *,
        bot_id: int,
        secret: str,
        pool: int = 1,
        threads: int = DEFAULT_THREADS,
        backoff_initial_s: float = BACKOFF_INITIAL_S,
        backoff_max_s: float = BACKOFF_MAX_S,
        open_timeout_s: float = OPEN_TIMEOUT_S,
        keepalive_s: float | None = KEEPALIVE_S,
    ):
        if pool < 1:
            raise ValueError(f"pool must be at least 1, not {pool}")
        if threads < 1:
            raise ValueError(f"threads must be at least 1, not {threads}")
        if not secret or not secret.strip():
            raise ValueError(f"no signing secret: pass secret= or set {SECRET_ENV}")
        self.bot = bot
        self.urls = [gateway_url(u) for u in ([url] if isinstance(url, str) else url)]
        if not self.urls:
            raise ValueError("no gateway URL")
        self.url = self.urls[0]
        self.bot_id = int(bot_id)
        self.pool = pool
        self.authenticated = 0
        self.welcomes = 0
        self.welcome: dict[str, Any] | None = None
        self.error: ConnectError | None = None
        self._secret = secret.strip()
        self._threads = threads
        self._backoff = (backoff_initial_s, backoff_max_s)
        self._open_timeout_s = open_timeout_s
        self._keepalive_s = keepalive_s
        self._cond = threading.Condition()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._stop_asked = False
        self._running = False
        self._thread: threading.Thread | None = None

    # -- control (any thread) ------------------------------------------------------------------
    def start(self) -> Connection:
        """Run on a daemon thread and return at once (see :meth:`wait_authenticated`, :meth:`stop`)."""
        with self._cond:
            if self._running:
                raise RuntimeError("this connection is already running")
            self._running = True
        self._thread = threading.Thread(target=self._run_thread, name=f"connect-{self.bot.name}", daemon=True)
        self._thread.start()
        return self

    def run(self) -> None:
        """Run in this thread until :meth:`stop` (from another thread) or a fatal close.

        Raises:
            ConnectError: the gateway refused the bot for good.
        """
        with self._cond:
            if self._running:
                raise RuntimeError("this connection is already running")
            self._running = True
        self._run_thread()
        if self.error is not None:
            raise self.error

    def stop(self) -> None:
        """Close every connection (close code 1000) and stop reconnecting; returns at once.
        Decisions still running finish in their threads, their answers unsent."""
        with self._cond:
            self._stop_asked = True
            loop, event = self._loop, self._stop
        if loop is not None and event is not None:
            try:
                loop.call_soon_threadsafe(event.set)
            except RuntimeError:  # the loop already closed
                pass

    def wait_authenticated(self, count: int | None = None, timeout: float | None = None) -> bool:
        """Block until ``count`` connections (default: all of the pool) are welcomed at once.

        Returns:
            True when they are; False when ``timeout`` seconds passed first or the connection
            stopped (:attr:`error` says why when it was refused).
        """
        need = self.pool if count is None else count
        with self._cond:
            return self._cond.wait_for(lambda: self.authenticated >= need or not self._running, timeout) and (
                self.authenticated >= need
            )

    def wait_welcomes(self, count: int, timeout: float | None = None) -> bool:
        """Block until :attr:`welcomes` reaches ``count`` (reconnections count); False on
        ``timeout`` seconds or when it stopped first."""
        with self._cond:
            return self._cond.wait_for(lambda: self.welcomes >= count or not self._running, timeout) and (
                self.welcomes >= count
            )

    def join(self, timeout: float | None = None) -> bool:
        """Block until it stopped (:meth:`stop` or a fatal close); True when it has.

        Raises:
            ConnectError: it stopped because the gateway refused the bot.
        """
        with self._cond:
            done = self._cond.wait_for(lambda: not self._running, timeout)
        if done and self.error is not None:
            raise self.error
        return done

    @property
    def running(self) -> bool:
        """Whether it still connects (False after :meth:`stop` took effect or a fatal close)."""
        with self._cond:
            return self._running

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
        self.join(timeout=10)

    # -- the event loop ------------------------------------------------------------------------
    def _run_thread(self) -> None:
        try:
            asyncio.run(self._main())
        finally:
            with self._cond:
                self._running = False
                self.authenticated = 0
                self._loop = self._stop = None
                self._cond.notify_all()

    def _changed(self, **delta: int) -> None:
        with self._cond:
            for name, d in delta.items():
                setattr(self, name, getattr(self, name) + d)
            self._cond.notify_all()

    async def _main(self) -> None:
        stop = asyncio.Event()
        with self._cond:
            self._loop, self._stop = asyncio.get_running_loop(), stop
            if self._stop_asked:
                return
        executor = ThreadPoolExecutor(self._threads, thread_name_prefix=f"bot-{self.bot.name}")
        try:
            slots = [asyncio.create_task(self._slot(n, stop, executor)) for n in range(self.pool)]
            stopper = asyncio.create_task(stop.wait())
            await asyncio.wait([stopper, *slots], return_when=asyncio.FIRST_COMPLETED)
            stop.set()  # a fatal close ends the others too
            # serving connections close (1000) and waiting ones return at once; one still in its
            # handshake with a silent gateway is cancelled after a grace
            _, pending = await asyncio.wait(slots, timeout=STOP_GRACE_S)
            for task in pending:
                task.cancel()
            await asyncio.gather(*slots, return_exceptions=True)
            stopper.cancel()
        finally:
            executor.shutdown(wait=False, cancel_futures=True)

    async def _slot(self, n: int, stop: asyncio.Event, executor: ThreadPoolExecutor) -> None:
        """Keep connection ``n`` of the pool open until ``stop``, dialing :attr:`urls` in turn
        from the ``n``-th; returns after a fatal close."""
        attempt = 0
        turn = n
        while not stop.is_set():
            welcomed: list[bool] = []  # the session appends once welcomed: known even when it raised
            url = self.urls[turn % len(self.urls)]
            turn += 1
            opened = time.monotonic()
            try:
                await self._session(n, url, stop, executor, welcomed)
            except ConnectError as e:
                with self._cond:
                    if self.error is None:
                        self.error = e
                log.error("bot %s: %s; not reconnecting", self.bot_id, e)
                stop.set()
                return
            except (OSError, InvalidHandshake, ConnectionClosed, TimeoutError, ValueError) as e:
                # refused, reset, a handshake that failed, or a frame that broke the protocol
                if not stop.is_set():
                    log.warning("bot %s: connection %d to %s: %s", self.bot_id, n, url, _describe(e))
            if stop.is_set():
                return
            if welcomed and time.monotonic() - opened >= SERVED_S:  # it served, then dropped: at once
                attempt, delay = 0, 0.0
            else:  # a failed attempt (or a connection dropped as soon as welcomed): back off
                attempt = 0 if welcomed else attempt
                delay = _backoff(attempt, *self._backoff)
                attempt += 1
            log.info("bot %s: connection %d reconnecting in %.1f s", self.bot_id, n, delay)
            if delay <= 0:
                continue
            try:
                await asyncio.wait_for(stop.wait(), delay)
            except TimeoutError:
                pass

    async def _session(
        self, n: int, url: str, stop: asyncio.Event, executor: ThreadPoolExecutor, welcomed: list[bool]
    ) -> None:
        """One connection to ``url``, from the handshake until it closes; ``welcomed`` gets
        True appended once the gateway welcomed it.

        Raises:
            ConnectError: a fatal close code. OSError, InvalidHandshake, ConnectionClosed,
            TimeoutError, ValueError: anything else that ended it (reconnect).
        """
        clock_hint = ""
        try:
            async with ws_connect(
                url,
                max_size=wire.MAX_FRAME_BYTES,
                open_timeout=self._open_timeout_s,
                ping_interval=self._keepalive_s,
                ping_timeout=self._keepalive_s,
                close_timeout=CLOSE_TIMEOUT_S,
                compression=None,
                user_agent_header=f"bots_sdk/{protocol.PROTOCOL_VERSION} (bot {self.bot_id})",
            ) as ws:
                async with asyncio.timeout(self._open_timeout_s):
                    challenge = _parse(await ws.recv())
                    if challenge.get("type") != "challenge" or not isinstance(challenge.get("nonce"), str):
                        raise ValueError(f"expected a challenge frame, got {str(challenge)[:200]}")
                    gateway_ts = challenge.get("ts")
                    if isinstance(gateway_ts, int) and abs(gateway_ts - time.time()) > protocol.MAX_SKEW_S:
                        clock_hint = (
                            f"this machine's clock is {time.time() - gateway_ts:+.0f} s off the gateway's"
                            f" (at most {protocol.MAX_SKEW_S} s allowed): set the clock"
                        )
                    await ws.send(wire.auth_frame(self.bot_id, self._secret, challenge["nonce"]))
                    welcome = _parse(await ws.recv())
                if welcome.get("type") != "welcome":
                    raise ValueError(f"expected a welcome frame, got {str(welcome)[:200]}")
                welcomed.append(True)
                if self._keepalive_s is not None:
                    await ws.ping()  # the first keep-alive ping at once, then every keepalive_s
                with self._cond:
                    self.welcome = welcome
                log.info("bot %s: connection %d welcomed by %s as %r", self.bot_id, n, url, welcome.get("name"))
                self._changed(authenticated=1, welcomes=1)
                try:
                    await self._serve(ws, stop, executor)
                finally:
                    self._changed(authenticated=-1)
        except ConnectionClosed as e:
            code = e.rcvd.code if e.rcvd is not None else None
            if code in wire.FATAL_CLOSE_CODES:
                raise ConnectError(code, e.rcvd.reason if e.rcvd else "", clock_hint) from None
            if not stop.is_set():
                raise

    async def _serve(self, ws: ClientConnection, stop: asyncio.Event, executor: ThreadPoolExecutor) -> None:
        """Serve frames until the connection closes (raises ConnectionClosed) or ``stop``
        (closes it with 1000 and returns)."""
        tasks: set[asyncio.Task[None]] = set()

        async def close_on_stop() -> None:
            await stop.wait()
            await ws.close(1000, "the bot stops")

        stopper = asyncio.create_task(close_on_stop())  # one task, not one per frame received
        try:
            while True:
                try:
                    raw = await ws.recv()
                except ConnectionClosed:
                    if stop.is_set():
                        await stopper
                        return
                    raise
                message = _parse(raw)
                kind, rid, body = message.get("type"), message.get("id"), message.get("body")
                if not isinstance(rid, str):
                    log.warning("bot %s: a %r frame without an id: ignored", self.bot_id, kind)
                    continue
                if kind == "health":
                    await ws.send(wire.answer_frame(rid, protocol.health(self.bot.name)))
                elif kind in ("request", "notice"):
                    task = asyncio.create_task(self._answer(ws, executor, kind, rid, body))
                    tasks.add(task)
                    task.add_done_callback(tasks.discard)
                else:
                    log.warning("bot %s: unknown frame type %r: ignored", self.bot_id, kind)
        finally:
            stopper.cancel()
            for task in tasks:
                task.cancel()

    async def _answer(self, ws: ClientConnection, executor: ThreadPoolExecutor, kind: str, rid: str, body: Any) -> None:
        """Run the bot on one request or notice in the pool; send a request's answer."""
        loop = asyncio.get_running_loop()
        status, payload = await loop.run_in_executor(executor, handle, self.bot, body)
        if kind == "notice":
            return
        if status != 200:
            log.warning("bot %s: request %s answered with an error: %s", self.bot_id, rid, payload.get("error"))
        text = wire.answer_frame(rid, payload)
        if len(text.encode("utf-8")) > wire.MAX_FRAME_BYTES:
            log.error(
                "bot %s: the answer to request %s is over %d bytes: sent an error",
                self.bot_id,
                rid,
                wire.MAX_FRAME_BYTES,
            )
            text = wire.answer_frame(rid, {"error": f"answer over {wire.MAX_FRAME_BYTES} bytes"})
        try:
            await ws.send(text)
        except ConnectionClosed:  # the connection dropped meanwhile: the arena records the fault
            log.warning("bot %s: connection closed before the answer to request %s", self.bot_id, rid)


def _parse(text: str | bytes) -> dict[str, Any]:
    """A frame as a JSON object.

    Raises:
        ValueError: a binary frame, not JSON, or not an object.
    """
    if isinstance(text, bytes):
        raise ValueError("the gateway sent a binary frame")
    message = json.loads(text)
    if not isinstance(message, dict):
        raise ValueError("the gateway sent a frame that is not a JSON object")
    return message


def _describe(e: BaseException) -> str:
    if isinstance(e, ConnectionClosed):
        if e.rcvd is None:
            return "the connection dropped"
        meaning = wire.CLOSE_CODES.get(e.rcvd.code, "")
        return (
            f"closed with {e.rcvd.code}"
            + (f" ({meaning})" if meaning else "")
            + (f": {e.rcvd.reason}" if e.rcvd.reason else "")
        )
    return f"{type(e).__name__}: {e}"


def connect(
    bot: Bot,
    url: str | Sequence[str],
    *,
    bot_id: int,
    secret: str | None = None,
    pool: int = 1,
    threads: int = DEFAULT_THREADS,
    background: bool = False,
    backoff_initial_s: float = BACKOFF_INITIAL_S,
    backoff_max_s: float = BACKOFF_MAX_S,
    keepalive_s: float | None = KEEPALIVE_S,
) -> Connection:
    """Run ``bot`` over ``pool`` WebSocket connections to the gateway at ``url``.

    Args:
        bot: the bot (the same instance serves every connection and match).
        url: the gateway, ``ws://`` or ``wss://`` (``ws://host:port`` gets the path ``/v1/bots``);
            or a list of them: connection ``n`` of the pool dials the ``n``-th first, and each
            reconnection the next one in turn (module docstring).
        bot_id: the bot's id at the arena (a bot registered to connect, without a URL).
        secret: its signing secret; default: the environment variable ``ARENA_BOT_SECRET``.
        pool: how many connections to keep open (the gateway spreads requests over them).
        threads: how many decisions may run at once, over all the connections.
        background: False (default): run in this thread until interrupted (Ctrl-C) or refused,
            then return the stopped :class:`Connection`; True: start a daemon thread and return
            the running :class:`Connection` at once (stop it with ``.stop()``).
        backoff_initial_s, backoff_max_s: the reconnection backoff, seconds (module docstring).
        keepalive_s: seconds between keepalive pings, and the longest wait for their pong
            (:data:`KEEPALIVE_S`); None sends none (the protocol asks for them: the check warns).

    Raises:
        ValueError: no secret, no URL or one that is not ``ws(s)://``, ``pool`` or ``threads`` below 1.
        ConnectError: (foreground) the gateway refused the bot for good (a fatal close code).
    """
    if secret is None:
        secret = os.environ.get(SECRET_ENV, "")
    conn = Connection(
        bot,
        url,
        bot_id=bot_id,
        secret=secret,
        pool=pool,
        threads=threads,
        backoff_initial_s=backoff_initial_s,
        backoff_max_s=backoff_max_s,
        keepalive_s=keepalive_s,
    )
    if background:
        return conn.start()
    conn.start()
    try:
        conn.join()
    except KeyboardInterrupt:
        conn.stop()
        conn.join(timeout=10)
    return conn
