"""The gateway with real Redis and real WebSocket bots on 127.0.0.1: authentication, routing
through Redis to the worker-side player (:class:`arena.runner.connected.ConnectedPlayer`),
a whole match, reconnection, and the hostile bots of issue 27 point 7."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from arena import relay
from arena.runner.connected import NO_GATEWAY, ConnectedPlayer
from arena.runner.match import Match, MatchConfig
from arena.runner.players import LocalPlayer
from arena.runner.semaphore import endpoint_key
from arena.usecases.bots import Credentials
from bots_sdk import wire
from bots_sdk.bot import Request
from bots_sdk.samples import SAMPLE_BOTS
from daifugo_arena.gateway.config import GatewayConfig
from daifugo_arena.gateway.server import Gateway
from engine.timebank import TimeRules

pytestmark = pytest.mark.services

SECRETS = {7: "secret-of-seven", 8: "secret-of-eight", 9: "secret-of-nine", 10: "secret-of-ten"}
#: bot id -> (owner account, transport)
BOTS = {7: (1, "connect"), 8: (2, "connect"), 9: (1, "http"), 10: (1, "connect")}


def _creds(bot_id: int) -> Credentials | None:
    if bot_id not in BOTS:
        return None
    owner, transport = BOTS[bot_id]
    return Credentials(bot_id, owner, f"b#{bot_id}", transport, [SECRETS[bot_id]])


class RunningGateway:
    """A gateway on a thread of this process (``creds``: its credentials lookup; default the
    bots of :data:`BOTS`)."""

    def __init__(self, broker_url: str, creds: Any = _creds, **kw: Any):
        self.ready = threading.Event()
        still_connect = kw.pop("still_connect", None)
        self.gw = Gateway(broker_url, creds, GatewayConfig(port=0, **kw), still_connect=still_connect)
        self.loop: asyncio.AbstractEventLoop | None = None
        self.stop: asyncio.Event | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        assert self.ready.wait(10)
        self.url = f"ws://127.0.0.1:{self.gw.port}{wire.PATH}"

    def _run(self) -> None:
        async def main() -> None:
            self.loop = asyncio.get_running_loop()
            self.stop = asyncio.Event()
            await self.gw.run(self.stop, lambda port: self.ready.set())

        asyncio.run(main())

    def call(self, coro: Any) -> Any:
        """Run ``coro`` on the gateway's event loop; its result."""
        assert self.loop is not None
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(10)

    def close(self) -> None:
        assert self.loop is not None and self.stop is not None
        self.loop.call_soon_threadsafe(self.stop.set)
        self.thread.join(10)


@pytest.fixture
def gateway(broker: str) -> Iterator[RunningGateway]:
    g = RunningGateway(broker, auth_timeout_s=1.0, max_per_bot=3, max_per_account=4)
    yield g
    g.close()


def authenticate(url: str, bot_id: int, secret: str | None = None, **kw: Any) -> tuple[ClientConnection, dict]:
    """A connection of ``bot_id`` and its welcome (``kw``: more options of ``connect``)."""
    ws = connect(url, max_size=wire.MAX_FRAME_BYTES, **kw, legacy=True)
    challenge = json.loads(ws.recv(timeout=5))
    assert challenge["type"] == "challenge" and challenge["protocol"] == 1
    ws.send(wire.auth_frame(bot_id, secret or SECRETS[bot_id], challenge["nonce"]))
    return ws, json.loads(ws.recv(timeout=5))


def close_code(ws: ClientConnection) -> int | None:
    try:
        while True:
            ws.recv(timeout=5)
    except ConnectionClosed as exc:
        return exc.rcvd.code if exc.rcvd is not None else None


class Answering:
    """A bot on a connection: answers each request with ``answer(frame)`` (None: no answer)."""

    def __init__(self, ws: ClientConnection, answer: Any):
        self.ws, self.answer = ws, answer
        self.frames: list[dict] = []
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            for raw in self.ws:
                f = json.loads(raw)
                self.frames.append(f)
                if f["type"] == "notice":
                    continue
                out = self.answer(f)
                if out is not None:
                    self.ws.send(out)
        except ConnectionClosed:
            pass


def echo(f: dict) -> str:
    return wire.answer_frame(f["id"], {"echo": f["type"], "match": f["body"].get("match_id")})


def player(broker: str, bot_id: int, reconnect_s: float = 2.0) -> ConnectedPlayer:
    return ConnectedPlayer(bot_id, redis.Redis.from_url(broker), f"b#{bot_id}", reconnect_s=reconnect_s)


def test_a_bot_authenticates_and_answers_requests_and_health(gateway: RunningGateway, broker: str) -> None:
    ws, welcome = authenticate(gateway.url, 7)
    assert welcome["type"] == "welcome" and welcome["bot_id"] == 7 and welcome["max_frame_bytes"] == 64 * 1024 + 512
    Answering(ws, echo)
    p = player(broker, 7)
    out = p.decide(b'{"match_id": "m1"}', 5.0)
    assert out.fault is None and out.action == {"echo": "request", "match": "m1"}
    assert p.health(5.0).action == {"echo": "health", "match": None}
    pres = relay.presence(redis.Redis.from_url(broker), [7, 8])
    assert pres[7].connections == 1 and pres[7].since is not None and pres[8] == relay.OFFLINE
    ws.close()


def test_wrong_secret_unknown_bot_and_url_bot_are_refused(gateway: RunningGateway) -> None:
    for bot_id, secret, code in [
        (7, "not-the-secret", wire.CLOSE_AUTH_FAILED),
        (404, "whatever", wire.CLOSE_AUTH_FAILED),
        (9, SECRETS[9], wire.CLOSE_NOT_CONNECT_BOT),
    ]:
        ws = connect(gateway.url, legacy=True)
        challenge = json.loads(ws.recv(timeout=5))
        ws.send(wire.auth_frame(bot_id, secret, challenge["nonce"]))
        assert close_code(ws) == code


def test_a_proof_for_another_nonce_is_refused(gateway: RunningGateway) -> None:
    ws = connect(gateway.url, legacy=True)
    json.loads(ws.recv(timeout=5))
    ws.send(wire.auth_frame(7, SECRETS[7], "0" * 32))  # a replayed proof of another challenge
    assert close_code(ws) == wire.CLOSE_AUTH_FAILED


def test_a_connection_that_never_authenticates_is_closed(gateway: RunningGateway) -> None:
    ws = connect(gateway.url, legacy=True)
    assert json.loads(ws.recv(timeout=5))["type"] == "challenge"
    assert close_code(ws) == wire.CLOSE_AUTH_TIMEOUT


def test_connection_caps_per_bot_and_per_account(gateway: RunningGateway) -> None:
    held = [authenticate(gateway.url, 7)[0] for _ in range(3)]
    with pytest.raises(ConnectionClosed) as refused:  # a fourth of bot 7: over max_per_bot 3
        authenticate(gateway.url, 7)
    assert refused.value.rcvd is not None and refused.value.rcvd.code == wire.CLOSE_TOO_MANY
    ws8 = [authenticate(gateway.url, 8)[0] for _ in range(3)]  # another account: its own cap
    assert all(ws.protocol.state.name == "OPEN" for ws in ws8)
    for ws in held + ws8:
        ws.close()


def test_no_connection_receives_another_bots_request(gateway: RunningGateway, broker: str) -> None:
    ws7, _ = authenticate(gateway.url, 7)
    ws8, _ = authenticate(gateway.url, 8)
    a7, a8 = Answering(ws7, echo), Answering(ws8, echo)
    p7, p8 = player(broker, 7), player(broker, 8)
    for i in range(20):
        assert p7.decide(json.dumps({"match_id": f"seven-{i}"}).encode(), 5.0).action["match"] == f"seven-{i}"
        assert p8.decide(json.dumps({"match_id": f"eight-{i}"}).encode(), 5.0).action["match"] == f"eight-{i}"
    assert {f["body"]["match_id"][:5] for f in a7.frames} == {"seven"}
    assert {f["body"]["match_id"][:5] for f in a8.frames} == {"eight"}
    ws7.close()
    ws8.close()


def test_a_bot_not_connected_gets_connection_error_after_the_reconnect_wait(
    gateway: RunningGateway, broker: str
) -> None:
    out = player(broker, 7, reconnect_s=0.3).decide(b"{}", 5.0)
    assert out.fault == "connection_error" and "no connection" in out.detail
    assert 300 <= out.elapsed_ms < 5000  # charged to the bank, and less than the bank
    assert out.arena == "" and out.arena_ms == 0  # a gateway was there: the bot's own absence


def test_with_no_gateway_alive_the_wait_is_the_arenas(broker: str) -> None:
    """No gateway runs (all died, or are restarting): a bot cannot connect anywhere. Before,
    the bot was charged connection_error after the reconnect wait; now that time is the
    arena's: no fault, and the runner asks again (arena.runner.match)."""
    out = player(broker, 7, reconnect_s=0.3).decide(b"{}", 1.5)
    assert out.fault == "timeout" and out.arena == NO_GATEWAY, out
    assert out.arena_ms >= 1000  # about all of it
    assert redis.Redis.from_url(broker).exists(relay.dropped_key(7))  # the bot gets time to come back


def test_a_request_waits_for_the_bot_to_connect(gateway: RunningGateway, broker: str) -> None:
    p = player(broker, 7, reconnect_s=10.0)
    result: list[Any] = []
    t = threading.Thread(target=lambda: result.append(p.decide(b'{"match_id": "late"}', 10.0)))
    t.start()
    client = redis.Redis.from_url(broker)
    while client.llen(relay.request_key(7)) == 0:  # queued: no connection yet
        pass
    ws, _ = authenticate(gateway.url, 7)
    Answering(ws, echo)
    t.join(15)
    assert result[0].fault is None and result[0].action["match"] == "late"
    ws.close()


def test_a_connection_dropped_mid_decision_gives_the_request_to_its_reconnection(
    gateway: RunningGateway, broker: str
) -> None:
    ws, _ = authenticate(gateway.url, 7)
    got = threading.Event()
    Answering(ws, lambda f: got.set())  # takes the request, never answers
    p = player(broker, 7, reconnect_s=10.0)
    result: list[Any] = []
    t = threading.Thread(target=lambda: result.append(p.decide(b'{"match_id": "again"}', 10.0)))
    t.start()
    assert got.wait(5)
    ws.close()  # the bot restarts
    ws2, _ = authenticate(gateway.url, 7)
    Answering(ws2, echo)
    t.join(15)
    assert result[0].fault is None and result[0].action["match"] == "again"
    ws2.close()


def test_hostile_frames_close_the_connection_with_a_fault_and_cost_others_nothing(
    gateway: RunningGateway, broker: str
) -> None:
    good, _ = authenticate(gateway.url, 8)
    Answering(good, echo)
    p7, p8 = player(broker, 7), player(broker, 8)
    cases = [
        (lambda f: wire.answer_frame(f["id"], {"x": "y" * (70 * 1024)}), "body_too_large", wire.CLOSE_TOO_BIG),
        (lambda f: "not json {", "invalid_json", wire.CLOSE_NOT_JSON),
        (lambda f: wire.answer_frame("f" * 24, {}), "invalid_json", wire.CLOSE_PROTOCOL),
        (lambda f: b"\x00binary", "invalid_json", wire.CLOSE_NOT_JSON),
    ]
    for answer, fault, code in cases:
        ws, _ = authenticate(gateway.url, 7)
        codes: list[int | None] = []

        def run(ws: ClientConnection = ws, answer: Any = answer, codes: list[int | None] = codes) -> None:
            try:
                f = json.loads(ws.recv(timeout=5))
                ws.send(answer(f))
            except ConnectionClosed:
                pass
            codes.append(close_code(ws))

        t = threading.Thread(target=run)
        t.start()
        out = p7.decide(b'{"match_id": "m"}', 5.0)
        t.join(10)
        assert out.fault == fault, out
        assert codes == [code]
        # the other account's bot is served all along
        assert p8.decide(b'{"match_id": "ok"}', 5.0).action == {"echo": "request", "match": "ok"}
    good.close()


def test_an_answer_whose_body_is_not_an_object_is_invalid_json(gateway: RunningGateway, broker: str) -> None:
    ws, _ = authenticate(gateway.url, 7)
    Answering(ws, lambda f: json.dumps({"id": f["id"], "body": [1, 2]}))
    out = player(broker, 7).decide(b"{}", 5.0)
    assert out.fault == "invalid_json" and "not a JSON object" in out.detail
    ws.close()


def test_a_match_through_the_gateway_against_an_in_process_bot(gateway: RunningGateway, broker: str) -> None:
    ws, _ = authenticate(gateway.url, 7)
    bot = SAMPLE_BOTS["greedy"](seed=1)
    Answering(ws, lambda f: wire.answer_frame(f["id"], bot.decide(Request(f["body"]))))
    config = MatchConfig("million_doubt", {}, seed=5, games=2, time_rules=TimeRules.from_seconds(5, 1, 5))
    log = Match([player(broker, 7), LocalPlayer(SAMPLE_BOTS["random"](seed=2))], config).play()
    assert log["faults"] == []
    assert log["result"] is not None and len(log["games"]) == 2
    assert sum(len(g["exchanges"]) for g in log["games"]) > 10
    ws.close()


def test_the_worked_example_of_the_protocol_guide_holds() -> None:
    assert wire.auth_signature("s3cret-example", "1764700000", "9f86d081884c7d659a2feaa0c55ad015") == (
        "sha256=93da00b04a8000ba1fb219700148f6f55304fbdb5aa70a5c0b9c214201122faa"
    )
    frame = json.loads(wire.auth_frame(7, "s3cret-example", "9f86d081884c7d659a2feaa0c55ad015", now=1764700000))
    assert wire.auth_valid(frame, ["other", "s3cret-example"], "9f86d081884c7d659a2feaa0c55ad015", now=1764700100)
    assert not wire.auth_valid(frame, ["s3cret-example"], "9f86d081884c7d659a2feaa0c55ad015", now=1764700301)


def test_each_bot_that_dials_out_is_an_endpoint_of_its_own() -> None:
    assert endpoint_key("connect:bot:7") != endpoint_key("connect:bot:8")
    assert endpoint_key("connect:bot:7") == endpoint_key("connect:bot:7")
