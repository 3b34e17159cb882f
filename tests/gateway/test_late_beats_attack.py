"""A cheating bot against the clock of a late or dead gateway (``arena.runner.connected``).

The relay's state is written in a real Redis as the gateways write it (their beat, the bot's
presence leases, the pop that marks a request held) and read by the worker's own script
(:data:`arena.runner.connected._WHERE`); the clock (:class:`arena.runner.connected._Clock`) is
fed the worker's looks at chosen instants, so every figure is exact whatever the machine's load.

The attack: a bot connected on two gateways sees one of them die (its connection there drops:
the bot knows at once). It keeps thinking on the live gateway, then drops its connection there:
its request goes back to the queue while its lease on the dead gateway still lives, so the arena
keeps it out (``queued|1``) and the time since the dead gateway's last beat is the arena's. That
time must not include the thinking done on the live gateway (it was the bot's, FAULT-1).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator

import pytest
import redis

from arena import relay
from arena.runner.connected import LATE, NO_GATEWAY, ConnectedPlayer, _Clock
from bots_sdk import wire


@pytest.fixture
def r(redis_url: str) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(redis_url)
    yield client
    client.close()


class Relay:
    """A bot's request in the relay and two gateways around it, as the gateways write them."""

    def __init__(self, r: redis.Redis):
        self.r = r
        self.bot_id = 900_000 + secrets.randbelow(90_000)
        self.live, self.dead = f"atk-live-{secrets.token_hex(3)}", f"atk-dead-{secrets.token_hex(3)}"
        self.player = ConnectedPlayer(self.bot_id, r)
        self.rid = secrets.token_hex(12)
        self.env = relay.envelope(
            self.rid, int((time.time() + 60) * 1000), "request", wire.frame("request", self.rid, b"{}")
        )
        self.keys = [
            relay.request_key(self.bot_id),
            relay.held_key(self.rid),
            relay.conns_key(self.bot_id),
            relay.dropped_key(self.bot_id),
            relay.GATEWAYS_KEY,
        ]

    def server_time(self) -> float:
        sec, usec = self.r.time()
        return sec + usec / 1_000_000

    def beat(self, gw: str, *, beat_age_s: float = 0.0, alive: bool = True) -> None:
        """``gw``'s last beat ``beat_age_s`` ago (its alive key lapsed if not ``alive``)."""
        now = self.server_time()
        ttl_ms = int(relay.ALIVE_TTL_S * 1000)
        if alive:
            self.r.set(relay.alive_key(gw), "0", px=max(1, ttl_ms - int(beat_age_s * 1000)))
        else:
            self.r.delete(relay.alive_key(gw))
        self.r.zadd(relay.GATEWAYS_KEY, {gw: now - beat_age_s})  # as ALIVE_BEAT: to the microsecond

    def connect(self, gw: str, conn: str) -> str:
        member = relay.member(gw, conn, time.time())
        self.r.zadd(relay.conns_key(self.bot_id), {member: time.time() + relay.LEASE_S})
        return member

    def drop(self, member: str) -> None:
        self.r.zrem(relay.conns_key(self.bot_id), member)

    def push(self) -> None:
        self.r.rpush(relay.request_key(self.bot_id), self.env)

    def pop(self, gw: str) -> None:
        """``gw`` pops the request and marks it held (:data:`arena.relay.POP_AND_HOLD`)."""
        got = self.r.eval(relay.POP_AND_HOLD, 1, relay.request_key(self.bot_id), gw, 1, relay.held_key(""), 2000)
        assert got and got[1][0].decode() == self.env

    def give_back(self) -> None:
        """The connection holding the request closed: back to the front of the list."""
        self.r.delete(relay.held_key(self.rid))
        self.r.lpush(relay.request_key(self.bot_id), self.env)

    def look(self) -> tuple[str, str]:
        return self.player._look(self.keys, self.env, False)

    def cleanup(self) -> None:
        self.r.delete(*self.keys[:4], relay.alive_key(self.live), relay.alive_key(self.dead))
        self.r.zrem(relay.GATEWAYS_KEY, self.live, self.dead)
        self.r.delete(relay.wake_key(self.live), relay.wake_key(self.dead))


@pytest.fixture
def rel(r: redis.Redis) -> Iterator[Relay]:
    rel = Relay(r)
    yield rel
    rel.cleanup()


def test_thinking_on_a_live_gateway_is_not_paid_for_a_dead_one_beside_it(rel: Relay) -> None:
    """FAULT-1, TIME-1: the bot thinks 20 s on the live gateway after the other one died, then
    drops its connection there: only the time queued since is the arena's."""
    rel.beat(rel.live)
    rel.beat(rel.dead, beat_age_s=30.0, alive=False)  # died 30 s ago; the bot's lease there lives on
    rel.connect(rel.dead, "c-dead")
    on_live = rel.connect(rel.live, "c-live")
    clock = _Clock(0.0)
    rel.push()
    rel.pop(rel.live)
    for t in range(1, 21):  # thinking, held by the live gateway: looked at every second
        state, info = rel.look()
        assert (state, info.split("|")[2]) == ("held", rel.live)
        clock.observe(float(t), state, info)
        rel.beat(rel.live)
    assert clock.arena_s == 0.0 and clock.why == ""
    rel.drop(on_live)  # the cheat: its request goes back to the queue, its dead lease lives on
    rel.give_back()
    state, info = rel.look()
    assert state == "queued" and info.startswith("1|") and rel.dead in info.split("|")[2:]
    assert int(info.split("|")[1]) >= 29_000  # the dead gateway's last beat, 30 s ago
    clock.observe(20.5, state, info)
    assert clock.why == NO_GATEWAY
    assert clock.arena_s == pytest.approx(0.5)  # the queued half second, not the 20 s of thinking


def test_a_gateway_that_misses_its_beats_while_holding_the_request_gives_its_time_back(rel: Relay) -> None:
    """The gateway holding the request froze (its last beat 2 s old, its alive key not yet
    lapsed): the time since its last beat is the arena's, and only that."""
    rel.beat(rel.live)
    rel.connect(rel.live, "c-live")
    clock = _Clock(0.0)
    rel.push()
    rel.pop(rel.live)
    state, info = rel.look()
    clock.observe(5.0, state, info)  # 5 s of thinking, the gateway beating
    assert clock.arena_s == 0.0
    rel.beat(rel.live, beat_age_s=2.0)  # then its beats stop: its last one 2 s before the next look
    state, info = rel.look()
    stall, age, gw = info.split("|")
    assert state == "held" and gw == rel.live and 1900 <= int(age) <= 2100
    clock.observe(8.0, state, info)
    assert clock.why == LATE
    assert clock.arena_s == pytest.approx(int(age) / 1000)


def test_a_late_gateway_giving_the_request_back_gives_back_its_time_and_no_other(rel: Relay) -> None:
    """The request was held 4 s on a live gateway (the bot's), then 3 s on a gateway whose beat
    went late (its last beat 2 s ago), which gave it back: the 2 s since that beat are the
    arena's, the thinking on the other gateway stays the bot's."""
    other = f"atk-other-{secrets.token_hex(3)}"
    try:
        rel.beat(rel.live)
        rel.beat(other)
        on_other = rel.connect(other, "c-other")
        rel.connect(rel.live, "c-late")
        clock = _Clock(0.0)
        rel.push()
        rel.pop(other)
        clock.observe(4.0, *rel.look())
        rel.drop(on_other)
        rel.give_back()
        rel.pop(rel.live)
        state, info = rel.look()
        assert state == "held" and info.split("|")[2] == rel.live
        clock.observe(5.0, state, info)
        assert clock.arena_s == 0.0
        rel.beat(rel.live, beat_age_s=2.0)  # late from here; it gives the request back
        rel.beat(other)
        rel.give_back()
        state, info = rel.look()
        assert state == "queued" and info.split("|")[2:] == [rel.live]
        age = int(info.split("|")[1]) / 1000
        clock.observe(7.0, state, info)
        # the span 5..7 was the arena's (queued behind a late gateway); before it, the spans
        # since the late gateway's beat (7 - age) held by it: the arena's too; 0..4 on the
        # other gateway (and 4..5, before the late beat) the bot's
        assert clock.arena_s == pytest.approx(2.0 + max(0.0, 5.0 - (7.0 - age)))
    finally:
        rel.r.delete(relay.alive_key(other), relay.wake_key(other))
        rel.r.zrem(relay.GATEWAYS_KEY, other)


def test_waits_given_back_to_the_arena_do_not_use_up_the_bots_reconnect_time(rel: Relay) -> None:
    """An honest bot whose only gateway freezes again and again in one decision: each time the
    request waits queued (the bot's, its beat not yet late), then the beat is late and that wait
    is the arena's. Given back, it no longer counts toward ``reconnect_s`` (else the request
    would be taken back, ``connection_error``, for the arena's freezes)."""
    other = f"atk-other-{secrets.token_hex(3)}"
    try:
        rel.beat(other)  # some gateway alive: a queued request with no late lease is the bot's wait
        clock = _Clock(0.0)
        rel.push()
        t = 0.0
        for _ in range(12):
            rel.beat(rel.live)  # the bot's gateway beats, then freezes
            on_live = rel.connect(rel.live, "c-live")
            state, info = rel.look()
            assert (state, info) == ("queued", "0")
            t += 1.4
            clock.observe(t, state, info)  # 1.4 s queued: the bot's, for now
            rel.beat(rel.live, beat_age_s=1.6)  # late: the time since its beat is the arena's
            rel.beat(other)
            state, info = rel.look()
            assert state == "queued" and info.split("|")[2:] == [rel.live]
            t += 0.2
            clock.observe(t, state, info)
            rel.drop(on_live)
        assert clock.bot_waited == pytest.approx(0.0)  # was 12 x 1.4 s: past the 15 s of reconnect_s
        assert clock.arena_s + clock.bot_waited == pytest.approx(t)
    finally:
        rel.r.delete(relay.alive_key(other), relay.wake_key(other))
        rel.r.zrem(relay.GATEWAYS_KEY, other)


def test_a_gateway_that_beat_under_a_second_ago_is_never_taken_for_late(rel: Relay) -> None:
    """The gateways' set holds each beat to the microsecond: a gateway that beat at x.95 s and
    is looked at 0.6 s later is 0.6 s late, not 1.6 s (a beat kept to the second made a healthy
    gateway look late for up to a second after each beat: the bot's wait the arena's)."""
    rel.beat(other := f"atk-other-{secrets.token_hex(3)}")
    try:
        rel.connect(rel.live, "c-live")
        rel.push()
        while rel.server_time() % 1 < 0.9:  # beat late in a second of Redis time
            time.sleep(0.005)
        rel.r.eval(relay.ALIVE_BEAT, 2, relay.alive_key(rel.live), relay.GATEWAYS_KEY, "0", 3000, rel.live)
        beat = float(rel.r.zscore(relay.GATEWAYS_KEY, rel.live) or 0)
        assert beat % 1 >= 0.9
        while rel.server_time() < beat + 0.6:
            time.sleep(0.005)
        assert rel.look() == ("queued", "0")  # the bot's own wait: its gateway is alive
    finally:
        rel.r.delete(relay.alive_key(other), relay.wake_key(other))
        rel.r.zrem(relay.GATEWAYS_KEY, other)
