"""SSRF at connection time: one resolution per connection, every address checked, the socket
connected to the checked address (Host header kept), in the health check and in matches.

The resolver stub replaces ``socket.getaddrinfo`` inside this test process for the names
``*.rebind.test`` only (every other name goes to the real resolver): its first answer is a
public address, the next ones 127.0.0.1, as a DNS rebinding attacker would answer. The bot is
a real HTTP server on 127.0.0.1 that records what reaches it.
"""

from __future__ import annotations

import socket

import pytest

from arena.conformance import health_check
from arena.lifecycle import MatchPlan, SeatPlan
from arena.playing import build_players
from arena.runner.match import run_match
from arena.runner.players import HttpPlayer
from arena.url_policy import BotUrlError, check_bot_url
from bots_sdk.samples import SAMPLE_BOTS
from engine.timebank import TimeRules
from tests.fakes import FakeBot

PUBLIC = "93.184.215.14"


@pytest.fixture
def bot():
    """A real bot on 127.0.0.1 (tests.fakes.FakeBot): answers health checks and decisions;
    ``hosts`` records every request's Host header."""
    b = FakeBot()
    yield b
    b.close()


class Resolver:
    """``socket.getaddrinfo`` for ``*.rebind.test``: ``answers`` in turn (the last one repeats)."""

    def __init__(self, monkeypatch, answers: list[str]):
        self.answers = list(answers)
        self.calls: list[str] = []
        real = socket.getaddrinfo

        def getaddrinfo(host, port, *args, **kwargs):
            if isinstance(host, bytes):
                host = host.decode()
            if not str(host).endswith(".rebind.test"):
                return real(host, port, *args, **kwargs)
            self.calls.append(host)
            address = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, int(port)))]

        monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


def _play(player) -> dict:
    """A real two-game Million Doubt match of ``player`` against the greedy sample bot; the log."""
    try:
        return run_match(
            [player, SAMPLE_BOTS["greedy"](seed=2)],
            "million_doubt",
            seed=1,
            games=2,
            time_rules=TimeRules.from_seconds(initial=10, increment=1, cap=10),
            max_faults=1,
        )
    finally:
        player.close()


def _own_faults(log: dict) -> list[dict]:
    return [f for f in log["faults"] if f["player"] == 0]


def test_rebinding_after_registration_is_refused_at_connection(monkeypatch, bot, client, accounts):
    app = client.application
    url = f"http://bot.rebind.test:{bot.port}/"
    resolver = Resolver(monkeypatch, [PUBLIC, "127.0.0.1"])
    headers = accounts.contestant("mallory")
    app.extensions["arena"]["settings"] = type(app.extensions["arena"]["settings"])(
        **{**app.extensions["arena"]["settings"].__dict__, "allow_private_bot_urls": False}
    )
    r = client.post("/api/v1/bots", json={"name": "b", "url": url, "rulesets": ["million_doubt"]}, headers=headers)
    assert r.status_code == 201, r.json  # the name was public when registered
    assert resolver.calls == ["bot.rebind.test"]

    out = health_check(url, allow_private=False)  # the name now answers 127.0.0.1
    assert out["ok"] is False and "loopback" in out["error"] and "policy" in out["error"]
    faults = _own_faults(_play(HttpPlayer(url, "s" * 64, allow_private=False)))
    assert faults and faults[0]["kind"] == "connection_error" and "loopback" in faults[0]["detail"], faults
    assert bot.hosts == []  # nothing reached the server on 127.0.0.1


def test_connection_goes_to_the_checked_address_once_per_connection(monkeypatch, bot):
    resolver = Resolver(monkeypatch, ["127.0.0.1"])
    url = f"http://bot.rebind.test:{bot.port}/"
    player = HttpPlayer(url, "s" * 64, allow_private=True)
    log = _play(player)
    assert _own_faults(log) == []
    assert len(bot.hosts) > 10  # every decision and notice of the match
    assert resolver.calls == ["bot.rebind.test"]  # one resolution for the keep-alive connection
    assert set(bot.hosts) == {f"bot.rebind.test:{bot.port}"}  # the Host header keeps the name
    assert player.transport.backend.connections == 1


def test_workers_players_apply_the_policy_of_their_settings(monkeypatch, bot, tmp_path):
    from arena.config import Settings

    Resolver(monkeypatch, ["127.0.0.1"])
    seat = SeatPlan(
        seat=0, bot_id=1, house_bot=None, name="b#1", url=f"http://bot.rebind.test:{bot.port}/", secret="s" * 64
    )
    house = SeatPlan(seat=1, bot_id=None, house_bot="house-1", name="house-1", url=None, secret=None)
    plan = MatchPlan(
        match_id=1,
        tournament_id=1,
        ruleset="million_doubt",
        options={},
        time_rules=TimeRules.from_seconds(),
        games=2,
        seed=1,
        max_faults=3,
        attempt=1,
        seats=(seat, house),
    )
    for allow, fault in ((False, "connection_error"), (True, None)):
        settings = Settings(
            data_dir=tmp_path,
            database_url="sqlite://",
            broker_url="redis://127.0.0.1:1/0",
            allow_private_bot_urls=allow,
            celery_eager=True,
        )
        faults = _own_faults(_play(build_players(plan, settings)[0]))
        assert (faults[0]["kind"] if faults else None) == fault, faults


@pytest.mark.parametrize(
    "url",
    [
        "http://[2002:7f00:1::]/",  # 6to4 of 127.0.0.1
        "http://[2002:a00:1::]/",  # 6to4 of 10.0.0.1
        "http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/",  # Teredo, client 127.0.0.1
        "http://[64:ff9b::a9fe:a9fe]/",  # NAT64 of 169.254.169.254
        "http://[::ffff:10.1.2.3]/",  # IPv4-mapped private
        "http://[::ffff:7f00:1]/",  # IPv4-mapped loopback, hex form
    ],
)
def test_ipv6_addresses_embedding_private_ones_are_refused(url, client, accounts):
    with pytest.raises(BotUrlError):
        check_bot_url(url)
    app = client.application
    app.extensions["arena"]["settings"] = type(app.extensions["arena"]["settings"])(
        **{**app.extensions["arena"]["settings"].__dict__, "allow_private_bot_urls": False}
    )
    r = client.post(
        "/api/v1/bots", json={"name": "b", "url": url, "rulesets": ["jdf"]}, headers=accounts.contestant("eve")
    )
    assert r.status_code == 422 and "json.url" in r.json["message"], r.json


def test_ipv6_embedding_public_addresses_pass():
    assert check_bot_url("http://[2002:5db8:d70e::]/") == "http://[2002:5db8:d70e::]/"
