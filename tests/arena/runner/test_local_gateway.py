"""The gateway of ``arena play`` (:mod:`arena.runner.local_gateway`) against bots on real
WebSocket connections on 127.0.0.1: the SDK's client (``bots_sdk.connect``) for a well-behaved
bot, raw ``websockets`` clients for the ones that break the protocol. Each wrong doing costs
what it costs at the arena's gateway (daifugo_arena/gateway/); the whole CLI with real processes is
tests/cli/test_play_dialout.py."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator

import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection
from websockets.sync.client import connect as ws_connect

import engine
from arena.runner.local_gateway import DialedPlayer, LocalGateway
from arena.runner.match import Match, MatchConfig
from arena.runner.players import LocalPlayer
from bots_sdk import protocol, wire
from bots_sdk.connect import connect
from bots_sdk.samples import SAMPLE_BOTS
from engine.timebank import TimeRules

SECRET = "s" * 64
WAIT_S = 30.0


@pytest.fixture
def gateway() -> Iterator[LocalGateway]:
    gw = LocalGateway({1: SECRET, 2: SECRET}, reconnect_s=2.0).start()
    yield gw
    gw.close()


def _request(seed: int = 3) -> bytes:
    g = engine.new_game("million_doubt", {}, seed)
    d = g.decision()
    assert d is not None
    req = protocol.build_request(g, d.seat, match_id="m", game=0, time_rules=TimeRules(), remaining_ms=60_000)
    return protocol.dumps(req)


class RawBot:
    """A bot on a raw connection: authenticates (or not), then the test reads and writes frames."""

    def __init__(self, gw: LocalGateway, bot_id: int = 1, secret: str = SECRET, authenticate: bool = True):
        self.ws: ClientConnection = ws_connect(gw.url, max_size=None, open_timeout=WAIT_S, legacy=True)
        challenge = json.loads(self.ws.recv(timeout=WAIT_S))
        assert challenge["type"] == "challenge"
        if authenticate:
            self.ws.send(wire.auth_frame(bot_id, secret, challenge["nonce"]))

    def recv(self) -> dict:
        return json.loads(self.ws.recv(timeout=WAIT_S))

    def close_code(self) -> int | None:
        try:
            while True:
                self.ws.recv(timeout=WAIT_S)
        except ConnectionClosed as exc:
            return exc.rcvd.code if exc.rcvd is not None else None


def _in_thread(fn) -> tuple[threading.Thread, list]:
    out: list = []
    t = threading.Thread(target=lambda: out.append(fn()), daemon=True)
    t.start()
    return t, out


def test_an_sdk_bot_plays_a_whole_match_and_its_pings_are_counted(gateway: LocalGateway) -> None:
    with connect(SAMPLE_BOTS["greedy"](seed=1), gateway.url, bot_id=1, secret=SECRET, background=True, keepalive_s=0.2):
        assert gateway.wait_connected(1, WAIT_S)
        player = DialedPlayer(gateway, 1, "dialed")
        health = player.health(WAIT_S)
        assert health.fault is None and health.action == {"name": "greedy", "protocol": 1, "protocols": [1]}
        config = MatchConfig("jdf", {"seven_pass": True, "ten_discard": True}, seed=5, games=1)
        log = Match([player] + [LocalPlayer(SAMPLE_BOTS["random"](seed=s)) for s in range(3)], config).play()
        assert log["faults"] == [] and log["players"][0]["kind"] == "connect"
        assert sum(1 for x in log["games"][0]["exchanges"] if x["player"] == 0) > 3
        gateway_status = gateway.status(1)
        assert gateway_status["welcomes"] == 1 and gateway_status["connections"] == 1
    # pinged every 0.2 s while it played: at least one ping seen
    assert gateway.status(1)["pings"] >= 1


def test_a_wrong_secret_or_an_unknown_id_is_closed_with_4401(gateway: LocalGateway) -> None:
    assert RawBot(gateway, 1, "wrong").close_code() == wire.CLOSE_AUTH_FAILED
    assert RawBot(gateway, 9).close_code() == wire.CLOSE_AUTH_FAILED
    assert gateway.status(1)["refused"] == [wire.CLOSE_AUTH_FAILED] and gateway.status(1)["welcomes"] == 0


def test_no_connection_is_a_connection_error_after_the_wait(gateway: LocalGateway) -> None:
    out = DialedPlayer(gateway, 2).decide(_request(), 60.0)
    assert out.fault == "connection_error" and out.action is None
    assert (
        out.reason is not None
        and out.reason.code == "not_connected"
        and "the bot had no connection" in out.detail
        and out.elapsed_ms >= 2000
    )


def test_answers_come_in_any_order_and_a_late_one_is_ignored(gateway: LocalGateway) -> None:
    bot = RawBot(gateway)
    assert bot.recv()["type"] == "welcome"
    player = DialedPlayer(gateway, 1)
    first, got1 = _in_thread(lambda: player.decide(_request(1), WAIT_S))
    one = bot.recv()
    second, got2 = _in_thread(lambda: player.decide(_request(2), WAIT_S))
    two = bot.recv()
    bot.ws.send(json.dumps({"id": two["id"], "body": {"type": "pass", "n": 2}}))  # the second first
    second.join(WAIT_S)
    bot.ws.send(json.dumps({"id": one["id"], "body": {"type": "pass", "n": 1}}))
    first.join(WAIT_S)
    assert got1[0].action == {"type": "pass", "n": 1} and got2[0].action == {"type": "pass", "n": 2}

    slow, got3 = _in_thread(lambda: player.decide(_request(3), 0.3))
    three = bot.recv()
    slow.join(WAIT_S)
    assert got3[0].fault == "timeout" and got3[0].action is None
    bot.ws.send(json.dumps({"id": three["id"], "body": {"type": "pass"}}))  # late: ignored, once
    later, got4 = _in_thread(lambda: player.decide(_request(4), WAIT_S))
    four = bot.recv()
    bot.ws.send(json.dumps({"id": four["id"], "body": {"type": "pass", "n": 4}}))
    later.join(WAIT_S)
    assert got4[0].action == {"type": "pass", "n": 4}
    assert gateway.status(1)["connections"] == 1  # the late answer did not close the connection


@pytest.mark.parametrize(
    ("answer", "fault", "code"),
    [
        (b"\x00binary", "invalid_json", wire.CLOSE_NOT_JSON),
        ("not json", "invalid_json", wire.CLOSE_NOT_JSON),
        (json.dumps({"id": "never-sent", "body": {}}), "invalid_json", wire.CLOSE_PROTOCOL),
        ("x" * (wire.MAX_FRAME_BYTES + 1), "body_too_large", wire.CLOSE_TOO_BIG),
    ],
)
def test_a_frame_that_breaks_the_protocol_closes_and_faults_the_request_in_flight(
    gateway: LocalGateway, answer: str | bytes, fault: str, code: int
) -> None:
    bot = RawBot(gateway)
    assert bot.recv()["type"] == "welcome"
    asked, got = _in_thread(lambda: DialedPlayer(gateway, 1).decide(_request(), WAIT_S))
    assert bot.recv()["type"] == "request"
    bot.ws.send(answer)
    asked.join(WAIT_S)
    assert got[0].fault == fault, got[0]
    assert bot.close_code() == code


def test_a_lenient_json_answer_is_that_requests_fault_only(gateway: LocalGateway) -> None:
    bot = RawBot(gateway)
    assert bot.recv()["type"] == "welcome"
    asked, got = _in_thread(lambda: DialedPlayer(gateway, 1).decide(_request(), WAIT_S))
    rid = bot.recv()["id"]
    bot.ws.send('{"id": ' + json.dumps(rid) + ', "body": {"type": "pass", "x": NaN}}')
    asked.join(WAIT_S)
    assert got[0].fault == "invalid_json"
    assert gateway.status(1)["connections"] == 1  # the connection stays


def test_a_request_in_flight_on_a_dropped_connection_goes_to_the_next(gateway: LocalGateway) -> None:
    bot = RawBot(gateway)
    assert bot.recv()["type"] == "welcome"
    asked, got = _in_thread(lambda: DialedPlayer(gateway, 1).decide(_request(), WAIT_S))
    first = bot.recv()
    bot.ws.socket.close()  # dropped without a close: a crash, a network gone
    again = RawBot(gateway)
    assert again.recv()["type"] == "welcome"
    resent = again.recv()
    assert resent["type"] == "request" and resent["body"] == first["body"] and resent["id"] != first["id"]
    again.ws.send(json.dumps({"id": resent["id"], "body": {"type": "pass"}}))
    asked.join(WAIT_S)
    assert got[0].fault is None and got[0].action == {"type": "pass"}
    assert gateway.status(1)["welcomes"] == 2
