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

import ssl
import typing

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
