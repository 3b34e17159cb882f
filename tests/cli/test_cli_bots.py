"""``arena bots register|list|show`` against a real API server on 127.0.0.1 (SQLite, a real
Redis for the presence of a bot that connects, written there as a gateway writes it)."""

from __future__ import annotations

import json

import pytest
import redis

from arena import relay
from arena.accounts import create_account
from arena.config import Settings
from arena.db.session import make_engine, make_sessionmaker
from bots_sdk.samples import SAMPLE_BOTS
from bots_sdk.server import start as start_bot
from daifugo_arena.cli.bots import check_lines
from daifugo_arena.cli.servers import WsgiServer
from tests.cli.test_cli_tournament import run
from tests.helpers import eager_app, migrated_sqlite_url


@pytest.fixture
def api(tmp_path, redis_url):
    url = migrated_sqlite_url(tmp_path / "arena.db")
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


def test_check_lines_say_what_a_check_found_wrong():
    """What ``arena bots check`` prints under the verdict, from the stored check result."""
    assert check_lines(None) == [] and check_lines({"ok": True, "conformance": [{"ok": True}]}) == []
    result = {
        "ok": False,
        "url": {"ok": True, "error": None},
        "health": {"ok": False, "status": 503, "error": None},
        "signature": {"ok": False, "status": 200, "warning": "it does not check X-Arena-Signature"},
        "conformance": [
            {
                "ok": False,
                "ruleset": "jdf",
                "error": None,
                "kinds": {"play": {"asked": 3, "faults": 1}},
                "faults": [{"kind": "illegal_action", "decision": 2, "detail": "8S is not in the hand"}],
            },
            {"ok": False, "ruleset": "million_doubt", "error": None, "kinds": {"doubt": {"asked": 0}}, "faults": []},
        ],
        "warnings": ["it does not check X-Arena-Signature"],
    }
    assert check_lines(result) == [
        "health: HTTP 503",
        "signature: it does not check X-Arena-Signature",
        "jdf: illegal_action fault at 2: 8S is not in the hand",
        "million_doubt: never asked doubt",
        "warning: it does not check X-Arena-Signature",
    ]
    # an odd server's 20,000 faults: five, then how many more
    many = {
        "conformance": [
            {"ok": False, "ruleset": "jdf", "faults": [{"kind": "timeout", "decision": i} for i in range(20_000)]}
        ]
    }
    lines = check_lines(many)
    assert len(lines) == 6 and lines[-1] == "jdf: ... and 19995 more faults"


@pytest.fixture
def eager_api(tmp_path):
    """The API with checks run within the request (eager, SQLite): the CLI's side of a check;
    the check itself on a real worker is tests/worker/test_bot_checks.py."""
    app, engine = eager_app(tmp_path, rate_limits=False)
    with make_sessionmaker(engine)() as s:
        _, contestant = create_account(s, "alice")
    server = WsgiServer(app)
    yield {"ARENA_API_URL": server.url, "ARENA_TOKEN": contestant}
    server.close()
    engine.dispose()


@pytest.mark.slow
def test_bots_check_prints_the_verdict_and_fails_a_broken_bot(eager_api):
    registered = run(
        "bots", "register", "g", "--ruleset", "million_doubt", "--url", "http://127.0.0.1:9/", env=eager_api
    )
    assert registered.returncode == 0, registered.stderr
    assert f"next: run the bot, then arena bots check {registered.stdout.strip()}" in registered.stderr
    dead = int(registered.stdout)
    failed = run("bots", "check", str(dead), env=eager_api)
    assert failed.returncode == 1, failed.stderr
    lines = failed.stdout.splitlines()
    assert lines[0] == f"bot {dead} 'g': failed" and lines[1].startswith("  health: ")

    served = start_bot(SAMPLE_BOTS["greedy"](seed=1))  # checks no signature: a warning, still ready
    try:
        bot = json.loads(
            run(
                "bots", "register", "h", "--ruleset", "million_doubt", "--url", served.url, "--json", env=eager_api
            ).stdout
        )
        passed = run("bots", "check", str(bot["id"]), env=eager_api)
        assert passed.returncode == 0, passed.stderr
        assert passed.stdout.splitlines()[0] == f"bot {bot['id']} 'h': ready"
        as_json = run("bots", "check", str(bot["id"]), "--json", env=eager_api)
        assert as_json.returncode == 0 and json.loads(as_json.stdout)["status"] == "ready"
    finally:
        served.close()
    missing = run("bots", "check", "999", env=eager_api)
    assert missing.returncode == 1 and "HTTP 404" in missing.stderr and "Traceback" not in missing.stderr
