"""Attacks on the outage mark (arena:gw:outage, TIME-1, FAULT-1): free thinking time after an outage.

After an outage of every gateway, :data:`arena.relay.OUTAGE_KEY` makes every bot's queued wait
the arena's for :data:`arena.relay.REJOIN_S`, so that a bot still reconnecting is not charged.
A bot that has already reconnected does not need it: if it takes a request (held, its own
time), then closes its connection itself, its gateway gives the request back to its list
(``daifugo_arena.gateway.presence.Presence.unregister``) and the wait is "queued" again, and
so the arena's. The bot has seen the request: it thinks offline, for free, and reconnects to
answer. One outage (a gateway restart in a one-gateway arena) hands this to every contestant.

The relay's state is written in a real Redis by the gateway's own scripts and read by the
worker's own script, on keys of this test's own (as tests/gateway/test_outage_rejoin.py).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import pytest
import redis

from arena import relay
from arena.runner.connected import ConnectedPlayer, _Clock
from tests.gateway.test_outage_rejoin import Arena, bot_ids, opened


class Relay(Arena):
    """The gateway of :class:`Arena` and one bot that connects, takes and gives back."""

    def __init__(self, r: redis.Redis):
        super().__init__(r)
        self.bot = bot_ids()[0]
        self.pop_script = r.register_script(relay.POP_AND_HOLD)
        self.made += [relay.conns_key(self.bot)]

    def ask(self) -> tuple[ConnectedPlayer, list[str], str]:
        """A request of the bot, as the worker's look reads it (its back mark too)."""
        return self.queued(self.bot)

    def connect(self) -> str:
        """A connection of the bot welcomed by the gateway (its presence lease, its back mark,
        as ``Presence.register`` writes them)."""
        member = f"{self.gw}|c{secrets.token_hex(3)}|{self.server_time():.3f}"
        self.r.zadd(relay.conns_key(self.bot), {member: self.server_time() + relay.LEASE_S})
        self.welcomed(self.bot)
        return member

    def take(self) -> list[bytes]:
        """The gateway pops and holds the bot's requests, as it does."""
        popped = self.pop_script(
            keys=[relay.request_key(self.bot)], args=[self.gw, 8, relay.held_key(""), relay.HOLD_GRACE_MS]
        )
        return list(popped[1]) if popped else []

    def close(self, member: str, envs: list[bytes]) -> None:
        """The bot closes its connection: the gateway releases its lease and gives its
        requests back to the front of the list (``Presence.unregister``)."""
        self.r.zrem(relay.conns_key(self.bot), member)
        self.r.eval(relay.PUSH_AND_RING, *relay.push_args(self.bot, envs, front=True))


@pytest.fixture
def rel(redis_url: str) -> Iterator[Relay]:
    yield from opened(redis_url, Relay)


def test_a_bot_that_reconnected_and_closes_on_a_request_is_not_given_free_time(rel: Relay) -> None:
    """The gateway restarts (an outage of every gateway, ended by its beat). The bot reconnects
    at once, takes its request (its own time), closes its connection itself: the request goes
    back to its list. Its absence now is its own choice, not a reconnection after the outage:
    the look must say "queued|0" (the bot's), not "queued|1|0" (the arena's)."""
    rel.welcomed(rel.bot)  # connected before the outage: reconnecting is the arena's after it
    rel.died(seconds_ago=relay.ALIVE_TTL_S + 1.0)
    rel.beat()  # the gateway is back: the beat ends the outage, every bot has REJOIN_S
    assert rel.r.get(rel.outage) is not None
    member = rel.connect()  # the cheater is back at once
    player, keys, env = rel.ask()
    taken = rel.take()
    assert [e.decode() for e in taken] == [env]
    assert player._look(keys, env, False)[0] == "held"  # the bot sees the request
    rel.close(member, taken)  # and leaves with it, to think offline
    clock = _Clock(0.0)
    clock.observe(10.0, *player._look(keys, env, False))
    assert clock.arena_s == 0.0 and clock.bot_waited == pytest.approx(10.0), (
        "a bot that reconnected after the outage and then closed its connection on a request "
        "gets its offline thinking time free, as the arena's"
    )


def lease_on_dead_gateway(rel: Relay, dead_for_s: float) -> str:
    """A gateway whose last beat was ``dead_for_s`` ago (its alive key gone) still listed in
    the bot's presence (its lease lives up to ``LEASE_S``); returns the gateway's id."""
    dead = f"gw-dead-{secrets.token_hex(3)}"
    now = rel.server_time()
    rel.r.zadd(rel.gateways, {dead: now - dead_for_s})
    rel.r.zadd(relay.conns_key(rel.bot), {f"{dead}|c-old|{now - 60:.3f}": now + relay.LEASE_S})
    return dead


def test_a_bot_back_on_another_gateway_that_closes_on_a_request_is_not_covered_by_a_dead_lease(
    rel: Relay,
) -> None:
    """The same cheat without an outage: the bot's gateway died (its lease there lives on for
    up to 30 s); the bot is welcomed by another gateway, takes its request, closes its
    connection. The dead gateway's lease must not make its offline thinking the arena's."""
    rel.beat()
    rel.r.delete(rel.outage)  # no outage: another gateway lives throughout
    lease_on_dead_gateway(rel, dead_for_s=10.0)
    member = rel.connect()  # welcomed by the live gateway after the other one's last beat
    player, keys, env = rel.ask()
    taken = rel.take()
    assert [e.decode() for e in taken] == [env]
    rel.close(member, taken)
    clock = _Clock(0.0)
    clock.observe(10.0, *player._look(keys, env, False))
    assert clock.arena_s == 0.0 and clock.bot_waited == pytest.approx(10.0)


def test_a_bot_still_reconnecting_after_its_gateway_died_is_kept_out(rel: Relay) -> None:
    """The honest bot: its last welcome was by the gateway that died, before its death (or by
    the same gateway, late, after its last beat): that lease still keeps the bot out."""
    rel.beat()
    dead = lease_on_dead_gateway(rel, dead_for_s=2.0)
    player, keys, env = rel.ask()
    for back in (rel.server_time() - 60, rel.server_time()):  # before its death; after its last beat
        rel.r.set(relay.back_key(rel.bot), f"{back:.6f}|{dead}")
        state, info = player._look(keys, env, False)
        assert state == "queued" and info.startswith("1|") and dead in info.split("|")[2:], (back, info)
