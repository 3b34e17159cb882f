"""Machines that fail under bots that dial out, each for real: a gateway process frozen
(SIGSTOP, not killed) while its bot thinks, the database a gateway reads freezing under it,
and Redis restarted empty in the middle of a decision. A bot must never pay for the arena's
machines: no fault, no connection closed for a protocol breach it did not commit.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

import engine
from arena import relay
from arena.config import Settings
from arena.db.migrate import upgrade
from arena.db.session import make_engine, make_sessionmaker, normalize_url, shared_sessions
from arena.delivery import internal_reason
from arena.heartbeat import WorkerHealth
from arena.runner.connected import DIED, GRACE_S, LATE, NO_GATEWAY, ConnectedPlayer, RelayUnavailable
from arena.runner.match import Match, MatchConfig, Observers
from arena.runner.players import LocalPlayer, Outcome
from arena.runner.replay import replay
from arena.usecases.bots import Credentials, credentials
from bots_sdk import connect as sdk_connect
from bots_sdk import protocol, wire
from bots_sdk.samples import SAMPLE_BOTS
from daifugo_arena.gateway.liveness import PROBE_S, SILENT_S
from engine.timebank import TimeRules
from tests import children
from tests.gateway.conftest import Site, add_bot, start_gateway
from tests.gateway.test_gateway import SECRETS, RunningGateway, close_code
from tests.gateway.test_gateway_attacks import RawBot
from tests.helpers import FreezableProxy, create_pg_database, wait_until
from tests.starter_builds import command, skip_unless

pytestmark = pytest.mark.services


class HeldBot:
    """A bot on one connection that records every frame and answers only when told to
    (:meth:`answer_all`: every request frame received so far, each copy, as the SDK would)."""

    def __init__(self, url: str, bot_id: int, secret: str):
        self.ws: ClientConnection = connect(url, max_size=wire.MAX_FRAME_BYTES, legacy=True)
        challenge = json.loads(self.ws.recv(timeout=10))
        self.ws.send(wire.auth_frame(bot_id, secret, challenge["nonce"]))
        assert json.loads(self.ws.recv(timeout=10))["type"] == "welcome"
        self.frames: list[dict] = []
        self.closed: list[int | None] = []
        self._answered = 0
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        try:
            for raw in self.ws:
                self.frames.append(json.loads(raw))
        except ConnectionClosed as exc:
            self.closed.append(exc.rcvd.code if exc.rcvd is not None else None)

    def answer_all(self) -> None:
        for f in self.frames[self._answered :]:
            if f["type"] != "notice":
                self.ws.send(wire.answer_frame(f["id"], {"type": "pass", "match": f["body"]["match_id"]}))
        self._answered = len(self.frames)


def decide_in_thread(broker: str, bot_id: int, match_id: str, timeout_s: float) -> list[Outcome]:
    out: list[Outcome] = []
    player = ConnectedPlayer(bot_id, redis.Redis.from_url(broker), "nat", reconnect_s=timeout_s)
    body = json.dumps({"match_id": match_id}).encode()
    threading.Thread(target=lambda: out.append(player.decide(body, timeout_s)), daemon=True).start()
    return out


def test_a_frozen_gateways_request_is_not_sent_twice_on_one_connection(
    site: Site, redis_url: str, gateways: list[subprocess.Popen[str]]
) -> None:
    """The gateway holding a bot's request freezes (SIGSTOP) past its alive key: the worker
    queues the request again (for another gateway) and, seeing it nowhere, once more; the
    frozen gateway's waiting BLPOP takes the copies. Thawed, it must not send the bot the
    request it already holds a second time: the bot, answering each frame it gets as the
    SDK does, would send a second answer, and the gateway would close the connection for an
    answer to an unknown id (1008), faulting every other request on it."""
    proc, _, url = start_gateway(site.env, gateways)
    bot = HeldBot(url, site.bot_id, site.secret)
    outcome = decide_in_thread(redis_url, site.bot_id, "m-frozen", 60.0)
    wait_until(lambda: bot.frames, "the request delivered")
    rid = bot.frames[0]["id"]
    client = redis.Redis.from_url(redis_url)
    proc.send_signal(signal.SIGSTOP)
    # the worker saw the gateway dead and queued the request again (the frozen BLPOP took that
    # copy), then saw it nowhere and queued it once more: that copy waits in the list
    wait_until(lambda: client.llen(relay.request_key(site.bot_id)) >= 1, "the request queued again")
    proc.send_signal(signal.SIGCONT)
    wait_until(
        lambda: client.llen(relay.request_key(site.bot_id)) == 0 and client.exists(relay.held_key(rid)),
        "the thawed gateway took the copies and holds the request",
    )
    bot.answer_all()
    wait_until(lambda: outcome, "the decision answered")
    assert outcome[0].fault is None and outcome[0].action == {"type": "pass", "match": "m-frozen"}, outcome
    assert [f["id"] for f in bot.frames] == [rid], bot.frames
    # the connection is still open and serves the next decision
    after = decide_in_thread(redis_url, site.bot_id, "m-after", 60.0)
    wait_until(lambda: len(bot.frames) == 2, "the next request delivered")
    bot.answer_all()
    wait_until(lambda: after, "the next decision answered")
    assert after[0].fault is None and after[0].action == {"type": "pass", "match": "m-after"}, after
    assert bot.closed == []


def test_a_gateway_killed_while_it_holds_a_request_is_the_arenas_time_at_once(
    site: Site, redis_url: str, gateways: list[subprocess.Popen[str]]
) -> None:
    """The gateway holding a bot's request is SIGKILLed. Its alive key lasts up to 3 s after
    its last beat: before, the worker took the request for held by a live gateway until the key
    lapsed, so up to 3 s of the dead gateway's time was the bot's (with less than that left in
    the bank: the fault ``timeout``). Now a beat over ``LATE_BEAT_MS`` old makes all the time
    since that beat the arena's: the bot's own time is at most what passed before the kill
    (TIME-2, FAULT-1), whatever the machine's load and wherever the kill falls in the bank."""
    proc, gateway_id, url = start_gateway(site.env, gateways)
    bot = HeldBot(url, site.bot_id, site.secret)
    client = redis.Redis.from_url(redis_url)
    started = time.monotonic()  # before the player's own start: the bound below is loose, not tight
    outcome = decide_in_thread(redis_url, site.bot_id, "m-killed", 8.0)
    wait_until(lambda: bot.frames, "the request delivered")  # held by the gateway, at the bot
    assert bot.frames[0]["body"]["match_id"] == "m-killed"
    assert [client.get(k) for k in client.scan_iter(relay.held_key("*"))] == [gateway_id.encode()]
    killed = time.monotonic()
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    wait_until(lambda: outcome, "the decision over", 60)
    out = outcome[0]
    # no answer: the arena's failure (the runner asks again), never the bot's
    assert out.fault == "timeout" and out.arena in (LATE, DIED, NO_GATEWAY), out
    # the bot's time ends at the gateway's last beat, before the kill; 2 ms for the rounding
    assert out.elapsed_ms - out.arena_ms <= (killed - started) * 1000 + 2, (out, killed - started)


def test_a_bot_that_never_answers_is_not_excused_by_a_short_stall_of_its_gateway(
    site: Site, redis_url: str, gateways: list[subprocess.Popen[str]]
) -> None:
    """The bot holds its request and never answers; meanwhile its gateway stalls (SIGSTOP,
    then SIGCONT once its alive key is 0.3 s older). Before, any stall the gateway reported
    (50 ms or more) made the time-out the arena's: the decision was asked again with the bank
    it had, up to 10 times, then the match voided, so a losing bot could void a match by
    never answering on a loaded gateway. Now the wait is lengthened by the arena's time (up to
    ``GRACE_S``): a bot whose own time reached its bank while the gateway was well is at fault
    (FAULT-1); only more of the arena's time than that is the arena's failure."""
    proc, gateway_id, url = start_gateway(site.env, gateways)
    bot = HeldBot(url, site.bot_id, site.secret)
    client = redis.Redis.from_url(redis_url)
    outcome = decide_in_thread(redis_url, site.bot_id, "m-stalled", 3.0)
    wait_until(lambda: bot.frames, "the request delivered")
    alive = relay.alive_key(gateway_id)
    proc.send_signal(signal.SIGSTOP)
    try:
        age = wait_until(lambda: client.pttl(alive), "the alive key seen")
        wait_until(lambda: client.pttl(alive) <= age - 300, "the gateway stopped 0.3 s")
    finally:
        proc.send_signal(signal.SIGCONT)
    wait_until(lambda: outcome, "the decision over", 60)
    out = outcome[0]
    assert out.fault == "timeout" and out.arena_ms > 0, out  # the stall was seen, as the arena's time
    if out.arena_ms <= GRACE_S * 1000:  # the arena's time fits the grace: the bot had its whole bank
        assert out.arena == "", out  # before: "the gateway holding the request stalled"
        assert out.elapsed_ms - out.arena_ms >= 3000 - 2, out
    else:  # a machine so loaded that the arena kept more than the grace: asked again
        assert out.arena != "", out


def test_a_request_queued_for_a_bot_whose_gateway_just_died_costs_it_nothing(
    site: Site, redis_url: str, gateways: list[subprocess.Popen[str]]
) -> None:
    """The gateway holding the bot's only connection is SIGKILLed between two requests, and the
    next request is queued at once, while the dead gateway's alive key (3 s) still says it
    lives. Before, the queued time until the key lapsed was the bot's own wait for a
    connection (up to 3 s of its bank). Now a gateway whose last beat is ``LATE_BEAT_MS`` old
    is taken for dead: all the time since its last beat is the arena's (FAULT-1), so the bot
    pays nothing for a request no connection of its could take."""
    proc, _, url = start_gateway(site.env, gateways)
    HeldBot(url, site.bot_id, site.secret)
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    outcome = decide_in_thread(redis_url, site.bot_id, "m-orphaned", 6.0)
    wait_until(lambda: outcome, "the decision over", 60)
    out = outcome[0]
    assert out.fault == "timeout" and out.arena == NO_GATEWAY, out  # the arena's: asked again
    assert out.elapsed_ms - out.arena_ms <= 2, out  # before: up to 3,000 ms of the bot's


def test_a_database_that_stops_answering_does_not_make_a_gateway_look_dead(pg_url: str, redis_url: str) -> None:
    """The database a gateway reads credentials from stops answering (a frozen server, a
    partition: connections hang, nothing is refused). The gateway must go on saying it is
    alive: a gateway whose alive key lapses is taken for dead, so the workers queue its bots'
    requests again and the reaper drops their presence, while it serves them fine. A bot
    connected before keeps being served; one connecting meanwhile is told to try again (1011)
    instead of waiting with no end; once the database answers again, it is let in."""
    db = create_pg_database(pg_url, "frozen")
    upgrade(db)
    bot_id, secret = add_bot(make_sessionmaker(make_engine(db)), "frozen-db")
    late_id, late_secret = add_bot(make_sessionmaker(make_engine(db)), "frozen-db-late")
    client = redis.Redis.from_url(redis_url)
    for key in client.scan_iter(relay.PREFIX + "*"):
        client.delete(key)
    host_port = normalize_url(db).split("@", 1)[1].split("/", 1)[0]
    proxy = FreezableProxy(("127.0.0.1", int(host_port.rsplit(":", 1)[1])))
    proxied = normalize_url(db).replace(host_port, f"127.0.0.1:{proxy.port}")

    def read(bid: int) -> Credentials | None:
        with shared_sessions(proxied)() as session:
            return credentials(session, bid)

    gw = RunningGateway(redis_url, read, renew_s=0.05, credentials_ttl_s=0.0, credentials_timeout_s=1.0)
    try:
        bot = HeldBot(gw.url, bot_id, secret)
        proxy.freeze()
        wait_until(lambda: proxy.held, "the gateway reading the frozen database")
        alive = relay.alive_key(gw.gw.id)
        ttls = [client.pttl(alive)]

        def refreshed() -> int:
            ttls.append(client.pttl(alive))
            assert ttls[-1] > 0, "the gateway's alive key lapsed while the database was frozen"
            return sum(b > a for a, b in zip(ttls, ttls[1:])) >= 4  # it lapses 3 s after a refresh

        wait_until(refreshed, "the alive key refreshed four times")
        outcome = decide_in_thread(redis_url, bot_id, "m-frozen-db", 30.0)
        wait_until(lambda: bot.frames, "the request delivered")
        bot.answer_all()
        wait_until(lambda: outcome, "the decision answered")
        assert outcome[0].fault is None and outcome[0].action == {"type": "pass", "match": "m-frozen-db"}, outcome
        late = connect(gw.url, max_size=wire.MAX_FRAME_BYTES, legacy=True)
        late.send(wire.auth_frame(late_id, late_secret, json.loads(late.recv(timeout=10))["nonce"]))
        assert close_code(late) == 1011
        assert relay.presence(client, [bot_id])[bot_id].connections == 1
        proxy.thaw()
        HeldBot(gw.url, late_id, late_secret).ws.close()
        assert bot.closed == []
    finally:
        proxy.close()
        gw.close()


def start_redis(port: int) -> subprocess.Popen[bytes]:
    """A throwaway ``redis-server`` on ``port`` (empty: no persistence), once it answers."""
    exe = shutil.which("redis-server")
    if exe is None:  # infra/test.sh installs it; a bare pytest run may not have it
        pytest.fail("redis-server is not installed (run the tests through infra/test.sh)")
    proc = children.spawn(
        [exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    client = redis.Redis(host="127.0.0.1", port=port)

    def answers() -> bool:
        try:
            return bool(client.ping())
        except redis.ConnectionError:
            assert proc.poll() is None, "redis-server exited"
            return False

    wait_until(answers, "redis-server answering")
    return proc


@dataclass
class RelayDecision:
    """A decision of a bot that connects, asked in a thread: its outcome, or what it raised."""

    outcomes: list[Outcome]
    raised: list[BaseException]

    def done(self) -> bool:
        return bool(self.outcomes or self.raised)


def relay_decision(broker: str, bot_id: int, match_id: str, timeout_s: float) -> RelayDecision:
    """As the worker asks (``arena.delivery``: one connection of a pooled client for the match)."""
    pooled = redis.Redis.from_url(broker, socket_timeout=5, socket_connect_timeout=5)
    client = redis.Redis(connection_pool=pooled.connection_pool, single_connection_client=True)
    player = ConnectedPlayer(bot_id, client, "nat", reconnect_s=timeout_s)
    out = RelayDecision([], [])

    def run() -> None:
        assert pooled  # the pool's owner lives as long as its connection is used (it closes the pool)
        try:
            out.outcomes.append(player.decide(json.dumps({"match_id": match_id}).encode(), timeout_s))
        except BaseException as exc:
            out.raised.append(exc)

    threading.Thread(target=run, daemon=True).start()
    return out


@pytest.fixture
def own_redis(free_port) -> Iterator[tuple[int, list[subprocess.Popen[bytes]]]]:
    """A Redis of the test's own (it kills and restarts it): its port and its processes."""
    port = free_port()
    procs = [start_redis(port)]
    yield port, procs
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def _restart(port: int, procs: list[subprocess.Popen[bytes]]) -> None:
    procs[-1].send_signal(signal.SIGKILL)
    procs[-1].wait(10)
    procs.append(start_redis(port))


def test_redis_restarted_empty_mid_decision_costs_the_bot_nothing(own_redis) -> None:
    """Redis (the relay) is killed while the bot thinks and comes back empty: the request, its
    hold and the gateway's alive key are gone. The worker waits for Redis within the bank and
    the bot's answer, sent after the restart, is the decision: no fault for the bot."""
    port, procs = own_redis
    broker = f"redis://127.0.0.1:{port}/0"
    gw = RunningGateway(broker)
    try:
        bot = HeldBot(gw.url, 7, SECRETS[7])
        decision = relay_decision(broker, 7, "m-restart", 60.0)
        wait_until(lambda: bot.frames, "the request delivered")
        _restart(port, procs)
        bot.answer_all()
        wait_until(decision.done, "the decision over")
        assert decision.raised == [] and decision.outcomes[0].fault is None, decision
        assert decision.outcomes[0].action == {"type": "pass", "match": "m-restart"}
        assert bot.closed == []
    finally:
        gw.close()


def test_redis_down_until_the_deadline_is_the_arenas_failure_not_the_bots(own_redis) -> None:
    """Redis dies while the bot thinks and is still down when the seat's bank runs out: no
    fault is charged to the bot (it could not be reached through the arena's own relay); the
    decision raises :class:`RelayUnavailable`, so that the match fails as the arena's error
    (the organizer plays it again) instead of being scored."""
    port, procs = own_redis
    broker = f"redis://127.0.0.1:{port}/0"
    gw = RunningGateway(broker)
    try:
        bot = HeldBot(gw.url, 7, SECRETS[7])
        decision = relay_decision(broker, 7, "m-down", 3.0)
        wait_until(lambda: bot.frames, "the request delivered")
        procs[-1].send_signal(signal.SIGKILL)
        procs[-1].wait(10)
        wait_until(decision.done, "the decision over")
        assert decision.outcomes == [] and [type(e) for e in decision.raised] == [RelayUnavailable], decision
        assert internal_reason("playing", decision.raised[0]) == (
            "internal error while playing: RelayUnavailable: the relay to the gateways (Redis) failed during a"
            " decision and no answer came: ConnectionError"
        )
        procs.append(start_redis(port))
    finally:
        gw.close()


class WatchedHealth(WorkerHealth):
    """The worker's health (arena.delivery), and an event set once the match waits for it."""

    def __init__(self, settings: Settings):
        super().__init__(settings, None, wait_s=120.0)
        self.waiting = threading.Event()

    def wait(self) -> bool:
        self.waiting.set()
        return super().wait()


@pytest.mark.slow
def test_redis_down_longer_than_a_bank_mid_match_the_match_goes_on_with_no_fault(own_redis, tmp_path) -> None:
    """Redis (the relay, on the data host) dies mid-match and stays down past the seat's bank.
    Before, the decision raised RelayUnavailable and the match ended ``failed``: the tournament
    stopped until an organizer pressed Retry. Now the runner waits for the worker's links to be
    well (arena.heartbeat.WorkerHealth), asks the decision again with the bank it had, and the
    match is played to its end: no fault, the arena's failure in the log as the arena's."""
    port, procs = own_redis
    broker = f"redis://127.0.0.1:{port}/0"
    gw = RunningGateway(broker)
    bot = sdk_connect(SAMPLE_BOTS["random"](seed=5), gw.url, bot_id=7, secret=SECRETS[7], background=True)
    try:
        assert bot.wait_authenticated(timeout=30)
        settings = Settings(data_dir=tmp_path, database_url=f"sqlite:///{tmp_path / 'a.db'}", broker_url=broker)
        health = WatchedHealth(settings)
        pooled = redis.Redis.from_url(broker, socket_timeout=5, socket_connect_timeout=5)
        client = redis.Redis(connection_pool=pooled.connection_pool, single_connection_client=True)
        players = [ConnectedPlayer(7, client, "b#7", reconnect_s=15.0), LocalPlayer(SAMPLE_BOTS["greedy"](seed=2))]
        config = MatchConfig("million_doubt", {}, seed=9, games=6, time_rules=TimeRules.from_seconds(2, 1, 2))
        played: list[Any] = []
        decided = threading.Event()

        def step(_gi: int, _g: Any, ex: Any) -> None:
            if ex["player"] == 0:
                decided.set()

        def run() -> None:
            try:
                played.append(Match(players, config, Observers(on_step=step, health=health)).play())
            except BaseException as exc:
                played.append(exc)

        threading.Thread(target=run, daemon=True).start()
        assert decided.wait(60)  # the match is under way through the relay
        procs[-1].send_signal(signal.SIGKILL)
        procs[-1].wait(10)
        assert health.waiting.wait(60)  # a decision failed for the arena: the match waits for it
        procs.append(start_redis(port))  # back, empty
        wait_until(lambda: played, "the match over", 120)
        log = played[0]
        assert isinstance(log, dict), log  # before: RelayUnavailable, the match failed
        assert log["faults"] == [] and log["result"]["faults"] == [0, 0]
        arena = [f for g in log["games"] for f in g.get("arena_faults", [])]
        assert arena and all(f["player"] == 0 and "relay" in f["detail"] for f in arena), arena
        replay(log)
    finally:
        bot.stop()
        gw.close()


def decision_request() -> dict:
    """A real decision request: the first of a Million Doubt game."""
    g = engine.new_game("million_doubt", seed=1)
    return protocol.build_request(
        g, g.decision().seat, match_id="m-frozen", game=0, time_rules=TimeRules(), remaining_ms=60000
    )


@pytest.mark.slow
def test_a_frozen_gateway_costs_an_sdk_bot_no_decision(
    site: Site, redis_url: str, gateways: list[subprocess.Popen[str]]
) -> None:
    """The gateway an SDK bot is connected to freezes (SIGSTOP): its socket stays open, no
    close ever comes. The worker sees the gateway dead within seconds and queues the request
    again; the bot must notice the silence (its keepalive pings go unanswered: within 2 x 5 s)
    and reconnect, to the other gateway it knows, within the wait for a reconnection (15 s),
    so the decision is answered there. With websockets' default keepalive (a ping every 20 s, 20 s to answer)
    it noticed after 20 to 40 s: the decision was the fault connection_error, a lost game, for
    a machine of the arena's that froze."""
    first, _, url1 = start_gateway(site.env, gateways)
    _, _, url2 = start_gateway(site.env, gateways)
    with sdk_connect(
        SAMPLE_BOTS["random"](seed=3), [url1, url2], bot_id=site.bot_id, secret=site.secret, background=True
    ) as conn:
        assert conn.wait_authenticated(timeout=30)
        first.send_signal(signal.SIGSTOP)
        player = ConnectedPlayer(site.bot_id, redis.Redis.from_url(redis_url), "nat", reconnect_s=15.0)
        out = player.decide(json.dumps(decision_request()).encode(), 60.0)
        assert out.fault is None and out.action is not None, out
        assert conn.welcomes == 2  # reconnected once, to the live gateway


@pytest.mark.slow
@skip_unless("node")
def test_the_node_starter_notices_a_connection_gone_silent_and_reconnects(redis_url: str, tmp_path: Path) -> None:
    """The network path of the Node starter's connection goes silent (nothing passes, no close
    or reset ever comes: a NAT that forgot it, a gateway that froze). With no keepalive of its
    own the starter waited on that connection for good, every request sent to it lost; it must
    notice within 10 s (its pings unanswered) and connect again."""
    gw = RunningGateway(redis_url)
    proxy = FreezableProxy(("127.0.0.1", gw.gw.port))
    out_path = tmp_path / "node.out"
    env = {
        "PATH": os.environ.get("PATH", ""),
        "ARENA_BOT_SECRET": SECRETS[7],
        "ARENA_BOT_ID": "7",
        "ARENA_GATEWAY_URL": f"ws://127.0.0.1:{proxy.port}/v1/bots",
    }
    with open(out_path, "wb") as out:
        proc = children.spawn(command("node"), env=env, stdout=out, stderr=subprocess.STDOUT)
    try:

        def welcomes() -> int:
            return out_path.read_text().count("connected to ")

        wait_until(welcomes, "the starter connected")
        proxy.freeze(new_ones=False)  # this connection goes silent; a new one would pass
        wait_until(lambda: welcomes() == 2, "the starter connected again", 30.0)
        assert "no pong from the gateway" in out_path.read_text()
    finally:
        proc.terminate()
        proc.wait(30)
        proxy.close()
        gw.close()


@pytest.mark.slow
def test_a_request_held_by_a_connection_gone_silent_goes_to_the_bots_new_one(redis_url: str) -> None:
    """A bot's network changes (a laptop moving to another Wi-Fi): its old connection goes
    silent, no close or reset ever reaches the gateway, and the bot connects again from its
    new network. A request the gateway gave the old connection stayed there until the
    gateway's own keepalive gave up on it (20 s between pings, 20 s for the pong): past a
    30 s bank, the fault timeout. The gateway now probes a connection that holds requests
    and has been silent while the bot has a newer one: unanswered, it is dropped and its
    requests go to the new connection."""
    for key in redis.Redis.from_url(redis_url).scan_iter(relay.PREFIX + "*"):
        redis.Redis.from_url(redis_url).delete(key)
    gw = RunningGateway(redis_url)
    proxy = FreezableProxy(("127.0.0.1", gw.gw.port))
    try:
        old = HeldBot(f"ws://127.0.0.1:{proxy.port}/v1/bots", 7, SECRETS[7])
        proxy.freeze(new_ones=False)
        decision = relay_decision(redis_url, 7, "m-moved", 30.0)
        client = redis.Redis.from_url(redis_url)
        wait_until(lambda: list(client.scan_iter(relay.PREFIX + "held:*")), "the request given to the old connection")
        new = HeldBot(gw.url, 7, SECRETS[7])
        wait_until(lambda: new.frames, "the request given to the new connection", 30.0)
        new.answer_all()
        wait_until(decision.done, "the decision over")
        assert decision.raised == [] and decision.outcomes[0].fault is None, decision
        assert decision.outcomes[0].action == {"type": "pass", "match": "m-moved"}
        assert old.frames == []
    finally:
        proxy.close()
        gw.close()


@pytest.mark.slow
def test_a_bot_thinking_long_without_answering_pings_is_not_dropped(redis_url: str) -> None:
    """The other side of the probe: a bot on its only connection thinks for longer than the
    silence and the probe together, its library unable to answer pings meanwhile (a
    synchronous think in the event loop). It opened no newer connection: it is never probed,
    and its answer counts."""
    for key in redis.Redis.from_url(redis_url).scan_iter(relay.PREFIX + "*"):
        redis.Redis.from_url(redis_url).delete(key)
    gw = RunningGateway(redis_url)
    try:
        bot = RawBot(gw.url)
        bot.authenticate(7)
        decision = relay_decision(redis_url, 7, "m-think", 60.0)
        rid = bot.recv_json()["id"]
        client = redis.Redis.from_url(redis_url)
        ttls = [client.pttl(relay.alive_key(gw.gw.id))]

        def ticks() -> bool:  # the gateway's clock: its alive key refreshed once a second
            ttls.append(client.pttl(relay.alive_key(gw.gw.id)))
            return sum(b > a for a, b in zip(ttls, ttls[1:])) > SILENT_S + PROBE_S + 1

        wait_until(ticks, "the silence and a probe's time over")
        bot.send(bot.frame_bytes(wire.answer_frame(rid, {"type": "pass"})))
        wait_until(decision.done, "the decision over")
        assert decision.outcomes and decision.outcomes[0].action == {"type": "pass"}, decision
        bot.close()
    finally:
        gw.close()
