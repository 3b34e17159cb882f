"""``arena bots register|list|show`` against a real API server on 127.0.0.1 (SQLite, a real
Redis for the presence of a bot that connects, written there as a gateway writes it)."""

from __future__ import annotations

import json

import pytest
import redis

from arena import relay
from arena.accounts import create_account
from arena.config import Settings
from arena.db.migrate import upgrade
from arena.db.session import make_engine, make_sessionmaker
from cli.demo import WsgiServer
from tests.cli.test_cli_tournament import run


@pytest.fixture
def api(tmp_path, redis_url):
    url = f"sqlite:///{tmp_path / 'arena.db'}"
    upgrade(url)
    engine = make_engine(url)
    with make_sessionmaker(engine)() as s:
        _, contestant = create_account(s, "alice")
    from api import create_app

    settings = Settings(
        data_dir=tmp_path, database_url=url, broker_url=redis_url, allow_private_bot_urls=True, rate_limits=False
    )
    server = WsgiServer(create_app(settings, engine=engine))
    yield {"env": {"ARENA_API_URL": server.url, "ARENA_TOKEN": contestant}, "redis": redis.Redis.from_url(redis_url)}
    server.close()
    engine.dispose()


def test_register_list_and_show_both_transports(api):
    env = api["env"]
    called = run("bots", "register", "caller", "--ruleset", "jdf", "--url", "http://127.0.0.1:9/", env=env)
    assert called.returncode == 0, called.stderr
    called_id = int(called.stdout.strip())
    assert "signing secret (shown once" in called.stderr
    dials = run("bots", "register", "dialer", "--ruleset", "million_doubt", "--connect", "--json", env=env)
    assert dials.returncode == 0, dials.stderr
    body = json.loads(dials.stdout)
    assert (body["transport"], body["url"], body["status"]) == ("connect", None, "unchecked") and body["secret"]
    bot_id = body["id"]
    r = api["redis"]
    r.delete(relay.conns_key(bot_id))

    shown = run("bots", "show", str(bot_id), env=env)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines()[-4:] == ["transport: connect", "connected: no", "connections: 0", "since: -"]

    seconds, micros = r.time()
    now = seconds + micros / 1e6
    since = 1_780_000_000.0  # 2026-05-28T20:26:40+00:00
    r.zadd(
        relay.conns_key(bot_id),
        {relay.member("gw-a", "c1", since): now + 30, relay.member("gw-a", "c2", since + 5): now + 30},
    )
    try:
        shown = run("bots", "show", str(bot_id), env=env)
        assert shown.stdout.splitlines()[-4:] == [
            "transport: connect",
            "connected: yes",
            "connections: 2",
            "since: 2026-05-28T20:26:40+00:00",
        ]
        listed = run("bots", "list", env=env)
        assert listed.returncode == 0, listed.stderr
        assert listed.stdout.splitlines() == [
            f"{called_id}\tcaller\tunchecked\tjdf\thttp\thttp://127.0.0.1:9/",
            f"{bot_id}\tdialer\tunchecked\tmillion_doubt\tconnect"
            "\tconnects; connected, 2 connections since 2026-05-28T20:26:40+00:00",
        ]
    finally:
        r.delete(relay.conns_key(bot_id))


@pytest.mark.parametrize("args", [["--connect", "--url", "http://127.0.0.1:9/"], []], ids=["both", "neither"])
def test_register_needs_exactly_one_of_url_and_connect(api, args):
    done = run("bots", "register", "b", "--ruleset", "jdf", *args, env=api["env"])
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "give exactly one of --url URL" in done.stderr


def test_the_api_refusal_is_one_line(api):
    done = run("bots", "register", "b", "--ruleset", "jdf", "--url", "ftp://x/", env=api["env"])
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "HTTP 422 on POST /api/v1/bots: invalid request: json.url" in done.stderr
