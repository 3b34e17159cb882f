"""The SDK's client (bots_sdk.connect) and the Node starter against the real gateway, real
Redis and the worker-side player: whole matches with no fault, and a refused secret."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator

import pytest
import redis

from arena.runner.connected import ConnectedPlayer
from arena.runner.match import Match, MatchConfig
from arena.runner.players import HttpPlayer, LocalPlayer
from bots_sdk import ConnectError, connect, wire
from bots_sdk.bot import Bot, Request
from bots_sdk.samples import SAMPLE_BOTS
from bots_sdk.server import start as start_bot
from engine.timebank import TimeRules
from tests import children
from tests.gateway.test_gateway import SECRETS, RunningGateway
from tests.starter_builds import command, skip_unless

pytestmark = pytest.mark.services


@pytest.fixture
def gateway(broker: str) -> Iterator[RunningGateway]:
    """The gateway of tests/gateway/test_gateway.py (bots 7 and 8 connect; their SECRETS)."""
    g = RunningGateway(broker)
    yield g
    g.close()


def _player(broker_url: str, bot_id: int) -> ConnectedPlayer:
    return ConnectedPlayer(bot_id, redis.Redis.from_url(broker_url), f"b#{bot_id}")


@pytest.mark.parametrize("ruleset", ["million_doubt", "jdf", "trump_millionaire"])
def test_an_sdk_bot_plays_a_match_through_the_gateway(gateway: RunningGateway, broker: str, ruleset: str) -> None:
    bot = SAMPLE_BOTS["heuristic"](seed=1)
    with connect(bot, gateway.url, bot_id=7, secret=SECRETS[7], pool=2, background=True) as conn:
        assert conn.wait_authenticated(timeout=30)
        config = MatchConfig(ruleset, {}, seed=5, games=2, time_rules=TimeRules.from_seconds(10, 1, 10))
        players = [_player(broker, 7)] + [LocalPlayer(SAMPLE_BOTS["random"](seed=s)) for s in range(2, 5)]
        seats = 2 if ruleset == "million_doubt" else 4
        log = Match(players[:seats], config).play()
    assert log["faults"] == []
    assert log["result"] is not None
    assert sum(len(g["exchanges"]) for g in log["games"]) > 5


def test_an_sdk_bot_with_a_wrong_secret_stops_with_4401(gateway: RunningGateway) -> None:
    conn = connect(SAMPLE_BOTS["random"](), gateway.url, bot_id=7, secret="not-the-secret", background=True)
    with pytest.raises(ConnectError) as refused:
        conn.join(timeout=30)
    assert refused.value.code == wire.CLOSE_AUTH_FAILED


@skip_unless("node")
def test_the_node_starter_plays_a_match_through_the_gateway(gateway: RunningGateway, broker: str) -> None:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "ARENA_BOT_SECRET": SECRETS[7],
        "ARENA_BOT_ID": "7",
        "ARENA_GATEWAY_URL": gateway.url,
    }
    proc = children.spawn(command("node"), env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # "connected to ... as b#7 (bot 7)" once welcomed
        assert line.startswith("connected to") and "bot 7" in line, line
        config = MatchConfig("jdf", {}, seed=9, games=1, time_rules=TimeRules.from_seconds(10, 1, 10))
        players = [_player(broker, 7)] + [LocalPlayer(SAMPLE_BOTS["greedy"](seed=s)) for s in range(3)]
        log = Match(players, config).play()
        assert log["faults"] == []
        assert log["result"] is not None
    finally:
        proc.terminate()
        proc.wait(30)


class NotANumber(Bot):
    """A bot whose action carries a float it computed badly (NaN, an infinity)."""

    name = "nan"

    def decide(self, request: Request) -> dict:
        return {"type": "pass", "rate": float("nan"), "bound": float("inf")}


def test_the_same_bot_answers_the_same_over_both_transports(gateway: RunningGateway, broker: str) -> None:
    """The SDK serializes an answer over a connection as over HTTP (NaN and infinities as
    null): the arena reads the same action either way, and no frame the gateway refuses."""
    request = b'{"match_id": "m", "protocol": 1, "type": "decision"}'
    server = start_bot(NotANumber(), "127.0.0.1", 0, "http-secret")
    try:
        over_http = HttpPlayer(server.url, "http-secret", allow_private=True).decide(request, 10.0)
    finally:
        server.close()
    with connect(NotANumber(), gateway.url, bot_id=7, secret=SECRETS[7], background=True) as conn:
        assert conn.wait_authenticated(timeout=30)
        over_gateway = _player(broker, 7).decide(request, 10.0)
    assert over_http.fault is None and over_http.action == {"type": "pass", "rate": None, "bound": None}, over_http
    assert over_gateway.fault is None and over_gateway.action == over_http.action, over_gateway
