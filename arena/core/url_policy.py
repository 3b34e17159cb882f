"""Validation of bot endpoint URLs against SSRF.

A bot URL must be ``http`` or ``https``, carry no credentials (``user:pass@``), name a host,
and every address the host resolves to must be a public unicast address. Refused always:
link-local (this includes the cloud metadata address ``169.254.169.254``), multicast,
unspecified, reserved addresses and well-known metadata hosts. Refused unless
``allow_private`` (setting ``ARENA_ALLOW_PRIVATE_BOT_URLS``, for local development and the
tests): loopback (``127.0.0.1``, ``::1``, ``localhost``...) and private networks (RFC 1918,
RFC 6598 shared ``100.64.0.0/10``, IPv6 ULA ``fc00::/7``).

Calls to bots never follow redirects (the callers pass ``follow_redirects=False``), so a bot
cannot bounce the orchestrator to an address refused here. Re-check right before calling:
DNS answers may change (see :func:`check_bot_url`).
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

import httpx

MAX_URL_LENGTH = 2048

#: Cloud metadata endpoints refused even with ``allow_private``.
METADATA_HOSTS = frozenset({"metadata.google.internal", "metadata", "instance-data"})
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a) for a in ("169.254.169.254", "100.100.100.200", "fd00:ec2::254", "169.254.170.2")
)


class BotUrlError(ValueError):
    """A bot URL is refused; the message says why (shown to the user as a 422 on ``url``)."""


def _address_problem(ip: ipaddress.IPv4Address | ipaddress.IPv6Address, allow_private: bool) -> str | None:
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip in METADATA_ADDRESSES:
        return "a cloud metadata address"
    if ip.is_unspecified:
        return "an unspecified address"
    if ip.is_multicast:
        return "a multicast address"
    if ip.is_link_local:
        return "a link-local address"
    if ip.is_loopback:
        return None if allow_private else "a loopback address"
    if ip.is_reserved:
        return "a reserved address"
    if ip.is_global:
        return None
    # Private (RFC 1918, ULA), shared (100.64/10), documentation, benchmarking...
    if allow_private and (ip.is_private or ip in ipaddress.ip_network("100.64.0.0/10")):
        return None
    return "a private or non-public address"


def resolve_host(host: str, port: int) -> list[str]:
    """All addresses ``host`` resolves to (TCP). Raises :class:`BotUrlError` if it does not resolve."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError, OSError) as exc:
        raise BotUrlError(f"host {host!r} does not resolve ({exc})") from None
    return sorted({str(info[4][0]) for info in infos})


def check_bot_url(url: str, *, allow_private: bool = False, resolve: bool = True) -> str:
    """Validate a bot endpoint URL and return it unchanged.

    Args:
        url: e.g. ``https://bot.example.org/decide``.
        allow_private: accept loopback and private-network hosts (never link-local/metadata).
        resolve: look the host up in DNS and check every address (default). With False only
            the syntax and literal IP addresses are checked.

    Raises:
        BotUrlError: scheme not http/https, credentials present, no host, bad port, too long,
            a host name httpx cannot send to (IDNA),
            host does not resolve, or resolves to a refused address (message says which).
    """
    if not isinstance(url, str) or not url:
        raise BotUrlError("URL is empty")
    if len(url) > MAX_URL_LENGTH:
        raise BotUrlError(f"URL is longer than {MAX_URL_LENGTH} characters")
    if any(c.isspace() or ord(c) < 32 for c in url):
        raise BotUrlError("URL contains whitespace or control characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise BotUrlError(f"URL is malformed ({exc})") from None
    if parts.scheme not in ("http", "https"):
        raise BotUrlError("URL scheme must be http or https")
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        raise BotUrlError("URL must not contain credentials")
    try:  # what the worker will send: a host name IDNA refuses fails here, not in every match
        httpx.Request("POST", url)
    except (httpx.InvalidURL, ValueError) as exc:
        raise BotUrlError(f"URL is malformed ({exc})") from None
    host = parts.hostname
    if not host:
        raise BotUrlError("URL has no host")
    host = host.rstrip(".").lower()
    if host in METADATA_HOSTS:
        raise BotUrlError(f"host {host!r} is a cloud metadata host")
    port = port or (443 if parts.scheme == "https" else 80)
    try:
        literal = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        literal = None
    if literal is None and (len(host) > 253 or any(not 0 < len(label) <= 63 for label in host.split("."))):
        raise BotUrlError(f"host {host[:80]!r} is not a valid host name (empty or over-long label)")
    if literal is not None:
        addresses = [str(literal)]
    elif not resolve:
        return url
    else:
        addresses = resolve_host(host, port)
    for address in addresses:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
        problem = _address_problem(ip, allow_private)
        if problem:
            shown = host if literal is not None else f"{host} ({address})"
            raise BotUrlError(f"host {shown} is {problem}; bot URLs must be public")
    return url
