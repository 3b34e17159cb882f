"""The one way the arena connects to a bot: httpx transports that pin the checked address.

:class:`PinnedTransport` is an ``httpx.HTTPTransport`` whose connection pool opens every TCP
connection through :class:`PinnedBackend`: the host is resolved once
(:func:`arena.core.url_policy.checked_addresses`), every address is judged by the SSRF policy,
and the socket connects to one of those very addresses (tried in the resolver's order). The
request URL is unchanged, so the ``Host`` header and the TLS server name (SNI, certificate
check) stay the bot's host name. A refused or unresolvable host is an ``httpcore.ConnectError``,
which httpx raises as ``httpx.ConnectError`` (the fault ``connection_error`` in a match).

The resolution happens per new connection, not per request: a keep-alive connection reused
for the next decision costs no DNS lookup and no check. Used by the health check
(:mod:`arena.core.conformance`) and by every match (:class:`arena.core.runner.players.HttpPlayer`),
in the API process and in the workers alike; ``allow_private`` is the setting
``ARENA_ALLOW_PRIVATE_BOT_URLS`` of the process making the connection.
"""

from __future__ import annotations

import ssl
import typing

import httpcore
import httpx

from arena.core.url_policy import BotUrlError, checked_addresses


class PinnedBackend(httpcore.SyncBackend):
    """httpcore's synchronous network backend, connecting only to checked addresses.

    ``connect_tcp(host, port, ...)`` -> stream, or ``httpcore.ConnectError`` when the policy
    refuses the host or no checked address accepts the connection. ``connections`` counts the
    TCP connections opened (each one resolution).
    """

    def __init__(self, *, allow_private: bool):
        self.allow_private = allow_private
        self.connections = 0

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: typing.Iterable[typing.Any] | None = None) -> httpcore.NetworkStream:
        try:
            addresses = checked_addresses(host, port, allow_private=self.allow_private)
        except BotUrlError as exc:
            raise httpcore.ConnectError(f"refused by the bot URL policy: {exc}") from None
        self.connections += 1
        last: Exception | None = None
        for address in addresses:
            try:
                return super().connect_tcp(address, port, timeout=timeout, local_address=local_address,
                                           socket_options=socket_options)
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

    def __init__(self, *, allow_private: bool, ssl_context: ssl.SSLContext | None = None,
                 limits: httpx.Limits = ONE_CONNECTION,
                 socket_options: typing.Iterable[typing.Any] | None = None):
        self.backend = PinnedBackend(allow_private=allow_private)
        self._pool = httpcore.ConnectionPool(
            ssl_context=ssl_context or ssl.create_default_context(),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            socket_options=socket_options,
            network_backend=self.backend,
        )
