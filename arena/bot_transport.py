"""The one way the arena connects to a bot: httpx transports that pin the checked address.

:class:`PinnedTransport` is an ``httpx.HTTPTransport`` whose connection pool opens every TCP
connection through :class:`PinnedBackend`: the host is resolved once
(:func:`arena.url_policy.checked_addresses`), every address is judged by the SSRF policy,
and the socket connects to one of those very addresses (tried in the resolver's order). The
request URL is unchanged, so the ``Host`` header and the TLS server name (SNI, certificate
check) stay the bot's host name. A refused or unresolvable host is an ``httpcore.ConnectError``,
which httpx raises as ``httpx.ConnectError`` (the fault ``connection_error`` in a match).

Every connection is read through a :class:`WireMeter` (:attr:`PinnedBackend.meter`): a
caller that starts it with a budget (:meth:`WireMeter.start`, per request) gets the read
that passes the budget refused (``httpcore.ReadError``, and ``meter.over`` set); it counts
what a bot sends besides its body (headers, ``100 Continue`` answers, chunk framing).

The resolution happens per new connection, not per request: a keep-alive connection reused
for the next decision costs no DNS lookup and no check. Used by the health check
(:mod:`arena.conformance`) and by every match (:class:`arena.runner.players.HttpPlayer`),
in the API process and in the workers alike; ``allow_private`` is the setting
``ARENA_ALLOW_PRIVATE_BOT_URLS`` of the process making the connection.
"""

from __future__ import annotations

import heapq
import itertools
import socket
import ssl
import threading
import time
import typing
from collections.abc import Callable

import httpcore
import httpx

from arena.url_policy import BotUrlError, checked_addresses


class WireMeter:
    """Bytes read from one bot's connections since :meth:`start`, against a budget.

    Not thread-safe: one meter belongs to one transport, used by one thread at a time (a
    match's player). ``over`` tells that a read was refused for the budget."""

    def __init__(self) -> None:
        self.limit: int | None = None
        self.read = 0
        self.over = False

    def start(self, limit: int | None) -> None:
        """Count from zero with ``limit`` bytes (None: no budget) for the next request."""
        self.limit, self.read, self.over = limit, 0, False

    def count(self, n: int) -> None:
        """Add ``n`` bytes read. Raises ``httpcore.ReadError`` once past the budget."""
        self.read += n
        if self.limit is not None and self.read > self.limit:
            self.over = True
            raise httpcore.ReadError(f"the answer took more than {self.limit} bytes on the wire")


class MeteredStream(httpcore.NetworkStream):
    """A network stream whose reads are counted by ``meter`` (TLS too: :meth:`start_tls`
    returns a metered stream)."""

    def __init__(self, inner: httpcore.NetworkStream, meter: WireMeter):
        self._inner, self._meter = inner, meter

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        data = self._inner.read(max_bytes, timeout)
        self._meter.count(len(data))
        return data

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, timeout)

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.NetworkStream:
        return MeteredStream(self._inner.start_tls(ssl_context, server_hostname, timeout), self._meter)

    def get_extra_info(self, info: str) -> typing.Any:
        return self._inner.get_extra_info(info)


class PinnedBackend(httpcore.SyncBackend):
    """httpcore's synchronous network backend, connecting only to checked addresses.

    ``connect_tcp(host, port, ...)`` -> stream, or ``httpcore.ConnectError`` when the policy
    refuses the host or no checked address accepts the connection. ``connections`` counts the
    TCP connections opened (each one resolution); ``meter`` counts the bytes read from them
    (:class:`WireMeter`).
    """

    def __init__(self, *, allow_private: bool):
        self.allow_private = allow_private
        self.connections = 0
        self.meter = WireMeter()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: typing.Iterable[typing.Any] | None = None,
    ) -> httpcore.NetworkStream:
        try:
            addresses = checked_addresses(host, port, allow_private=self.allow_private)
        except BotUrlError as exc:
            raise httpcore.ConnectError(f"refused by the bot URL policy: {exc}") from None
        self.connections += 1
        last: Exception | None = None
        for address in addresses:
            try:
                return MeteredStream(
                    super().connect_tcp(
                        address, port, timeout=timeout, local_address=local_address, socket_options=socket_options
                    ),
                    self.meter,
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                last = exc
        assert last is not None
        raise last

    def connect_unix_socket(self, *args: typing.Any, **kwargs: typing.Any) -> httpcore.NetworkStream:
        raise httpcore.ConnectError("unix sockets are never used for bots")


#: One keep-alive connection, kept 60 s: what a bot client needs.
ONE_CONNECTION = httpx.Limits(max_connections=1, max_keepalive_connections=1, keepalive_expiry=60)


class PinnedTransport(httpx.HTTPTransport):
    """``httpx.HTTPTransport`` (same ``handle_request``, exceptions and streaming) over a pool
    whose connections go through :class:`PinnedBackend`. No proxy, ever.

    Args:
        allow_private: the ``ARENA_ALLOW_PRIVATE_BOT_URLS`` setting of this process.
        ssl_context: the verifying TLS context.
        limits: pool limits (connections, keep-alive, expiry in seconds).
        socket_options: ``setsockopt`` triples applied to each socket.
    """

    def __init__(
        self,
        *,
        allow_private: bool,
        ssl_context: ssl.SSLContext | None = None,
        limits: httpx.Limits = ONE_CONNECTION,
        socket_options: typing.Iterable[typing.Any] | None = None,
    ):
        self.backend = PinnedBackend(allow_private=allow_private)
        self._pool = httpcore.ConnectionPool(
            ssl_context=ssl_context or ssl.create_default_context(),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            socket_options=socket_options,
            network_backend=self.backend,
        )


class _Watchdog:
    """One daemon thread running callbacks at deadlines (monotonic seconds): what cuts a
    connection to a bot at its deadline (a decision, a health check) whatever the bot sends."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Callable[[], None]]] = []
        self._cancelled: set[int] = set()
        self._cond = threading.Condition()
        self._ids = itertools.count()
        self._thread: threading.Thread | None = None

    def arm(self, deadline: float, callback: Callable[[], None]) -> int:
        with self._cond:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="arena-deadlines", daemon=True)
                self._thread.start()
            handle = next(self._ids)
            # wake the thread only when it must wait less than it does now: a wake-up per
            # request costs a thread switch (and the GIL) on every decision
            wake = not self._heap or deadline < self._heap[0][0]
            heapq.heappush(self._heap, (deadline, handle, callback))
            if wake:
                self._cond.notify()
            return handle

    def disarm(self, handle: int) -> None:
        with self._cond:
            self._cancelled.add(handle)
            if len(self._cancelled) > 4096:  # drop cancelled entries now and then
                self._heap = [e for e in self._heap if e[1] not in self._cancelled]
                heapq.heapify(self._heap)
                self._cancelled.clear()

    def _run(self) -> None:
        while True:
            with self._cond:
                while True:
                    while self._heap and self._heap[0][1] in self._cancelled:
                        self._cancelled.discard(heapq.heappop(self._heap)[1])
                    if not self._heap:
                        self._cond.wait()
                        continue
                    wait = self._heap[0][0] - time.monotonic()
                    if wait <= 0:
                        _, handle, callback = heapq.heappop(self._heap)
                        break
                    self._cond.wait(wait)
            try:
                callback()
            except Exception:
                pass


WATCHDOG = _Watchdog()


def bounded_exchange(
    client: httpx.Client,
    method: str,
    url: str,
    *,
    deadline: float,
    max_bytes: int,
    headers: dict[str, str] | None = None,
    content: bytes | None = None,
    on_status: Callable[[int], None] | None = None,
) -> tuple[httpx.Response, bytearray]:
    """One request to a bot or an owner's endpoint (no redirects followed) and its raw body,
    the whole exchange, headers included, over by ``deadline`` (monotonic seconds): a peer
    that drips one byte per read timeout is cut off by :data:`WATCHDOG` (its socket shut
    down), not waited for. Identity encoding, raw bytes: a compressed answer is not inflated.
    ``on_status`` is called with the status as soon as it is known.

    Raises:
        httpx.HTTPError, OSError: the request failed; ValueError: the body is larger than
            ``max_bytes`` or not complete by ``deadline``.
    """
    sockets: list[typing.Any] = []

    def trace(event: str, info: dict[str, typing.Any]) -> None:
        if event in ("connection.connect_tcp.complete", "connection.start_tls.complete"):
            stream = info.get("return_value")
            sock = stream.get_extra_info("socket") if stream is not None else None
            if sock is not None:
                sockets.append(sock)

    def cut() -> None:
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    handle = WATCHDOG.arm(deadline, cut)
    try:
        with client.stream(
            method,
            url,
            content=content,
            follow_redirects=False,
            extensions={"trace": trace},
            headers={**(headers or {}), "Accept-Encoding": "identity"},
        ) as resp:
            if on_status is not None:
                on_status(resp.status_code)
            body = bytearray()  # += on bytes copies the whole body per chunk
            for chunk in resp.iter_raw():
                body += chunk
                if len(body) > max_bytes:
                    raise ValueError(f"response larger than {max_bytes} bytes")
                if time.monotonic() > deadline:
                    raise ValueError("no complete answer in time")
    finally:
        WATCHDOG.disarm(handle)
    return resp, body
