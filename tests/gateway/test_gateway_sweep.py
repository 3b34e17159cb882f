"""The reaper's sweep of the gateways' keys (arena.relay.sweep, step 4 of arena.reaper.reap)
against a real Redis: what a dead gateway leaves (presence leases still running, its wake-up
list), stale requests, and the live gateways it reports; then a real ``arena gateway`` process
SIGKILLed while a bot holds two connections."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from arena import relay
from arena.accounts import create_account
from arena.config import Settings
from arena.db.migrate import upgrade
from arena.db.models import Bot
from arena.db.session import make_engine, make_sessionmaker
from arena.leases import LeaseSet
from arena.reaper import reap
from arena.security import new_secret
from arena.status import BotStatus
from bots_sdk import connect
from bots_sdk.samples import SAMPLE_BOTS
from tests.gateway.test_gateway import RunningGateway, authenticate
from tests.gateway.test_gateway_kill import start_gateway
from tests.helpers import wait_until

pytestmark = pytest.mark.services


@pytest.fixture
def client(redis_url: str) -> Iterator[redis.Redis]:
    c = redis.Redis.from_url(redis_url)
    for key in c.scan_iter(relay.PREFIX + "*"):
        c.delete(key)
    yield c
    c.close()


def _redis_now(c: redis.Redis) -> float:
    secs, micros = c.time()
    return float(secs) + float(micros) / 1e6


def test_sweep_drops_what_a_dead_gateway_left_and_keeps_the_live_ones(client: redis.Redis, redis_url: str) -> None:
    gw = RunningGateway(redis_url)
    try:
        ws, welcome = authenticate(gw.url, 7)  # bot 7 (account 1) holds one live connection
        assert welcome["type"] == "welcome"
        now = _redis_now(client)
        # a gateway killed a minute after bot 8 (account 2) connected: its leases run 30 s more
        dead = relay.member("gw-dead", "c1", now - 60)
        assert LeaseSet(client, relay.conns_key(8), 8).take(dead, relay.LEASE_S)
        assert LeaseSet(client, relay.account_key(2), 32).take(dead, relay.LEASE_S)
        client.rpush(relay.wake_key("gw-dead"), "1", "1")
        # a lease that ended (its gateway lives on, the connection is gone)
        client.zadd(relay.conns_key(9), {relay.member(gw.gw.id, "c9", now - 100): now - 1})
        # requests of bot 8: one its worker gave up on two minutes ago, one fresh, one garbage
        stale = relay.envelope("r-stale", int((now - 120) * 1000), "request", "{}")
        fresh = relay.envelope("r-fresh", int((now + 60) * 1000), "request", "{}")
        client.rpush(relay.request_key(8), stale, fresh, "not an envelope")
        assert relay.presence(client, [8])[8].connections == 1  # the dead gateway's bot looks connected

        swept = relay.sweep(client)

        assert swept.gateways == {gw.gw.id: 1}
        assert (swept.presence, swept.stale, swept.wake) == (3, 2, 1)
        assert relay.presence(client, [7, 8, 9]) == {
            7: relay.Presence(1, relay.presence(client, [7])[7].since),
            8: relay.OFFLINE,
            9: relay.OFFLINE,
        }
        assert relay.presence(client, [7])[7].connected
        assert client.exists(relay.account_key(2), relay.wake_key("gw-dead"), relay.conns_key(9)) == 0
        assert client.zcard(relay.account_key(1)) == 1  # the live connection's account lease
        assert client.lrange(relay.request_key(8), 0, -1) == [fresh.encode()]
        assert client.exists(relay.alive_key(gw.gw.id)) == 1
        assert str(swept) == (
            f"gateways: 1 live ['{gw.gw.id}'] holding 1 connection(s); dropped 3 presence lease(s), "
            "2 stale request(s), 1 wake-up list(s) of dead gateways"
        )
        again = relay.sweep(client)  # nothing left to drop
        assert (again.gateways, again.presence, again.stale, again.wake) == ({gw.gw.id: 1}, 0, 0, 0)
        ws.close()
    finally:
        gw.close()


def test_a_new_connection_is_not_taken_for_a_dead_gateways(client: redis.Redis) -> None:
    """A member of a gateway with no alive key yet, opened within the grace, stays (a gateway
    writes its alive key before it takes connections, but the reaper may read in between)."""
    now = _redis_now(client)
    young = relay.member("gw-starting", "c1", now)
    assert LeaseSet(client, relay.conns_key(5), 8).take(young, relay.LEASE_S)
    swept = relay.sweep(client)
    assert (swept.gateways, swept.presence) == ({}, 0)
    assert relay.presence(client, [5])[5].connections == 1


def _connect_bot(tmp_path: Path) -> tuple[str, int, str]:
    """A SQLite database with one bot that connects: (database URL, bot id, secret)."""
    db = f"sqlite:///{tmp_path / 'arena.db'}"
    os.environ["ARENA_DATA_DIR"] = str(tmp_path)  # the same encryption key as the gateways
    try:
        upgrade(db)
        sessions = make_sessionmaker(make_engine(db))
        secret = new_secret()
        with sessions() as s:
            owner, _ = create_account(s, "dials-out")
            bot = Bot(
                owner_id=owner.id,
                name="nat",
                url="",
                transport="connect",
                rulesets=["million_doubt"],
                secret=secret,
                status=BotStatus.READY,
            )
            s.add(bot)
            s.commit()
            return db, bot.id, secret
    finally:
        del os.environ["ARENA_DATA_DIR"]


@pytest.mark.slow
def test_the_reaper_clears_a_killed_gateways_connections(
    tmp_path: Path, client: redis.Redis, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bot holds two connections to a real ``arena gateway``, which is SIGKILLed: its
    presence leases would show the bot connected (and count against its caps) for up to 30 s;
    the reaper's run drops them and its report names no live gateway; the bot reconnects to a
    second gateway, which the next run reports with the bot's two connections."""
    db, bot_id, secret = _connect_bot(tmp_path)
    env = {**os.environ, "ARENA_DATABASE_URL": db, "ARENA_BROKER_URL": redis_url, "ARENA_DATA_DIR": str(tmp_path)}
    settings = Settings(data_dir=tmp_path, database_url=db, broker_url=redis_url)
    first, url1 = start_gateway(env)
    second = None
    bot = connect(
        SAMPLE_BOTS["random"](seed=1),
        url1,
        bot_id=bot_id,
        secret=secret,
        pool=2,
        background=True,
        backoff_initial_s=0.1,
        backoff_max_s=0.2,
    )
    try:
        assert bot.wait_authenticated(timeout=30)
        assert relay.presence(client, [bot_id])[bot_id].connections == 2
        gw1 = next(iter(relay.sweep(client).gateways))
        first.send_signal(signal.SIGKILL)
        first.wait(10)
        wait_until(lambda: not client.exists(relay.alive_key(gw1)), "the killed gateway's alive key expired")
        assert relay.presence(client, [bot_id])[bot_id].connections == 2  # its leases run on
        monkeypatch.setattr(relay, "DEAD_GATEWAY_GRACE_S", 0.0)  # the connections are seconds old

        report = reap(settings, client=client)

        assert report.gateways is not None
        assert (report.gateways.gateways, report.gateways.presence) == ({}, 4)  # 2 per bot, 2 per account
        assert relay.presence(client, [bot_id])[bot_id] == relay.OFFLINE
        # the bot comes back through another gateway (behind the proxy: the same address)
        bot.stop()
        bot.join(timeout=10)
        second, url2 = start_gateway(env)
        bot = connect(SAMPLE_BOTS["random"](seed=1), url2, bot_id=bot_id, secret=secret, pool=2, background=True)
        assert bot.wait_authenticated(timeout=30)
        report = reap(settings, client=client)
        assert report.gateways is not None and list(report.gateways.gateways.values()) == [2]
        assert gw1 not in report.gateways.gateways
        assert relay.presence(client, [bot_id])[bot_id].connections == 2
    finally:
        bot.stop()
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                proc.terminate()
                proc.wait(10)
