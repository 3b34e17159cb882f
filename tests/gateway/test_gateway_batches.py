"""The gateway's Redis traffic with real Redis and real WebSocket bots on 127.0.0.1: the
doorbells (a push rings each live gateway of the bot once; requests pushed without a ring are
found by the sweep), requests popped several at once (each delivered once, to its own bot) and
marked held as they are popped, answers pushed in batches, a batch for a bot gone given back in
order and rung for its other gateways, and the presence renewal (one query, one pipeline) that
closes a deleted bot's connections."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from arena import relay
from arena.runner.connected import ConnectedPlayer
from arena.usecases.bots import Credentials
from bots_sdk import wire
from daifugo_arena.gateway.presence import proof_stands
from tests.gateway.test_gateway import SECRETS, RunningGateway
from tests.gateway.test_gateway import authenticate as authenticate_bot
from tests.helpers import wait_until

pytestmark = pytest.mark.services


class Registry:
    """The bots the gateway knows: bot id -> (owner account, transport); a test may change it."""

    def __init__(self) -> None:
        self.bots = {7: (1, "connect"), 8: (2, "connect")}

    def creds(self, bot_id: int) -> Credentials | None:
        if bot_id not in self.bots:
            return None
        owner, transport = self.bots[bot_id]
        return Credentials(bot_id, owner, f"b#{bot_id}", transport, [SECRETS[bot_id]])

    def still_connect(self, ids: list[int]) -> dict[int, float | None]:
        return {b: None for b in ids if self.bots.get(b, (0, ""))[1] == "connect"}


def running_gateway(broker_url: str, registry: Registry, **kw: Any) -> RunningGateway:
    """A gateway on a thread of this process that knows the bots of ``registry``."""
    return RunningGateway(broker_url, registry.creds, **kw)


@pytest.fixture
def registry() -> Registry:
    return Registry()


@pytest.fixture
def gateway(broker: str, registry: Registry) -> Iterator[RunningGateway]:
    g = running_gateway(broker, registry, still_connect=registry.still_connect)
    yield g
    g.close()


def authenticate(url: str, bot_id: int) -> ClientConnection:
    """A welcomed connection of ``bot_id``."""
    ws, welcome = authenticate_bot(url, bot_id)
    assert welcome["type"] == "welcome"
    return ws


class Echo:
    """A bot on a connection that answers each request with its bot id and match id."""

    def __init__(self, ws: ClientConnection, bot_id: int, answer: bool = True):
        self.ws, self.bot_id, self.answer = ws, bot_id, answer
        self.frames: list[dict] = []
        self.got = threading.Event()
        self.arrived = threading.Condition()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            for raw in self.ws:
                f = json.loads(raw)
                with self.arrived:
                    self.frames.append(f)
                    self.arrived.notify_all()
                self.got.set()
                if self.answer:
                    self.ws.send(wire.answer_frame(f["id"], {"bot": self.bot_id, "match": f["body"]["match_id"]}))
        except ConnectionClosed:
            pass

    def wait_frames(self, n: int) -> bool:
        with self.arrived:
            return self.arrived.wait_for(lambda: len(self.frames) >= n, 10)


def close_code(ws: ClientConnection) -> int | None:
    try:
        while True:
            ws.recv(timeout=5)
    except ConnectionClosed as exc:
        return exc.rcvd.code if exc.rcvd is not None else None


def player(broker: str, bot_id: int) -> ConnectedPlayer:
    return ConnectedPlayer(bot_id, redis.Redis.from_url(broker, single_connection_client=True), f"b#{bot_id}")


def test_many_requests_at_once_are_each_delivered_once_to_their_own_bot(gateway: RunningGateway, broker: str) -> None:
    bots = {7: [Echo(authenticate(gateway.url, 7), 7), Echo(authenticate(gateway.url, 7), 7)]}
    bots[8] = [Echo(authenticate(gateway.url, 8), 8)]
    matches, decisions = 12, 10  # per bot
    errors: list[str] = []

    def match(bot_id: int, m: int) -> None:
        p = player(broker, bot_id)
        for d in range(decisions):
            name = f"{bot_id}-{m}-{d}"
            out = p.decide(json.dumps({"match_id": name}).encode(), 10.0)
            if out.fault is not None or out.action != {"bot": bot_id, "match": name}:
                errors.append(f"{name}: {out}")

    threads = [threading.Thread(target=match, args=(b, m)) for b in bots for m in range(matches)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    for bot_id, echoes in bots.items():
        seen = [f["body"]["match_id"] for e in echoes for f in e.frames]
        assert sorted(seen) == sorted(f"{bot_id}-{m}-{d}" for m in range(matches) for d in range(decisions))
        for e in echoes:
            e.ws.close()


def test_a_request_taken_is_marked_held_by_the_gateway(gateway: RunningGateway, broker: str) -> None:
    echo = Echo(authenticate(gateway.url, 7), 7, answer=False)  # takes the request and thinks
    result: list[Any] = []
    t = threading.Thread(target=lambda: result.append(player(broker, 7).decide(b'{"match_id": "m"}', 10.0)))
    t.start()
    assert echo.got.wait(5)
    client = redis.Redis.from_url(broker)
    held = list(client.scan_iter(relay.held_key("*")))  # recorded as it was popped
    rid = echo.frames[0]["id"]
    assert held == [relay.held_key(rid).encode()]
    assert client.get(held[0]) == gateway.gw.id.encode()
    assert 0 < client.pttl(held[0]) <= 10_000 + relay.HOLD_GRACE_MS  # the request's deadline and 2 s
    echo.ws.send(wire.answer_frame(rid, {"type": "pass"}))
    t.join(10)
    assert result[0].fault is None and result[0].action == {"type": "pass"}
    echo.ws.close()


def test_a_batch_for_a_bot_no_longer_here_goes_back_to_its_list_in_order(gateway: RunningGateway, broker: str) -> None:
    envelopes = [relay.envelope(f"r{i}", 2_000_000_000_000, "request", "{}").encode() for i in range(3)]

    async def deliver() -> None:
        gateway.gw.requests.deliver(42, envelopes)  # bot 42 has no connection here

    client = redis.Redis.from_url(broker)
    client.rpush(relay.request_key(42), b"queued-after")
    client.zadd(relay.conns_key(42), {"gw-other|c1|1.000": time.time() + 30})  # on another gateway
    gateway.call(deliver())
    while client.llen(relay.request_key(42)) < 4:
        pass
    assert client.lrange(relay.request_key(42), 0, -1) == [*envelopes, b"queued-after"]
    assert client.lrange(relay.wake_key("gw-other"), 0, -1) == [b"42"]


def test_a_push_rings_each_live_gateway_of_the_bot_once(broker: str) -> None:
    client = redis.Redis.from_url(broker)
    now = time.time()
    client.zadd(
        relay.conns_key(5),
        {
            "gw-a|c1|1.000": now + 30,
            "gw-a|c2|1.000": now + 30,  # a second connection on the same gateway: rung once
            "gw-b|c3|1.000": now + 30,
            "gw-gone|c4|1.000": now - 1,  # its lease ended
        },
    )
    rung = client.eval(relay.PUSH_AND_RING, *relay.push_args(5, [b"e1", b"e2"], front=False, ttl_s=600))
    assert rung == 2
    assert client.lrange(relay.request_key(5), 0, -1) == [b"e1", b"e2"]
    assert 590 < client.ttl(relay.request_key(5)) <= 600
    assert client.lrange(relay.wake_key("gw-a"), 0, -1) == [b"5"]
    assert client.lrange(relay.wake_key("gw-b"), 0, -1) == [b"5"]
    assert not client.exists(relay.wake_key("gw-gone"))
    assert 0 < client.ttl(relay.wake_key("gw-a")) <= relay.WAKE_TTL_S
    client.eval(relay.PUSH_AND_RING, *relay.push_args(5, [b"f1", b"f2"], front=True))  # given back: first
    assert client.lrange(relay.request_key(5), 0, -1) == [b"f1", b"f2", b"e1", b"e2"]
    assert client.lrange(relay.wake_key("gw-a"), 0, -1) == [b"5", b"5"]
    client.delete(relay.conns_key(6))
    assert client.eval(relay.PUSH_AND_RING, *relay.push_args(6, [b"x"], front=False)) == 0  # nobody holds it


def test_requests_pushed_without_a_ring_are_found_by_the_sweep(broker: str, registry: Registry) -> None:
    g = running_gateway(broker, registry, sweep_s=0.2)
    try:
        echo = Echo(authenticate(g.url, 7), 7)
        # a decision through the doorbell first: the ring of its connection's opening is past
        assert player(broker, 7).decide(b'{"match_id": "rung"}', 10.0).action == {"bot": 7, "match": "rung"}
        client = redis.Redis.from_url(broker)
        deadline_ms = int((time.time() + 30) * 1000)
        frame = wire.frame("request", "f" * 24, b'{"match_id": "unrung"}')
        client.rpush(relay.request_key(7), relay.envelope("f" * 24, deadline_ms, "request", frame))  # no ring
        assert echo.wait_frames(2)
        assert echo.frames[1]["body"] == {"match_id": "unrung"}
        while not client.exists(relay.answer_key("f" * 24)):
            pass
        raw = client.lpop(relay.answer_key("f" * 24))  # the answer frame as the bot sent it
        assert raw[:1] == b"R" and json.loads(raw[1:]) == {"id": "f" * 24, "body": {"bot": 7, "match": "unrung"}}
        echo.ws.close()
    finally:
        g.close()


@pytest.mark.parametrize("batched", [True, False], ids=["one-query", "per-bot-credentials"])
def test_renewal_closes_a_deleted_bots_connections_and_renews_the_others(
    broker: str, registry: Registry, batched: bool
) -> None:
    g = running_gateway(broker, registry, still_connect=registry.still_connect if batched else None)
    try:
        ws7, ws8 = authenticate(g.url, 7), authenticate(g.url, 8)
        client = redis.Redis.from_url(broker)
        before = client.zscore(relay.conns_key(8), next(iter(client.zrange(relay.conns_key(8), 0, -1))))
        client.delete(relay.conns_key(8))  # Redis lost the lease: the renewal holds it again
        del registry.bots[7]  # bot 7 deleted
        g.gw.credentials.cache.clear()  # (its credentials' cache would keep it 5 s more)
        g.call(g.gw.presence.renew())
        assert close_code(ws7) == wire.CLOSE_BOT_GONE
        while relay.presence(client, [7])[7].connected:  # its lease given back as it closed
            pass
        assert relay.presence(client, [8])[8].connections == 1
        ws8_member = client.zrange(relay.conns_key(8), 0, -1, withscores=True)
        assert len(ws8_member) == 1 and ws8_member[0][1] >= (before or 0)
        acct = client.zrange(relay.account_key(2), 0, -1, withscores=True)
        assert [m for m, _ in acct] == [m for m, _ in ws8_member]
        assert ws8.protocol.state.name == "OPEN"
        ws8.close()
    finally:
        g.close()


class Rotations:
    """Bot 7's credentials as the database holds them across rotations: its secrets (the
    current first) and when the previous one's grace ends; counts the gateway's reads."""

    def __init__(self) -> None:
        self.secrets, self.grace_until = [SECRETS[7]], None
        self.reads = self.queries = 0

    def rotate(self, secret: str) -> None:
        self.secrets, self.grace_until = [secret, self.secrets[0]], time.time() + 3600

    def creds(self, bot_id: int) -> Credentials | None:
        self.reads += 1
        return Credentials(7, 1, "b#7", "connect", list(self.secrets), self.grace_until) if bot_id == 7 else None

    def still_connect(self, ids: list[int]) -> dict[int, float | None]:
        self.queries += 1
        return {7: self.grace_until} if 7 in ids else {}


def test_renewal_in_one_query_closes_a_connection_whose_secret_was_rotated_away(broker: str) -> None:
    """The renewal asks the database once for every bot held, and reads a bot's credentials
    only when a rotation since a connection proved its secret shows in that answer. A thief
    holding the first secret stays through the first rotation's grace, and is closed (4401)
    by the second rotation; the owner's connection, proved with the second secret, stays."""
    db = Rotations()
    g = running_gateway(broker, Registry(), still_connect=db.still_connect, credentials_ttl_s=0.0, renew_s=3600)
    g.gw.credentials.credentials = db.creds  # (its own renewals wait an hour: each one here is counted)
    try:
        thief = authenticate(g.url, 7)  # the first secret, leaked
        g.call(g.gw.presence.renew())
        assert (db.queries, db.reads) == (1, 1)  # no rotation: the query alone judged it
        db.rotate("second")
        owner = connect(g.url, max_size=wire.MAX_FRAME_BYTES, legacy=True)
        owner.send(wire.auth_frame(7, "second", json.loads(owner.recv(timeout=5))["nonce"]))
        assert json.loads(owner.recv(timeout=5))["type"] == "welcome"
        g.call(g.gw.presence.renew())  # the thief's proof predates the rotation: read once, in its grace
        assert (db.queries, db.reads) == (2, 3)
        g.call(g.gw.presence.renew())
        assert (db.queries, db.reads) == (3, 3)  # both judged by the query alone again
        db.rotate("third")
        g.call(g.gw.presence.renew())
        assert (db.queries, db.reads) == (4, 4)  # one read for both connections of the bot
        assert close_code(thief) == wire.CLOSE_AUTH_FAILED
        assert owner.protocol.state.name == "OPEN"
        # the gateway counts the thief's connection out once its handler has unwound (the
        # client may see the close frame first)
        wait_until(lambda: g.gw.connections == 1, "the gateway to count only the owner's connection")
        client = redis.Redis.from_url(broker)
        while relay.presence(client, [7])[7].connections != 1:  # the thief's lease given back
            pass
        owner.close()
    finally:
        g.close()


def test_a_proof_stands_while_the_secrets_are_unchanged_and_the_grace_runs() -> None:
    """How the renewal judges a connection on the query's answer alone (``grace_until``)."""

    class Proved:
        def __init__(self, secret: str, creds: Credentials):
            self.secret, self.creds = secret, creds

    now = 1_000_000.0
    before = Credentials(7, 1, "b#7", "connect", ["s1"], None)
    after = Credentials(7, 1, "b#7", "connect", ["s2", "s1"], now + 10)
    stands = proof_stands
    assert stands(Proved("s1", before), None, now)  # never rotated
    assert not stands(Proved("s1", before), now + 10, now)  # rotated since: read to judge
    assert stands(Proved("s2", after), now + 10, now)  # the current secret
    assert stands(Proved("s1", after), now + 10, now)  # the previous one, in its grace
    assert not stands(Proved("s1", after), now + 10, now + 11)  # its grace over: read (then 4401)
    assert not stands(Proved("", after), now + 10, now)  # no proved secret


def test_connect_bots_lists_the_bots_that_may_still_connect(tmp_path: Path, monkeypatch) -> None:
    from arena.accounts import create_account
    from arena.crypto import new_key
    from arena.db.migrate import upgrade
    from arena.db.models import Bot
    from arena.db.session import make_engine, make_sessionmaker
    from arena.status import BotStatus
    from arena.usecases.bots import connect_bots, credentials, rotate_secret

    monkeypatch.setenv("ARENA_ENCRYPTION_KEYS", new_key())
    db = f"sqlite:///{tmp_path / 'arena.db'}"
    upgrade(db)
    sessions = make_sessionmaker(make_engine(db))
    with sessions() as s:
        owner, _ = create_account(s, "owner")
        rows = [
            Bot(owner_id=owner.id, name="dials", url=None, transport="connect", rulesets=["jdf"], secret="x" * 64),
            Bot(owner_id=owner.id, name="called", url="http://b/", transport="http", rulesets=["jdf"], secret="y" * 64),
            Bot(owner_id=owner.id, name="gone", url=None, transport="connect", rulesets=["jdf"], secret="z" * 64),
        ]
        rows[2].status = BotStatus.DELETED.value
        s.add_all(rows)
        s.commit()
        ids = [r.id for r in rows]
        assert connect_bots(s, ids + [999]) == {ids[0]: None}  # never rotated
        assert connect_bots(s, []) == {}
        rotate_secret(s, owner, ids[0])
    with sessions() as s:  # a rotation shows as the grace's end, the same as in the credentials
        creds = credentials(s, ids[0])
        assert creds is not None and creds.grace_until is not None and creds.grace_until > time.time()
        assert connect_bots(s, ids) == {ids[0]: creds.grace_until}
