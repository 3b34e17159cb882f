"""A gateway's settings (:class:`GatewayConfig`): where it listens, its caps and its timings.

``arena gateway`` builds one from :class:`arena.config.Settings` (``daifugo_arena/cli/gateway.py``); tests and
the demo name only what they change. The constants below are the defaults.
"""

from __future__ import annotations

import os
import secrets
import socket
from dataclasses import dataclass, field

from arena import relay
from bots_sdk import wire

#: Seconds one frame may take to be written to a bot's socket; more is a slow reader.
SEND_TIMEOUT_S = 10.0
#: Seconds a bot's credentials are cached (a rotation or a deletion is seen within this).
CREDENTIALS_TTL_S = 5.0
#: Longest read of a bot's credentials, seconds: past it the database counts as down (a
#: connection authenticating is closed with 1011, try again; the renewal keeps connections).
CREDENTIALS_TIMEOUT_S = 5.0
#: Seconds between two looks at every held bot's request list, rung or not (requests pushed
#: by a worker that does not ring, e.g. during a rolling upgrade, wait at most this).
SWEEP_S = 5.0
#: Seconds between two renewals of the connections' presence leases.
RENEW_S = relay.LEASE_S / 3
#: Most connections of one client (:func:`arena.clients.client_key`: an IPv4 address, an IPv6
#: /64) waiting to authenticate at once.
MAX_UNAUTHENTICATED_PER_ADDRESS = 64
#: Most connections of one network (:func:`arena.clients.network_key`: an IPv4 /24, an IPv6 /48)
#: waiting to authenticate at once: one machine holding many addresses of a network cannot
#: take the whole of ``max_unauthenticated`` (2,000: at least 8 networks are needed).
MAX_UNAUTHENTICATED_PER_NETWORK = 256
#: Seconds a connection refused for a spent budget is held, unread, before it is dropped: a
#: stranger reconnecting in a loop opens a connection per this time, not thousands a second
#: (each costs the machine a TCP handshake).
TARPIT_S = 5.0


def _gateway_id() -> str:
    return f"gw-{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(3)}"


@dataclass(frozen=True)
class GatewayConfig:
    """A gateway's settings.

    Attributes:
        host, port: where to listen (port 0: any free port, see ``Gateway.port`` once ready).
        max_per_bot, max_per_account: connection caps (``ARENA_GATEWAY_MAX_PER_BOT`` ...).
        max_connections: most connections of this process (more are refused with 1013).
        max_unauthenticated: most connections waiting to authenticate at once (more: 1013).
        max_unauthenticated_per_address: the same, from one client
            (:func:`arena.clients.client_key`; more: 1013), so that one client cannot
            hold every place of ``max_unauthenticated``.
        max_unauthenticated_per_network: the same, from one network (an IPv4 /24, an IPv6 /48,
            :func:`arena.clients.network_key`; more: 1013): one machine holding many addresses.
        tarpit_s: :data:`TARPIT_S`.
        proxy_hops: trusted reverse proxies in front (``ARENA_PROXY_HOPS``).
        auth_timeout_s: seconds a connection has to prove its bot (:data:`bots_sdk.wire.AUTH_TIMEOUT_S`).
        send_timeout_s: :data:`SEND_TIMEOUT_S`.
        renew_s: seconds between two renewals of the connections (:data:`RENEW_S`).
        credentials_ttl_s: seconds credentials are cached (:data:`CREDENTIALS_TTL_S`).
        credentials_timeout_s: longest read of a bot's credentials (:data:`CREDENTIALS_TIMEOUT_S`).
        gateway_id: this gateway's id (default: host, pid and a random part).
        sweep_s: :data:`SWEEP_S`.
    """

    host: str = "127.0.0.1"
    port: int = 8765
    max_per_bot: int = 8
    max_per_account: int = 32
    max_connections: int = 20_000
    max_unauthenticated: int = 2_000
    max_unauthenticated_per_address: int = MAX_UNAUTHENTICATED_PER_ADDRESS
    max_unauthenticated_per_network: int = MAX_UNAUTHENTICATED_PER_NETWORK
    tarpit_s: float = TARPIT_S
    proxy_hops: int = 0
    auth_timeout_s: float = wire.AUTH_TIMEOUT_S
    send_timeout_s: float = SEND_TIMEOUT_S
    renew_s: float = RENEW_S
    credentials_ttl_s: float = CREDENTIALS_TTL_S
    credentials_timeout_s: float = CREDENTIALS_TIMEOUT_S
    gateway_id: str = field(default_factory=_gateway_id)
    sweep_s: float = SWEEP_S
