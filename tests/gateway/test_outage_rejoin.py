"""After an outage of every gateway, every bot is the arena's while it reconnects (TIME-1, FAULT-1).

A bot whose only gateway died reconnects with the SDK's backoff (up to 10 s after a long
outage). The arena gives it :data:`arena.relay.REJOIN_S` for that. Before, the rejoin time was
started only by a look at one of the bot's own queued requests during the outage, so a bot with
no request waiting then (its rival was the one asked) was charged for its reconnection as soon
as the gateway came back, and with a short bank got a timeout fault for the arena's outage
(tests/gateway/test_arena_outages.py, now and then).

The relay's state is written in a real Redis as the gateways write it (their beat, by the
gateway's own script :data:`arena.relay.ALIVE_BEAT`) and read by the worker's own script
(:data:`arena.runner.connected._WHERE`), on keys of this test's own (no other test's gateway
counts), so every figure is exact whatever the machine's load.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator
from typing import TypeVar

import pytest
import redis

from arena import relay
from arena.runner.connected import NO_GATEWAY, ConnectedPlayer, _Clock
from bots_sdk import wire

A = TypeVar("A", bound="Arena")


class Arena:
    """One gateway and two bots' requests, on keys of this test's own."""

    def __init__(self, r: redis.Redis):
        self.r = r
        tag = secrets.token_hex(4)
        self.gateways = f"test:{tag}:gateways"
        self.outage = f"test:{tag}:outage"
        self.gw = f"gw-{tag}"
        self.beat_script = r.register_script(relay.ALIVE_BEAT)
        self.made: list[str] = [self.gateways, self.outage, relay.alive_key(self.gw)]

    def server_time(self) -> float:
        sec, usec = self.r.time()
        return sec + usec / 1_000_000

    def beat(self, gw: str | None = None) -> None:
        """A beat of ``gw`` (default this test's gateway), as the gateway sends it."""
        gw = gw or self.gw
        self.made.append(relay.alive_key(gw))
        self.beat_script(
            keys=[relay.alive_key(gw), self.gateways, self.outage],
            args=["0", int(relay.ALIVE_TTL_S * 1000), gw, relay.DROPPED_TTL_S],
        )

    def died(self, seconds_ago: float) -> None:
        """The gateway's last beat ``seconds_ago``, its alive key lapsed (killed)."""
        self.r.delete(relay.alive_key(self.gw))
        self.r.zadd(self.gateways, {self.gw: self.server_time() - seconds_ago})

    def queued(self, bot_id: int) -> tuple[ConnectedPlayer, list[str], str]:
        """A request of ``bot_id`` waiting in its list (no connection of the bot anywhere)."""
        rid = secrets.token_hex(12)
        env = relay.envelope(rid, int((time.time() + 60) * 1000), "request", wire.frame("request", rid, b"{}"))
        keys = [
            relay.request_key(bot_id),
            relay.held_key(rid),
            relay.conns_key(bot_id),
            relay.dropped_key(bot_id),
            self.gateways,
            self.outage,
            relay.back_key(bot_id),
        ]
        self.made += [*keys[:4], keys[6]]
        self.r.rpush(keys[0], env)
        return ConnectedPlayer(bot_id, self.r), keys, env

    def welcomed(self, bot_id: int) -> None:
        """A connection of ``bot_id`` welcomed now (its back mark, as ``Presence.register``
        writes it)."""
        self.made.append(relay.back_key(bot_id))
        self.r.eval(relay.MARK_BACK, 1, relay.back_key(bot_id), relay.BACK_TTL_S)

    def cleanup(self) -> None:
        self.r.delete(*self.made)


def opened(redis_url: str, kind: type[A]) -> Iterator[A]:
    """A fixture's body: ``kind`` on a client of ``redis_url``, its keys deleted afterwards."""
    client = redis.Redis.from_url(redis_url)
    state = kind(client)
    yield state
    state.cleanup()
    client.close()


@pytest.fixture
def arena(redis_url: str) -> Iterator[Arena]:
    yield from opened(redis_url, Arena)


def bot_ids() -> tuple[int, int]:
    first = 800_000 + secrets.randbelow(90_000)
    return first, first + 1


def test_a_bot_with_no_request_during_the_outage_is_given_its_rejoin_time(arena: Arena) -> None:
    """Bot A's request waits while the only gateway is down (the arena's); the gateway comes
    back; bot B, asked next and still reconnecting, waits: the arena's too, then its own once
    :data:`arena.relay.REJOIN_S` has passed since the outage ended."""
    a, b = bot_ids()
    arena.welcomed(a)  # both bots were connected before the gateway died
    arena.welcomed(b)
    arena.died(seconds_ago=30.0)
    player_a, keys_a, env_a = arena.queued(a)
    state, info = player_a._look(keys_a, env_a, False)
    assert (state, info) == ("queued", "1|" + info.split("|")[1]) and int(info.split("|")[1]) >= 29_000
    arena.beat()  # the gateway is back: the beat ends the outage
    ended = float(arena.r.get(arena.outage))
    assert abs(arena.server_time() - ended) < 5.0
    player_b, keys_b, env_b = arena.queued(b)
    assert player_b._look(keys_b, env_b, False) == ("queued", "1|0")  # reconnecting: the arena's
    clock = _Clock(0.0)
    clock.observe(2.0, *player_b._look(keys_b, env_b, False))
    assert clock.why == NO_GATEWAY and clock.arena_s == pytest.approx(2.0)
    # REJOIN_S after the outage ended, B's absence is its own (the gateway has been up since)
    arena.r.set(arena.outage, f"{arena.server_time() - relay.REJOIN_S - 0.5:.6f}")
    arena.beat()
    assert player_b._look(keys_b, env_b, False) == ("queued", "0")


def test_only_a_beat_after_every_gateway_was_silent_ends_an_outage(arena: Arena) -> None:
    """A gateway joining others that beat does not start anyone's rejoin time; the first beat
    after none beat within the alive key's time does (a restart, or a frozen gateway's return)."""
    other = f"gw-other-{secrets.token_hex(3)}"
    arena.beat(other)  # the first gateway ever: none beat before it
    assert arena.r.get(arena.outage) is not None
    arena.r.delete(arena.outage)
    arena.beat()
    assert arena.r.get(arena.outage) is None
    arena.r.zadd(arena.gateways, {other: arena.server_time() - relay.ALIVE_TTL_S - 1.0})
    arena.r.delete(relay.alive_key(other))
    arena.died(seconds_ago=relay.ALIVE_TTL_S + 0.5)
    assert arena.r.get(arena.outage) is None  # nobody looked, nobody beat: not known yet
    arena.beat()
    assert arena.r.get(arena.outage) is not None
    assert 0 < arena.r.ttl(arena.outage) <= relay.DROPPED_TTL_S


def test_a_look_during_the_outage_marks_it_for_every_bot(arena: Arena) -> None:
    """While no gateway is alive, a worker's look at any queued request marks the outage: a
    bot that had nothing queued then is covered from that moment too."""
    a, b = bot_ids()
    arena.welcomed(a)
    arena.welcomed(b)
    arena.died(seconds_ago=relay.ALIVE_TTL_S + 1.0)
    player_a, keys_a, env_a = arena.queued(a)
    assert player_a._look(keys_a, env_a, False)[0] == "queued"
    assert arena.r.get(arena.outage) is not None
    arena.beat(f"gw-new-{secrets.token_hex(3)}")  # another gateway is up: the outage is over
    player_b, keys_b, env_b = arena.queued(b)
    assert player_b._look(keys_b, env_b, False) == ("queued", "1|0")


def test_a_bot_never_connected_is_not_covered_by_an_outage(arena: Arena) -> None:
    """The first beat of a gateway started in a fresh arena (or after an outage) marks the
    outage; a bot never welcomed was not dropped by it and is not reconnecting: its wait for a
    connection is its own (``connection_error`` after ``reconnect_s``, a check that fails)."""
    a, _ = bot_ids()
    arena.beat()  # a gateway's first beat, none before it: the mark is set
    assert arena.r.get(arena.outage) is not None
    player, keys, env = arena.queued(a)
    assert player._look(keys, env, False) == ("queued", "0")
