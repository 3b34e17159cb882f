"""One notion of "one client", for every limiter of the arena (docs/operations.md, "Clients").

Every per-client limit (the API's rate limits, :mod:`api.ratelimit`; the gateway's caps on
connections that have not authenticated, ``daifugo_arena/gateway/server.py``; the check queue's fair order,
:func:`arena.lifecycle.checks.claim_next_check`) counts by :func:`client_key` of the address
a request comes from, and nothing else:

* an IPv4 address is one client (``203.0.113.7``);
* an IPv6 address is one client per /64 network (``2001:db8:1:2::/64``): a host is given a
  whole /64 and picks any address in it, so counting addresses apart would give one machine
  2^64 clients (four addresses of one /64 got four times the sign-ups of one IPv4 address);
* an IPv4-mapped IPv6 address (``::ffff:203.0.113.7``) is its IPv4 address;
* anything else (a Unix socket, a missing peer) is its text, cut to :data:`MAX_KEY_CHARS`.

Some caps also count a client's neighbourhood, :func:`network_key`: an IPv4 /24 or an IPv6
/48, so that one machine holding many addresses of one network (36 loopback addresses, a
rented /24) cannot take a whole global cap.

:func:`forwarded_address` is the one reading of ``X-Forwarded-For`` behind trusted proxies
(``ARENA_PROXY_HOPS``), as werkzeug's ``ProxyFix`` reads it for the API.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

#: Bits of an IPv6 client's network (one host holds a whole /64).
IPV6_CLIENT_BITS = 64
#: Bits of a client's neighbourhood (:func:`network_key`): IPv4 and IPv6.
IPV4_NETWORK_BITS = 24
IPV6_NETWORK_BITS = 48
#: Longest key kept of text that is not an address.
MAX_KEY_CHARS = 100


def _ip(address: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        ip = ipaddress.ip_address(address.strip().split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


def client_key(address: str | None) -> str:
    """The client an address belongs to (module docstring): ``"203.0.113.7"``,
    ``"2001:db8:1:2::/64"``, or the text itself (cut) when it is not an address."""
    text = address or ""
    ip = _ip(text)
    if ip is None:
        return text[:MAX_KEY_CHARS]
    if isinstance(ip, ipaddress.IPv6Address):
        return str(ipaddress.ip_network(f"{ip}/{IPV6_CLIENT_BITS}", strict=False))
    return str(ip)


def network_key(address: str | None) -> str:
    """The neighbourhood of an address: its IPv4 /24 (``"203.0.113.0/24"``) or IPv6 /48
    network; the text itself (cut) when it is not an address."""
    text = address or ""
    ip = _ip(text)
    if ip is None:
        return text[:MAX_KEY_CHARS]
    bits = IPV6_NETWORK_BITS if isinstance(ip, ipaddress.IPv6Address) else IPV4_NETWORK_BITS
    return str(ipaddress.ip_network(f"{ip}/{bits}", strict=False))


def forwarded_address(peer: str, forwarded_for: Iterable[str], proxy_hops: int) -> str:
    """The address a request comes from: ``peer`` (the socket's), or behind ``proxy_hops``
    trusted proxies the address the outermost of them put in ``X-Forwarded-For``
    (``forwarded_for``: every value of the header, in order), as ``ProxyFix(x_for=hops)``
    reads it. A header shorter than the hops is the client's own words: ``peer`` counts."""
    if proxy_hops <= 0:
        return peer
    hops = [h.strip() for h in ",".join(forwarded_for).split(",")]
    if len(hops) >= proxy_hops and hops[-proxy_hops]:
        return hops[-proxy_hops]
    return peer
