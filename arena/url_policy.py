"""Validation of bot endpoint URLs against SSRF.

A bot URL must be ``http`` or ``https``, carry no credentials (``user:pass@``), name a host,
and every address the host resolves to must be a public unicast address. Refused always:
link-local (this includes the cloud metadata address ``169.254.169.254``), multicast,
unspecified, reserved addresses and well-known metadata hosts. Refused unless
``allow_private`` (setting ``ARENA_ALLOW_PRIVATE_BOT_URLS``, for local development and the
tests): loopback (``127.0.0.1``, ``::1``, ``localhost``...) and private networks (RFC 1918,
RFC 6598 shared ``100.64.0.0/10``, IPv6 ULA ``fc00::/7``).

IPv6 addresses that embed an IPv4 address are judged by the embedded one: IPv4-mapped
``::ffff:0:0/96``, 6to4 ``2002::/16`` and NAT64 ``64:ff9b::/96`` / ``64:ff9b:1::/48``;
``http://[2002:7f00:1::]/`` (6to4 of 127.0.0.1) is refused like 127.0.0.1.

Refused always, whatever ``ipaddress`` says on this Python (3.11 calls the first three
global): :data:`REFUSED_RANGES`, special-purpose ranges of IANA's registries that are not
globally reachable or deprecated: site-local ``fec0::/10``, documentation ``3fff::/20``,
the 6to4 relay anycast ``192.88.99.0/24``, "this network" ``0.0.0.0/8`` (private for
``ipaddress``, but a connection to it may reach this host), Teredo ``2001::/32`` (a tunnel whose far end the
arena cannot judge) and IPv4-compatible ``::/96`` (deprecated, RFC 4291; ``::`` and ``::1``
keep their own names). ``tests/api/test_url_policy.py`` lists every special range and what
happens to it.

Registration checks the URL (:func:`check_bot_url`); every connection checks again, at
connection time: :func:`checked_addresses` resolves the host once, judges every address,
and the connection goes to one of exactly those addresses (``arena.bot_transport``),
so a name that resolves to a public address at registration and to 127.0.0.1 later is
refused at the connection. Calls to bots never follow redirects (the callers pass
``follow_redirects=False``), so a bot cannot bounce the orchestrator to an address refused here.
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


#: Appended to the error for a loopback or private address (refused only without the setting).
PRIVATE_HINT = (
    " (a local test or demo: set ARENA_ALLOW_PRIVATE_BOT_URLS=1 for the API and the workers "
    "to accept loopback and private addresses)"
)


class BotUrlError(ValueError):
    """A bot URL is refused; the message says why (shown to the user as a 422 on ``url``)."""


_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")
#: Ranges refused always (module docstring), with the reason shown.
REFUSED_RANGES: tuple[tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, str], ...] = (
    (ipaddress.ip_network("fec0::/10"), "a deprecated site-local address (RFC 3879)"),
    (ipaddress.ip_network("3fff::/20"), "a documentation address (RFC 9637)"),
    (ipaddress.ip_network("192.88.99.0/24"), "a deprecated 6to4 relay anycast address (RFC 7526)"),
    (ipaddress.ip_network("0.0.0.0/8"), "an address of 'this network' (RFC 791: some stacks reach this host)"),
    (ipaddress.ip_network("2001::/32"), "a Teredo address (a tunnel: RFC 4380)"),
)
_NAT64 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))


def embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address embeds (mapped, compatible, 6to4, Teredo client,
    NAT64), or None."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]
    if any(ip in net for net in _NAT64) or (ip in _IPV4_COMPATIBLE and int(ip) > 1):
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def _address_problem(ip: ipaddress.IPv4Address | ipaddress.IPv6Address, allow_private: bool) -> str | None:
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped  # ::ffff:a.b.c.d is a.b.c.d on the wire
    for network, why in REFUSED_RANGES:
        if ip.version == network.version and ip in network:
            return why
    if isinstance(ip, ipaddress.IPv6Address):
        if ip in _IPV4_COMPATIBLE and int(ip) > 1:
            return "a deprecated IPv4-compatible address (RFC 4291)"
        inner = embedded_ipv4(ip)
        if inner is not None:
            problem = _address_problem(inner, allow_private)
            if problem:
                return f"an IPv6 address embedding {inner} ({problem})"
            return None
    return _address_problem_plain(ip, allow_private)


def _address_problem_plain(ip: ipaddress.IPv4Address | ipaddress.IPv6Address, allow_private: bool) -> str | None:
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
    """All addresses ``host`` resolves to (TCP), in the resolver's order, once each (one
    ``socket.getaddrinfo`` call). Raises :class:`BotUrlError` if it does not resolve."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError, OSError) as exc:
        raise BotUrlError(f"host {host!r} does not resolve ({exc})") from None
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def checked_addresses(host: str, port: int, *, allow_private: bool) -> list[str]:
    """Resolve ``host`` once and return its addresses if every one is allowed (module docstring).

    ``host`` is a host name (already IDNA-encoded) or a literal IPv4/IPv6 address without
    brackets. Raises :class:`BotUrlError` for a metadata host, a name that does not resolve,
    or any refused address (the message names it).
    """
    host = host.strip("[]").rstrip(".").lower()
    if host in METADATA_HOSTS:
        raise BotUrlError(f"host {host!r} is a cloud metadata host")
    try:
        literal = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        literal = None
    addresses = [host] if literal is not None else resolve_host(host, port)
    for address in addresses:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
        problem = _address_problem(ip, allow_private)
        if problem:
            shown = host if literal is not None else f"{host} ({address})"
            hint = PRIVATE_HINT if _address_problem(ip, True) is None else ""
            raise BotUrlError(f"host {shown} is {problem}; bot URLs must be public{hint}")
    return addresses


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
    if literal is None and not resolve:
        return url
    checked_addresses(host, port, allow_private=allow_private)
    return url
